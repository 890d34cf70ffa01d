"""Host databases for the run inspector's tests: Runs journaled and projected through the Host kit
(``journal.append`` then ``project_run``), from the project's simulated Runs and the committed
journals of real a13n-harness Runs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from ag_ui.core import RunErrorEvent

from harness_agui.core.errors import AguiObservationError
from harness_agui.core.source import HarnessStreamEvent
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.testing import SourceBuilder
from harness_agui.testing.builder import simulated_run
from harness_agui.wire.codec import decode

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "a13n"
EXAMPLES = ROOT / "examples" / "data"

T = TypeVar("T")

HOSTILE = "<script>window.__pwned = 1</script> <b>bold?</b> \x1b[31mred\x1b[0m \u202egnp.exe"
"""A user message no page may run or render as markup, with an escape sequence and a bidi override."""


def journal_lines(path: Path) -> list[HarnessStreamEvent]:
    return [decode(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def hostile_run() -> list[HarnessStreamEvent]:
    b = SourceBuilder("thread-hostile", "run-hostile")
    b.user(HOSTILE).request().text(0, ["Here is ", "<img src=x onerror=alert(1)>", " and \x07 a bell."])
    return b.completed("done").items


def big_payload_run() -> list[HarnessStreamEvent]:
    b = SourceBuilder("thread-big-payload", "run-big-payload")
    b.user("Read the whole log, please.").request()
    b.tool_call(0, "read_file", "call-read-1", ['{"path": "/var/log/app.log"}'])
    b.tool_result("call-read-1", "read_file", {"text": "line of the log\n" * 2000})
    return b.request().text(0, ["The log is long."]).completed("read").items


def sample_runs() -> list[list[HarnessStreamEvent]]:
    """A tool with a retry (simulated), a subagent, an approval answered by the next Run, a cancelled
    Run and a failed Run (real a13n-harness Runs), Run text with markup and control characters, and a
    Run with one large payload."""
    return [simulated_run("thread-weather", "run-weather"),
            journal_lines(FIXTURES / "subagent.jsonl"),
            journal_lines(EXAMPLES / "approval_then_new_run.jsonl"),
            journal_lines(FIXTURES / "cancel_during_tool.jsonl"),
            journal_lines(FIXTURES / "failed_run.jsonl"),
            hostile_run(),
            big_payload_run()]


def in_thread(work: Callable[[], T]) -> T:
    """``work()`` in a thread of its own (Playwright's sync API keeps an event loop running in the
    test's thread, where ``asyncio.run`` cannot start another)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
            box["error"] = e
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def fill(path: Path, runs: Iterable[Iterable[HarnessStreamEvent]], *, synchronous: str = "OFF") -> list[str]:
    """Journal every item of ``runs`` and project every root Run into the delivery log; returns the root
    run ids in the order they were filled."""
    journal = SqliteSourceJournal(path, synchronous=synchronous)
    deliveries = SqliteDeliveryLog(path, synchronous=synchronous)
    try:
        before = set(journal.runs())
        for items in runs:
            for item in items:
                journal.append(item)
        roots = [r for r in journal.runs() if r not in before]

        async def project() -> None:
            for run_id in roots:
                try:
                    await project_run(run_id, journal, deliveries)
                except AguiObservationError as e:  # as a served Run ends when the projection refuses an item
                    deliveries.fail(run_id, RunErrorEvent(message=f"the projection refused an item: {e}",
                                                          code="harness_agui.projection_failed"),
                                    expected_cursor=deliveries.cursor(run_id))
        in_thread(lambda: asyncio.run(project()))
        return roots
    finally:
        journal.close()
        deliveries.close()


def long_run(events: int = 100_000, *, thread_id: str = "thread-long", run_id: str = "run-long"
             ) -> list[HarnessStreamEvent]:
    """A long agent Run of about ``events`` AG-UI events: model request after model request, each
    with reasoning, a streamed answer, a tool call whose args stream and its result."""
    b = SourceBuilder(thread_id, run_id)
    b.user("Summarise every report in the archive, one by one.")
    n = 0
    while len(b.items) < events - 400:
        b.request()
        b.thinking(0, [f"report {n} needs reading; "] * 60)
        b.tool_call(1, "read_report", f"call-{n}", ['{"report": ', f"{n}", "}"])
        b.tool_result(f"call-{n}", "read_report", {"report": n, "pages": 3})
        b.text(2, [f"Report {n}: ", "nothing ", "unusual. "] * 80)
        n += 1
    return b.request().text(0, ["All ", "reports ", "read."]).completed("All reports read.").items
