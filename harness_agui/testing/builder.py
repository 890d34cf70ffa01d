# Test data: the source items of one Run, written the way the Harness
# publishes them (contiguous sequences from 0, timestamps advancing by a fixed
# step), so tests, examples and the demo can describe a Run in a few lines.
# ``simulated_run`` is one realistic Run built with it.

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ..core._json import JSON
from ..core.encode import encoded
from ..core.observer import HarnessAguiObserver
from ..core.reduce import Processor
from ..core.source import (
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

__all__ = ["SourceBuilder", "simulated_run", "DEMO_START"]

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

    def thinking(self, index: int, chunks: Sequence[str], *, signature: str | None = None,
                 id: str | None = None) -> SourceBuilder:
        deltas: list[PartDelta] = [ThinkingPartDelta(content_delta=c) for c in chunks]
        if signature:
            deltas.append(ThinkingPartDelta(signature_delta=signature))
        return self.part(index, ThinkingPart(content="", id=id), deltas,
                         ThinkingPart(content="".join(chunks), id=id, signature=signature))

    def tool_call(self, index: int, name: str, call_id: str, arg_chunks: Sequence[str]) -> SourceBuilder:
        return self.part(index, ToolCallPart(tool_name=name, args=None, tool_call_id=call_id),
                         [ToolCallPartDelta(args_delta=c) for c in arg_chunks],
                         ToolCallPart(tool_name=name, args="".join(arg_chunks), tool_call_id=call_id))

    def tool_result(self, call_id: str, name: str, content: JSON, outcome: str = "success") -> SourceBuilder:
        return self.event(ToolResultEvent(tool_call_id=call_id, tool_name=name, outcome=outcome,  # type: ignore[arg-type]
                                          content=content))

    def observation(self, name: str, value: JSON) -> SourceBuilder:
        return self.event(ObservationEvent(name=name, value=value))

    def completed(self, output: JSON, **usage: Any) -> SourceBuilder:
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


def projection_json(items: Sequence[HarnessStreamEvent], processor: Processor | None = None) -> list[str]:
    """The AG-UI events of the uninterrupted projection of ``items`` (a fresh
    observer, with ``processor``, observing each in turn), as the wire JSON a
    Host publishes: what a resumed, restarted or served projection must equal."""
    observer = HarnessAguiObserver(processor)
    for item in items:
        observer.observe(item)
    return [event.json for event in encoded(observer.snapshot())]
