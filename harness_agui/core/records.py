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
#
# Building is the hot path (every observe() builds each event it returns), so
# ``Kind.build`` skips pydantic's validation when it can prove it would change
# nothing: a record's values were produced by the reducer from validated
# source values, and a kind qualifies only if its class has no validators,
# private attributes or post-init hook, no mutable defaults, and every field
# a record carries is declared as str (plain, optional, a str Literal or a
# union with str) or as JSON that is Any or a str-keyed dict. (A Literal
# field - a role, a subtype - only ever holds the constant the reducer wrote:
# a processor cannot change it.) Even then each record is checked to hold
# exact str values (a str subclass goes through validation, which would turn
# it into str) before the event's __dict__,
# fields-set, extra and private slots are written directly, exactly as
# pydantic would have written them. At import every qualifying kind builds a
# probe record both ways and keeps the fast path only if the two events are
# equal and serialize identically; tests/test_fast_path.py checks the same on
# generated and realistic records.

from __future__ import annotations

import typing
from collections.abc import Iterable, Iterator, Sequence
from enum import Enum
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
from pydantic import BaseModel
from pyrsistent import PVector, pvector

from . import _json

Record = tuple[Any, ...]

_object_new = object.__new__
# The slot setters pydantic's own constructor ends up using, called directly.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_NOT_FAST = False
KIND_OF_CODE: list[Kind] = []


class Kind:
    __slots__ = ("cls", "fields", "json_fields", "content", "content_at", "unset", "name", "code",
                 "_template", "_json_names", "_shapes", "_extra", "_required", "_fill")

    def __init__(self, cls: type[BaseEvent], fields: tuple[str, ...], *, json_fields: tuple[str, ...] = (),
                 content: str | None = None) -> None:
        self.cls = cls
        self.name = cls.model_fields["type"].default.value
        # Stands for this kind in the rows a RecordLog stores.
        self.code = len(KIND_OF_CODE)
        KIND_OF_CODE.append(self)
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
        self._json_names = tuple(name for name in fields if name in self.json_fields)
        self._fill = _filler(fields)
        # Record type-shape -> the fields-set of the event, or _NOT_FAST.
        self._shapes: dict[tuple[type, ...], frozenset[str] | bool] = {}
        self._template: dict[str, Any] | None = None
        self._extra = cls.model_config.get("extra") == "allow"
        self._required = frozenset(name for name, info in cls.model_fields.items() if info.is_required())
        if _qualifies(cls, fields, self.json_fields):
            self._template = {name: info.default for name, info in cls.model_fields.items()}

    def __repr__(self) -> str:
        return f"<Kind {self.name}>"

    def build(self, record: Record) -> BaseEvent:
        shape = self._shapes.get(tuple(map(type, record)))
        if shape is None:
            shape = self._shape(record)
        if shape is _NOT_FAST:
            return self.build_validated(record)
        d = self._template.copy()  # type: ignore[union-attr]
        d["timestamp"] = record[1]
        self._fill(d, record)
        for name in self._json_names:
            text = d[name]
            if text is not None:
                d[name] = _json.loads(text)
        event = _object_new(self.cls)
        _set_dict(event, d)
        _set_fields_set(event, set(shape))  # type: ignore[arg-type]
        _set_extra(event, {} if self._extra else None)
        _set_private(event, None)
        return event

    def build_validated(self, record: Record) -> BaseEvent:
        """The event built by pydantic's validating constructor."""
        kw: dict[str, Any] = {"timestamp": record[1]}
        json_fields = self.json_fields
        for name, value in zip(self.fields, record[2:], strict=True):
            if value is not None:
                kw[name] = _json.loads(value) if name in json_fields else value
        return self.cls(**kw)

    def _shape(self, record: Record) -> frozenset[str] | bool:
        """Whether records typed like ``record`` may skip validation, and the
        fields-set their events get; remembered per type-shape."""
        types = tuple(map(type, record))
        shape: frozenset[str] | bool = _NOT_FAST
        if (self._template is not None and len(record) == 2 + len(self.fields) and types[1] is int
                and all(t is str or (t is NoneType and name not in self._required)
                        for name, t in zip(self.fields, types[2:], strict=True))):
            carried = (name for name, v in zip(self.fields, record[2:], strict=True) if v is not None)
            shape = frozenset(["timestamp", *carried])
        if len(self._shapes) < 64:
            self._shapes[types] = shape
        return shape

    def _self_check(self) -> None:
        """Drop the fast path if a probe record builds differently both ways."""
        if self._template is None:
            return
        probe = (self, 1796029200000) + tuple(
            "{\"k\":[1,\"\u00e9\"]}" if name in self.json_fields else _PROBE_STR.get(name, "probe")
            for name in self.fields
        )
        try:
            slow = self.build_validated(probe)
        except ValueError:  # pydantic's ValidationError is a ValueError
            slow = None
        fast = self.build(probe)
        if slow is None or not _same_event(fast, slow):
            self._template = None
            self._shapes.clear()


NoneType = type(None)


def _filler(fields: tuple[str, ...]) -> Any:
    """``fill(d, record)``: write a record's values into an event dict under
    their field names; unrolled for the short records of the hot kinds."""
    if len(fields) == 1:
        (a,) = fields

        def fill(d: dict[str, Any], r: Record) -> None:
            d[a] = r[2]
    elif len(fields) == 2:
        a, b = fields

        def fill(d: dict[str, Any], r: Record) -> None:
            d[a] = r[2]
            d[b] = r[3]
    elif len(fields) == 3:
        a, b, c = fields

        def fill(d: dict[str, Any], r: Record) -> None:
            d[a] = r[2]
            d[b] = r[3]
            d[c] = r[4]
    else:
        def fill(d: dict[str, Any], r: Record) -> None:
            d.update(zip(fields, r[2:], strict=True))
    return fill


_PROBE_STR = {"role": None, "subtype": "message"}


def _qualifies(cls: type[BaseEvent], fields: tuple[str, ...], json_fields: frozenset[str]) -> bool:
    decorators = cls.__pydantic_decorators__
    if (cls.__private_attributes__ or cls.__pydantic_post_init__ is not None or decorators.validators
            or decorators.field_validators or decorators.root_validators or decorators.model_validators):
        return False
    for name, info in cls.model_fields.items():
        if info.is_required():
            if name not in fields:
                return False
        elif info.default_factory is not None or not isinstance(info.default, (NoneType, str, int, Enum)):
            return False
    for name in fields:
        annotation = cls.model_fields[name].annotation
        if not (_json_ok(annotation) if name in json_fields else _str_ok(annotation)):
            return False
    return True


def _str_ok(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if annotation is str:
        return True
    if origin is typing.Literal:
        return all(isinstance(a, str) for a in typing.get_args(annotation))
    if origin is typing.Union:
        args = typing.get_args(annotation)
        return str in args or all(a is NoneType or _str_ok(a) for a in args)
    return False


def _json_ok(annotation: Any) -> bool:
    if annotation is Any:
        return True
    args = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Union else (annotation,)
    return all(a is NoneType or (typing.get_origin(a) is dict and typing.get_args(a) == (str, Any)) for a in args)


def _same_event(a: BaseEvent, b: BaseEvent) -> bool:
    return (
        type(a) is type(b)
        and a == b
        and a.__dict__ == b.__dict__
        and list(a.__dict__) == list(b.__dict__)
        and a.model_fields_set == b.model_fields_set
        and a.__pydantic_extra__ == b.__pydantic_extra__
        and a.__pydantic_private__ == b.__pydantic_private__
        and a.model_dump_json(by_alias=True) == b.model_dump_json(by_alias=True)
        and a.model_dump(exclude_unset=True) == b.model_dump(exclude_unset=True)
        and repr(a) == repr(b)
    )


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


for _kind in KINDS.values():
    _kind._self_check()


def build(record: Record) -> BaseEvent:
    """A fresh AG-UI event for a record."""
    return record[0].build(record)


_CHUNK = 64
_BLOCK = _CHUNK * _CHUNK
Rows = tuple[Record, ...]


class RecordLog(Sequence[Record]):
    """The records of a projection: an immutable, persistent sequence.

    ``extend`` and ``append`` return a new log sharing everything with the old
    one; reading gives the records (``(kind, timestamp, ...)``) back.

    The layout keeps the garbage collector's share of observe() small and
    constant. The collector traverses every container created since its last
    young collection in full, and those run every few hundred allocations: a
    single persistent vector of all records, new after each item, made each
    of them cost as much as the whole history. Here an item creates only a
    tail tuple of fewer than CHUNK rows; full tails are sealed into a tuple of
    fewer than CHUNK chunks, and full sets of chunks into blocks of
    CHUNK * CHUNK rows held by a persistent vector, which is therefore new
    only once every CHUNK * CHUNK records. And a stored row holds the kind's
    ``code`` (an int) instead of the Kind object, so rows, chunks and blocks
    hold only atomic values and the collector stops tracking them after
    their first collection: a long Run's events do not make full
    collections longer or more frequent.
    """

    __slots__ = ("_blocks", "_chunks", "_tail")

    CHUNK = _CHUNK

    def __init__(self, records: Iterable[Record] = ()) -> None:
        self._blocks, self._chunks, self._tail = _layout(tuple([(r[0].code, *r[1:]) for r in records]))

    @classmethod
    def _of(cls, blocks: PVector[tuple[Rows, ...]], chunks: tuple[Rows, ...], tail: Rows) -> RecordLog:
        log = _object_new(cls)
        log._blocks = blocks
        log._chunks = chunks
        log._tail = tail
        return log

    def extend(self, records: Iterable[Record]) -> RecordLog:
        """A new log with ``records`` appended (this one if there are none)."""
        if type(records) is list and len(records) == 1:  # the usual case: one event per item
            r = records[0]
            tail = self._tail + ((r[0].code, *r[1:]),)
        else:
            tail = self._tail + tuple([(r[0].code, *r[1:]) for r in records])
        n = len(tail)
        if n == len(self._tail):
            return self
        if n < _CHUNK:
            return RecordLog._of(self._blocks, self._chunks, tail)
        cut = n - n % _CHUNK
        chunks = self._chunks + tuple([tail[i:i + _CHUNK] for i in range(0, cut, _CHUNK)])
        tail = tail[cut:]
        if len(chunks) < _CHUNK:
            return RecordLog._of(self._blocks, chunks, tail)
        cut = len(chunks) - len(chunks) % _CHUNK
        blocks = self._blocks.extend([chunks[i:i + _CHUNK] for i in range(0, cut, _CHUNK)])
        return RecordLog._of(blocks, chunks[cut:], tail)

    def append(self, record: Record) -> RecordLog:
        """A new log with ``record`` appended."""
        return self.extend((record,))

    def __len__(self) -> int:
        return len(self._blocks) * _BLOCK + len(self._chunks) * _CHUNK + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> RecordLog: ...

    def __getitem__(self, index: int | slice) -> Record | RecordLog:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            picked = self._rows(start, stop) if step == 1 else (self._row(i) for i in range(start, stop, step))
            return RecordLog._of(*_layout(tuple(picked)))
        n = len(self)
        i = index.__index__()
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("RecordLog index out of range")
        row = self._row(i)
        return (KIND_OF_CODE[row[0]], *row[1:])

    def _piece(self, k: int) -> Rows:
        """Chunk number ``k`` (the tail after the last full chunk)."""
        sealed = len(self._blocks) * _CHUNK
        if k < sealed:
            return self._blocks[k // _CHUNK][k % _CHUNK]
        k -= sealed
        return self._chunks[k] if k < len(self._chunks) else self._tail

    def _row(self, i: int) -> Record:
        k, at = divmod(i, _CHUNK)
        return self._piece(k)[at]

    def _rows(self, start: int = 0, stop: int | None = None) -> Iterator[Record]:
        """The stored rows (kind code first) from ``start`` to ``stop``."""
        if start == 0 and stop is None:
            for block in self._blocks:
                for chunk in block:
                    yield from chunk
            for chunk in self._chunks:
                yield from chunk
            yield from self._tail
            return
        stop = len(self) if stop is None else stop
        i = start
        while i < stop:
            k, at = divmod(i, _CHUNK)
            piece = self._piece(k)[at:at + min(_CHUNK - at, stop - i)]
            if not piece:
                break
            yield from piece
            i += len(piece)

    def __iter__(self) -> Iterator[Record]:
        kinds = KIND_OF_CODE
        for row in self._rows():
            yield (kinds[row[0]], *row[1:])

    def __eq__(self, other: object) -> bool:
        # The layout is canonical (full blocks, full chunks, a short tail),
        # so equal sequences have equal parts.
        if isinstance(other, RecordLog):
            return self._tail == other._tail and self._chunks == other._chunks and self._blocks == other._blocks
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._blocks, self._chunks, self._tail))

    def __reduce__(self) -> tuple[Any, ...]:
        return RecordLog, (tuple(self),)

    def __repr__(self) -> str:
        return f"RecordLog({len(self)} records)"


def _layout(rows: Rows) -> tuple[PVector[tuple[Rows, ...]], tuple[Rows, ...], Rows]:
    """The (blocks, chunks, tail) of a RecordLog holding ``rows``."""
    blocks_end = len(rows) - len(rows) % _BLOCK
    chunks_end = len(rows) - len(rows) % _CHUNK
    blocks = pvector(
        tuple(rows[j:j + _CHUNK] for j in range(i, i + _BLOCK, _CHUNK)) for i in range(0, blocks_end, _BLOCK)
    )
    chunks = tuple(rows[j:j + _CHUNK] for j in range(blocks_end, chunks_end, _CHUNK))
    return blocks, chunks, rows[chunks_end:]


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
        records = self._records
        if type(records) is RecordLog:
            # Build straight from the stored rows (Kind.build reads only a
            # row's values), without making each record first.
            kinds = KIND_OF_CODE
            for row in records._rows():
                yield kinds[row[0]].build(row)
            return
        for record in records:
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
