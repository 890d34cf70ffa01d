"""Write the example source journals in this folder.

Each journal is one Harness Run (or two) in the wire format, one source item
per line, built with ``harness_agui.demo.SourceBuilder`` and written with
``harness_agui.wire.codec.encode``. Run ``python examples/data/make_data.py`` to
regenerate them; the test suite checks that the files match this script.

- chat_with_reasoning.jsonl: a question, signed reasoning, a streamed answer.
- tool_calls_with_failure.jsonl: three tool calls, one failing, a final answer.
- suspended_for_approval.jsonl: a tool call that needs approval; the Run waits.
- approval_then_new_run.jsonl: two Runs of one thread: the suspended Run, then
  the Run that continues after the approval (``replay`` needs ``--run``).
- broken_journal.jsonl: a Run damaged on purpose for ``harness-agui check``.
- delegating_run.jsonl: a Run that delegates to a subagent, which delegates to another: one stream of
  three Runs (``harness_agui.testing.simulated_delegation``; the example of docs/host-kit.md journals it).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from harness_agui.core.source import HarnessEvent, HarnessStreamEvent, PartStartEvent, ToolCallPart
from harness_agui.testing import SourceBuilder, simulated_delegation
from harness_agui.wire.codec import encode

HERE = Path(__file__).resolve().parent
PARIS = timezone(timedelta(hours=1))


def words(text: str) -> list[str]:
    """Split text into word-sized chunks the way a model streams tokens."""
    chunks, word = [], ""
    for ch in text:
        word += ch
        if ch == " ":
            chunks.append(word)
            word = ""
    return chunks + ([word] if word else [])


def chat_with_reasoning() -> list[HarnessStreamEvent]:
    b = SourceBuilder("thread-chat", "run-chat-1", start=datetime(2026, 11, 30, 10, 15, 2, 250000, tzinfo=PARIS),
                      step=timedelta(milliseconds=35))
    b.user("Quelle est la différence entre un café crème et un cappuccino ? Réponds en une phrase.")
    b.request()
    b.thinking(0, words("The user asks in French about the difference between a café crème and a cappuccino. "
                        "Key points: a café crème is espresso topped up with hot milk, little foam; a cappuccino "
                        "is a smaller drink with equal parts espresso, steamed milk and thick foam. Answer in "
                        "one French sentence."), signature="RXJzdGUgU2lnbmF0dXI=")
    b.text(1, words("Le café crème est un espresso allongé de lait chaud avec peu de mousse, tandis que le "
                    "cappuccino, plus petit, associe à parts égales espresso, lait chaud et une épaisse "
                    "mousse de lait."))
    b.completed("Le café crème est un espresso allongé de lait chaud avec peu de mousse, tandis que le "
                "cappuccino, plus petit, associe à parts égales espresso, lait chaud et une épaisse mousse de lait.",
                input_tokens=58, output_tokens=61, reasoning_tokens=74)
    return b.items


def tool_calls_with_failure() -> list[HarnessStreamEvent]:
    b = SourceBuilder("thread-trip", "run-trip-1", start=datetime(2026, 11, 30, 8, 0, tzinfo=UTC))
    b.user("I land in Tokyo on Friday evening. What's the weather, how much is 200 EUR in yen, "
           "and is the Narita Express running?")
    b.request()
    b.text(0, words("Let me check the weather, the exchange rate and the train status."))
    b.tool_call(1, "get_weather", "call-weather-1", ['{"city": "Tokyo", ', '"date": "2026-12-04"}'])
    b.part(2, ToolCallPart(tool_name="convert_currency", args={"amount": 200, "from": "EUR", "to": "JPY"},
                           tool_call_id="call-fx-1"), [],
           ToolCallPart(tool_name="convert_currency", args={"amount": 200, "from": "EUR", "to": "JPY"},
                        tool_call_id="call-fx-1"))
    b.tool_call(3, "train_status", "call-train-1", ['{"line": ', '"Narita Express", ', '"direction": "Tokyo"}'])
    b.tool_result("call-weather-1", "get_weather",
                  {"city": "Tokyo", "forecast": "clear", "low_c": 6, "high_c": 13})
    b.tool_result("call-fx-1", "convert_currency", {"amount": 33412, "currency": "JPY", "rate": 167.06})
    b.tool_result("call-train-1", "train_status",
                  {"error": "upstream_unavailable", "message": "JR East status API timed out after 10 s"},
                  outcome="failed")
    b.observation("tool_retry_budget", {"remaining": 1})
    b.request()
    b.text(0, words("Friday evening in Tokyo looks clear, between 6 and 13 °C. 200 EUR is about 33,412 JPY "
                    "(rate 167.06). I could not reach the JR East status service, so please check the "
                    "Narita Express on arrival; the Keisei Skyliner is the usual alternative."))
    b.completed({"weather": "clear, 6-13 °C", "jpy": 33412, "train_status": None},
                input_tokens=1240, output_tokens=188, cache_read_tokens=512)
    return b.items


def _approval_request(b: SourceBuilder) -> SourceBuilder:
    b.user("Clean up the build cache: delete everything under /srv/ci/cache older than 30 days.")
    b.request()
    b.thinking(0, words("Deleting files is destructive; the delete tool requires the user's approval."))
    b.text(1, words("I found 1,284 cache entries older than 30 days (41 GB). Deleting them needs your approval."))
    b.tool_call(2, "delete_files", "call-delete-1",
                ['{"root": "/srv/ci/cache", ', '"older_than_days": 30, ', '"dry_run": false}'])
    return b.suspended(("call-delete-1", "delete_files",
                        {"root": "/srv/ci/cache", "older_than_days": 30, "dry_run": False}))


def suspended_for_approval() -> list[HarnessStreamEvent]:
    b = SourceBuilder("thread-ops", "run-ops-1", start=datetime(2026, 11, 30, 14, 30, tzinfo=UTC))
    return _approval_request(b).items


def approval_then_new_run() -> list[HarnessStreamEvent]:
    first = _approval_request(SourceBuilder("thread-ops-2", "run-ops-2a",
                                            start=datetime(2026, 11, 30, 15, 0, tzinfo=UTC)))
    second = SourceBuilder("thread-ops-2", "run-ops-2b", start=datetime(2026, 11, 30, 15, 4, 12, tzinfo=UTC))
    second.user("Approved.")
    second.tool_result("call-delete-1", "delete_files", {"deleted": 1284, "freed_bytes": 44023414784})
    second.request()
    second.text(0, words("Done: deleted 1,284 cache entries and freed 41 GB under /srv/ci/cache."))
    second.completed("deleted 1284 entries", input_tokens=402, output_tokens=37)
    return first.items + second.items


def broken_journal() -> list[str]:
    """Lines of a Run with five kinds of damage (see the comments)."""
    b = SourceBuilder("thread-broken", "run-broken-1", start=datetime(2026, 11, 30, 16, 0, tzinfo=UTC))
    b.user("Summarise the incident report.")
    b.request()
    b.text(0, words("The outage started at 02:14 UTC when a config push"))
    b.tool_call(1, "fetch_report", "call-report-1", ['{"id": "INC-4821"}'])
    b.tool_result("call-report-1", "fetch_report", {"title": "Config push took down eu-west", "minutes": 47})
    b.request()
    b.text(0, words("The outage lasted 47 minutes and was caused by a bad config push to eu-west."))
    b.completed("47-minute outage caused by a config push", input_tokens=900, output_tokens=40)
    items = b.items
    lines = [encode(item) for item in items]
    call_start = next(item.sequence for item in items
                      if isinstance(item, HarnessEvent) and isinstance(item.event, PartStartEvent)
                      and isinstance(item.event.part, ToolCallPart))
    out: list[str] = []
    for seq, line in enumerate(lines):
        if seq == call_start:  # a gap: the tool call's start is lost, so its end cannot be projected
            continue
        if seq == 5:  # out of order: 5 and 6 are swapped
            continue
        out.append(line)
        if seq == 6:
            out.append(lines[5])
        if seq == 3:  # a duplicate: the same item delivered twice
            out.append(line)
        if seq == 7:  # an undecodable line: a write torn in the middle, then written again whole
            out.append(lines[8][: len(lines[8]) // 2])
    # an item after the terminal result
    late = SourceBuilder("thread-broken", "run-broken-1", start=items[-1].occurred_at + timedelta(seconds=2),
                         first_sequence=items[-1].sequence + 1)
    late.observation("late_metric", {"latency_ms": 812})
    out.append(encode(late.items[0]))
    return out


def journals() -> dict[str, str]:
    """File name -> file text of every example journal."""
    runs = {
        "chat_with_reasoning.jsonl": chat_with_reasoning(),
        "tool_calls_with_failure.jsonl": tool_calls_with_failure(),
        "suspended_for_approval.jsonl": suspended_for_approval(),
        "approval_then_new_run.jsonl": approval_then_new_run(),
        "delegating_run.jsonl": simulated_delegation("run-trip"),
    }
    files = {name: "".join(encode(item) + "\n" for item in items) for name, items in runs.items()}
    files["broken_journal.jsonl"] = "".join(line + "\n" for line in broken_journal())
    return files


def main() -> int:
    for name, text in journals().items():
        (HERE / name).write_text(text, encoding="utf-8")
        print(f"wrote {name}: {text.count(chr(10))} lines", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
