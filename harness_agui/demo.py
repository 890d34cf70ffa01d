# Built-in data and the main job, end to end.
#
# ``SourceBuilder`` writes a Run's source items the way the Harness would
# publish them (contiguous sequences, timestamps advancing by a fixed step),
# so tests, examples and the demo can describe a Run in a few lines.
# ``simulated_run`` is one realistic Run built with it, and ``run_demo``
# performs the job this library exists for: observe live, lose the process,
# resume from the retained prefix, continue, and check the result against an
# uninterrupted projection.

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from ._json import JSON
from .observer import HarnessAguiObserver
from .source import (
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    Failure,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    ObservationEvent,
    Part,
    PartDelta,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    Payload,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
    Usage,
)

__all__ = ["SourceBuilder", "simulated_run", "run_demo"]

DEMO_START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


class SourceBuilder:
    """Builds the items of one Run with contiguous sequences.

    Each method appends items to ``items`` and returns the builder, so a Run
    reads as a chain. Timestamps start at ``start`` and advance by ``step``.
    """

    def __init__(self, thread_id: str = "thread-1", run_id: str = "run-1", *, start: datetime = DEMO_START,
                 step: timedelta = timedelta(milliseconds=40), first_sequence: int = 0) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.items: list[HarnessStreamEvent] = []
        self._next = first_sequence
        self._at = start
        self._step = step
        self._request = -1

    def _stamp(self) -> tuple[int, datetime]:
        seq, at = self._next, self._at
        self._next += 1
        self._at += self._step
        return seq, at

    def event(self, payload: Payload) -> SourceBuilder:
        seq, at = self._stamp()
        self.items.append(HarnessEvent(thread_id=self.thread_id, run_id=self.run_id, sequence=seq, occurred_at=at,
                                       event=payload))
        return self

    def result(self, result: RunResult) -> SourceBuilder:
        seq, at = self._stamp()
        self.items.append(HarnessRunResultEvent(thread_id=self.thread_id, run_id=self.run_id, sequence=seq,
                                                occurred_at=at, result=result))
        return self

    # -- payload shorthands ----------------------------------------------------

    def request(self) -> SourceBuilder:
        """A lifecycle notice that the next model request starts."""
        self._request += 1
        return self.event(ExtensionEvent(kind="lifecycle", schema_version="1",
                                         payload={"type": "model_request_started", "request_index": self._request}))

    def user(self, text: str, *, input_id: str | None = None) -> SourceBuilder:
        return self.event(InputEvent(input_id=input_id or f"input-{self._next}", source="user", content=text))

    def part(self, index: int, start: Part, deltas: Sequence[PartDelta], end: Part | None) -> SourceBuilder:
        self.event(PartStartEvent(index=index, part=start))
        for d in deltas:
            self.event(PartDeltaEvent(index=index, delta=d))
        if end is not None:
            self.event(PartEndEvent(index=index, part=end))
        return self

    def text(self, index: int, chunks: Sequence[str], *, id: str | None = None) -> SourceBuilder:
        return self.part(index, TextPart(content="", id=id), [TextPartDelta(content_delta=c) for c in chunks],
                         TextPart(content="".join(chunks), id=id))

    def thinking(self, index: int, chunks: Sequence[str], *, signature: str | None = None) -> SourceBuilder:
        deltas: list[PartDelta] = [ThinkingPartDelta(content_delta=c) for c in chunks]
        if signature:
            deltas.append(ThinkingPartDelta(signature_delta=signature))
        return self.part(index, ThinkingPart(content=""), deltas,
                         ThinkingPart(content="".join(chunks), signature=signature))

    def tool_call(self, index: int, name: str, call_id: str, arg_chunks: Sequence[str]) -> SourceBuilder:
        return self.part(index, ToolCallPart(tool_name=name, args=None, tool_call_id=call_id),
                         [ToolCallPartDelta(args_delta=c) for c in arg_chunks],
                         ToolCallPart(tool_name=name, args="".join(arg_chunks), tool_call_id=call_id))

    def tool_result(self, call_id: str, name: str, content: JSON, outcome: str = "success") -> SourceBuilder:
        return self.event(ToolResultEvent(tool_call_id=call_id, tool_name=name, outcome=outcome,  # type: ignore[arg-type]
                                          content=content))

    def observation(self, name: str, value: JSON) -> SourceBuilder:
        return self.event(ObservationEvent(name=name, value=value))

    def completed(self, output: JSON, **usage: int) -> SourceBuilder:
        return self.result(RunResult(status="completed", output=output, usage=Usage(**usage) if usage else None))

    def failed(self, code: str, message: str) -> SourceBuilder:
        return self.result(RunResult(status="failed", failure=Failure(code=code, message=message)))

    def cancelled(self) -> SourceBuilder:
        return self.result(RunResult(status="cancelled"))

    def suspended(self, *approvals: tuple[str, str, Any]) -> SourceBuilder:
        calls = tuple(DeferredToolCall(tool_call_id=i, tool_name=n, args=a) for i, n, a in approvals)
        return self.result(RunResult(status="suspended", deferred=Deferred(approvals=calls)))


def _words(text: str) -> list[str]:
    """Split text into token-sized chunks, as a model streams it."""
    out, word = [], ""
    for ch in text:
        word += ch
        if ch == " ":
            out.append(word)
            word = ""
    return out + ([word] if word else [])


def simulated_run(thread_id: str = "thread-demo", run_id: str = "run-demo") -> list[HarnessStreamEvent]:
    """A realistic Run: a question, reasoning, two tool calls (one fails and
    is retried), a streamed answer and a completed result."""
    b = SourceBuilder(thread_id, run_id)
    b.user("Will I need an umbrella in Lyon tomorrow? Also convert 12 C to Fahrenheit.")
    b.request()
    b.thinking(0, _words("The user wants a forecast for Lyon and a unit conversion. "
                         "I will call the weather tool and the converter."), signature="c2lnbmF0dXJlLTE=")
    b.text(1, _words("Let me check the forecast and do the conversion."))
    b.tool_call(2, "get_forecast", "call-forecast-1", ['{"city": ', '"Lyon", ', '"day": "tomorrow"}'])
    b.tool_call(3, "convert_temperature", "call-convert-1", ['{"celsius": ', "12}"])
    b.tool_result("call-forecast-1", "get_forecast", {"error": "upstream timeout"}, outcome="failed")
    b.tool_result("call-convert-1", "convert_temperature", {"fahrenheit": 53.6})
    b.request()
    b.tool_call(0, "get_forecast", "call-forecast-2", ['{"city": "Lyon", "day": "tomorrow"}'])
    b.tool_result("call-forecast-2", "get_forecast", {"rain_probability": 0.8, "summary": "showers"})
    b.observation("token_budget", {"remaining": 18000})
    b.request()
    b.text(0, _words("Yes: showers are likely in Lyon tomorrow (80% chance of rain), so take an umbrella. "
                     "12 °C is 53.6 °F."))
    b.completed("Take an umbrella; 12 °C is 53.6 °F.", input_tokens=812, output_tokens=96, reasoning_tokens=31)
    return b.items


async def _aiter(items: Sequence[HarnessStreamEvent]):  # type: ignore[no-untyped-def]
    for item in items:
        yield item


def run_demo(out: TextIO = sys.stdout) -> int:
    """Observe the simulated Run live, interrupt it, resume a fresh observer
    from the retained prefix, continue with the live tail, and compare with
    an uninterrupted projection. Returns 0 when they agree, 1 otherwise."""
    items = simulated_run()
    cut = len(items) * 3 // 5

    uninterrupted = HarnessAguiObserver()
    for item in items:
        uninterrupted.observe(item)

    first = HarnessAguiObserver()
    published = [e for item in items[:cut] for e in first.observe(item)]
    print(f"live: observed {cut} of {len(items)} source items, published {len(published)} AG-UI events", file=out)
    print("process restarts: the observer is gone, the source journal is kept", file=out)

    second = HarnessAguiObserver()
    asyncio.run(second.resume(_aiter(items[:cut])))
    print(f"resume: rebuilt {second.event_count} events from {cut} retained items, published nothing", file=out)
    for item in items[cut:]:
        published.extend(second.observe(item))
    print(f"live tail: observed {len(items) - cut} more items, {len(published)} events published in all", file=out)

    same_snapshot = second.snapshot() == uninterrupted.snapshot()
    same_stream = uninterrupted.snapshot() == tuple(published)
    print("", file=out)
    for line in _summarise(second.snapshot()):
        print("  " + line, file=out)
    print("", file=out)
    print(f"snapshot equals the uninterrupted projection: {same_snapshot}", file=out)
    print(f"published stream has no gap and no duplicate:  {same_stream}", file=out)
    valid = _validate(published, out)
    return 0 if same_snapshot and same_stream and valid else 1


def _validate(events: Sequence[Any], out: TextIO) -> bool:
    """Check the stream with the public AG-UI validator when it is installed
    (it is a development dependency, not a runtime one)."""
    try:
        from ag_ui_validate.pytest_plugin import validate_agui
    except ImportError:
        print("AG-UI validator (ag-ui-validate) not installed: conformance not checked", file=out)
        return True
    summary = validate_agui([e.model_dump(mode="json", by_alias=True) for e in events]).summary
    print(f"AG-UI validator: {summary.errors} errors, {summary.warnings} warnings", file=out)
    return summary.errors == 0 and summary.warnings == 0


def _summarise(events: Sequence[Any]) -> list[str]:
    """One line per event, with runs of streamed deltas of one message joined."""
    lines: list[str] = []
    run_key, run_text, run_count = None, "", 0

    def flush() -> None:
        if run_key is not None:
            text = run_text if len(run_text) <= 60 else run_text[:57] + "..."
            lines.append(f"{run_key[0]:<26} x{run_count:<3} {text!r}")

    for event in events:
        kind = event.type.value
        delta = getattr(event, "delta", None)
        key = (kind, getattr(event, "message_id", None) or getattr(event, "tool_call_id", None))
        if isinstance(delta, str):
            if key == run_key:
                run_text, run_count = run_text + delta, run_count + 1
                continue
            flush()
            run_key, run_text, run_count = key, delta, 1
            continue
        flush()
        run_key = None
        lines.append(_describe(event))
    flush()
    return lines


def _describe(event: Any) -> str:
    kind = event.type.value
    for name in ("tool_call_name", "name", "content", "message"):
        value = getattr(event, name, None)
        if isinstance(value, str):
            text = value if len(value) <= 60 else value[:57] + "..."
            return f"{kind:<26} {text!r}"
    return kind
