# Emitted AG-UI events are kept in the state as *records*: plain tuples
# ``(kind, timestamp, value, ...)`` whose values are str, int, None, or JSON
# text. Records are immutable and share nothing mutable with anyone, so the
# state can hold thousands of them cheaply and a snapshot can hand them out
# without copying. An AG-UI (pydantic) event is built from a record only when
# somebody asks for it, and every time afresh: that is what makes returned
# events detached from the projection.
#
# ``Kind`` describes one AG-UI event class: the fields a record carries in
# order, which of them hold JSON text (parsed when the event is built), and
# the one *content* field a processor may rewrite (SPEC section 6).

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEncryptedValueEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from . import _json

Record = tuple[Any, ...]


class Kind:
    __slots__ = ("cls", "fields", "json_fields", "content", "content_at", "unset", "name")

    def __init__(self, cls: type[BaseEvent], fields: tuple[str, ...], *, json_fields: tuple[str, ...] = (),
                 content: str | None = None) -> None:
        self.cls = cls
        self.name = cls.model_fields["type"].default.value
        self.fields = fields
        self.json_fields = frozenset(json_fields)
        self.content = content
        # Position of the content field in a record (2 is the first value).
        self.content_at = None if content is None else 2 + fields.index(content)
        # Fields a record does not carry: the event must keep their defaults.
        self.unset = tuple(
            (name, info.default)
            for name, info in cls.model_fields.items()
            if name not in fields and name not in ("type", "timestamp")
        )

    def __repr__(self) -> str:
        return f"<Kind {self.name}>"

    def build(self, record: Record) -> BaseEvent:
        kw: dict[str, Any] = {"timestamp": record[1]}
        json_fields = self.json_fields
        for name, value in zip(self.fields, record[2:], strict=True):
            if value is not None:
                kw[name] = _json.loads(value) if name in json_fields else value
        return self.cls(**kw)


RUN_STARTED = Kind(RunStartedEvent, ("thread_id", "run_id"))
RUN_FINISHED = Kind(RunFinishedEvent, ("thread_id", "run_id", "result", "outcome", "usage"),
                    json_fields=("result", "outcome", "usage"), content="result")
RUN_ERROR = Kind(RunErrorEvent, ("message", "code", "usage"), json_fields=("usage",), content="message")
TEXT_START = Kind(TextMessageStartEvent, ("message_id", "role"))
TEXT_CONTENT = Kind(TextMessageContentEvent, ("message_id", "delta"), content="delta")
TEXT_END = Kind(TextMessageEndEvent, ("message_id",))
REASONING_START = Kind(ReasoningMessageStartEvent, ("message_id",))
REASONING_CONTENT = Kind(ReasoningMessageContentEvent, ("message_id", "delta"), content="delta")
REASONING_END = Kind(ReasoningMessageEndEvent, ("message_id",))
ENCRYPTED_VALUE = Kind(ReasoningEncryptedValueEvent, ("subtype", "entity_id", "encrypted_value"),
                       content="encrypted_value")
TOOL_START = Kind(ToolCallStartEvent, ("tool_call_id", "tool_call_name", "parent_message_id"))
TOOL_ARGS = Kind(ToolCallArgsEvent, ("tool_call_id", "delta"), content="delta")
TOOL_END = Kind(ToolCallEndEvent, ("tool_call_id",))
TOOL_RESULT = Kind(ToolCallResultEvent, ("message_id", "tool_call_id", "content", "role", "metadata"),
                   json_fields=("metadata",), content="content")
CUSTOM = Kind(CustomEvent, ("name", "value"), json_fields=("value",))

KINDS: dict[type[BaseEvent], Kind] = {
    k.cls: k
    for k in (
        RUN_STARTED, RUN_FINISHED, RUN_ERROR, TEXT_START, TEXT_CONTENT, TEXT_END, REASONING_START,
        REASONING_CONTENT, REASONING_END, ENCRYPTED_VALUE, TOOL_START, TOOL_ARGS, TOOL_END, TOOL_RESULT, CUSTOM,
    )
}


def build(record: Record) -> BaseEvent:
    """A fresh AG-UI event for a record."""
    return record[0].build(record)


class EventLog(Sequence[BaseEvent]):
    """An immutable sequence of AG-UI events, built lazily from records.

    Indexing builds a fresh event each time, so mutating what you read never
    changes the log. Slicing gives another EventLog. An EventLog equals any
    sequence (tuple, list, EventLog) holding equal events in the same order.
    """

    __slots__ = ("_records",)

    def __init__(self, records: Sequence[Record]) -> None:
        self._records = records

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, index: int) -> BaseEvent: ...

    @overload
    def __getitem__(self, index: slice) -> EventLog: ...

    def __getitem__(self, index: int | slice) -> BaseEvent | EventLog:
        if isinstance(index, slice):
            return EventLog(self._records[index])
        record = self._records[index]
        return record[0].build(record)

    def __iter__(self) -> Iterator[BaseEvent]:
        for record in self._records:
            yield record[0].build(record)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventLog):
            return self._records == other._records or list(self) == list(other)
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        n = len(self)
        if n <= 6:
            inner = ", ".join(type(e).__name__ for e in self)
        else:
            head = ", ".join(type(e).__name__ for e in self[:3])
            tail = ", ".join(type(e).__name__ for e in self[-2:])
            inner = f"{head}, ... {n - 5} more ..., {tail}"
        return f"EventLog({n} events: {inner})"
