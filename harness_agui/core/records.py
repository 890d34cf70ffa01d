# Emitted AG-UI events are kept in the state as *records*, and this module is
# the only one that knows what a record looks like. Everything else makes
# records with the named constructors below (``text_content(ts, message_id,
# delta)``, ...) and reads them with ``kind_of``, ``event_type``,
# ``field_of``, ``content_of``, ``with_content`` and ``build``; no other
# module indexes one.
#
# A record is a plain tuple ``(type, timestamp, *values)``: the AG-UI event
# type name (``"TEXT_MESSAGE_CONTENT"``), the timestamp in epoch
# milliseconds, then the values of the kind's ``fields`` in that order, each
# a str, None, or JSON text.
#
# A subagent's event (an event of a child Run forwarded in the root Run's
# stream, see ``subagents``) is the same event with ``subagent_run_id`` set.
# Its record is tagged ``"<type>@subagent"`` and carries the subagent run id
# as one more value at the end: ``attributed(record, run_id)`` makes it, and
# ``subagent_of(record)`` reads it. The root Run's records are untouched by
# this (same tuples, same bytes, same speed): only the kinds that have the
# field in ``ag_ui.core`` (text, reasoning, tool calls, CUSTOM) have such an
# attributed variant, and the SUBAGENT_* kinds carry the field as an
# ordinary one. Why a tuple and not a small frozen class: a Run
# keeps every record it ever emitted, about one per source item, and a tuple
# holding only str, int and None is one object that the garbage collector
# stops tracking after its first collection (see RecordLog), while an
# instance of a class is tracked for as long as it lives and needs a second
# object for its values (bench/records.py, 10^5 events: 72 bytes a record
# against 112 to 120, and a full collection three times as long). The record
# the reducer makes is the very row the RecordLog stores: there is one
# encoding, and nothing is converted on the way in or out.
#
# Records share nothing mutable with anyone, so the state can hold thousands
# of them and a snapshot can hand them out without copying. An AG-UI
# (pydantic) event is built from a record only when somebody asks for it,
# every time afresh (JSON text is parsed again each time): that is what
# makes returned events detached from the projection.
#
# Building is validated construction through pydantic's public API: the
# event class's schema validator (``TypeAdapter(cls).validator``, the very
# validator ``cls(**fields)`` runs) applied to a dict of the record's fields.
# Fields a record leaves None are left out, so they keep their defaults and
# stay out of ``model_fields_set``, as with keyword construction. It is the
# fastest public path (bench/records.py): ``cls(**fields)`` adds its Python
# ``__init__`` to the same validation, and ``cls.model_construct()``, though
# it skips validation, loops over the class's fields and aliases in Python at
# several times the cost, and would leave a RUN_FINISHED outcome as a plain
# dict. The private-slot writer this replaced built an event about 0.15 us
# sooner (the price of the field dict the validator takes): reading a whole
# snapshot costs about 4% more than it did, and no guard on pydantic's
# internals is needed any more. ``build_complete`` gives the same values with
# ``type`` and the defaults that are not None in the dict as well, so they
# count as set, as when an event is validated from its own dump (what
# a13n-stream-protocol publishes).

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Iterator, Sequence
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
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pydantic import TypeAdapter
from pyrsistent import PVector, pvector

from . import _json

__all__ = [
    "Record", "Kind", "KINDS", "kind_named", "kind_of", "event_type", "field_of", "content_of", "with_content",
    "with_field", "build", "build_complete", "check", "check_rows", "RecordLog", "EventLog", "attributed",
    "subagent_of",
    "SUBAGENT_TAG", "FULL_KINDS",
]

Record = tuple[Any, ...]
"""An emitted event as the state keeps it; read it only through this module."""


class Kind:
    """One AG-UI event class as records carry it: the fields a record holds
    (in order), which of them hold JSON text, and the one content field a
    processor may rewrite (the processor contract, ``core.processor``). Kinds pickle by name."""

    __slots__ = ("cls", "name", "tag", "fields", "json_fields", "content", "unset", "attributed",
                 "_at", "_keys", "_pair", "_optional", "_json_names", "_written", "_omitted", "_validate",
                 "_required", "_choices", "_json", "_plain", "_simple")

    def __init__(self, cls: type[BaseEvent], fields: tuple[str, ...], *, json_fields: tuple[str, ...] = (),
                 content: str | None = None, tag: str | None = None) -> None:
        self.cls = cls
        self.name: str = cls.model_fields["type"].default.value
        # What a record of this kind holds first: the type name, or for the
        # attributed variant of a kind, "<type>@subagent".
        self.tag: str = tag or self.name
        # The variant of this kind for a subagent's record (see attributed()).
        self.attributed: Kind | None = None
        self.fields = fields
        self.json_fields = frozenset(json_fields)
        self.content = content
        # Fields a record does not carry: the event keeps their defaults.
        self.unset = tuple(
            (name, info.default)
            for name, info in cls.model_fields.items()
            if name not in fields and name not in ("type", "timestamp")
        )
        self._at = {"timestamp": 1, **{name: 2 + i for i, name in enumerate(fields)}}
        self._keys = ("timestamp", *fields)
        self._optional = tuple(name for name in fields if not cls.model_fields[name].is_required())
        self._json_names = tuple(name for name in fields if name in self.json_fields)
        # Building is most of what reading a snapshot costs, so the field dict
        # of a short record is written out rather than zipped; the streaming
        # kinds (an id and a delta, both required text, most of every Run)
        # skip the loops over optional and JSON fields as well.
        self._pair = fields if len(fields) == 2 and not self._optional and not self._json_names else None
        # What an event's own dump writes besides the record's fields, for
        # build_complete(): its type and the defaults that are not None.
        self._written = {"type": cls.model_fields["type"].default,
                         **{name: default for name, default in self.unset if default is not None}}
        # ... and what it leaves out although the record holds it: JSON null
        # in an optional field whose default is None.
        self._omitted = tuple(name for name in self._json_names
                              if name in self._optional and cls.model_fields[name].default is None)
        self._validate = TypeAdapter(cls).validator.validate_python
        # What ``check`` needs, worked out once from the event class: the positions of the values the event
        # requires; of those that must be one of a few strings (a Literal: a role, a subtype); of JSON text
        # that may hold any value, or an object; and whether those checks say all (every other value is text
        # the event takes as it is), so that a record that passes them surely builds. A record of any other
        # kind (an outcome, a usage, content parts) is checked by building it. ``_simple``: every value is
        # required text, nothing else to check (the streaming kinds, most of every log).
        self._required = tuple(2 + i for i, name in enumerate(fields) if cls.model_fields[name].is_required())
        checks = {2 + i: _value_check(cls.model_fields[name], name in self.json_fields)
                  for i, name in enumerate(fields)}
        self._choices = tuple((at, c) for at, c in checks.items() if type(c) is frozenset)
        self._json = tuple((at, c) for at, c in checks.items() if c in (_ANY_JSON, _OBJECT_JSON))
        self._plain = None not in checks.values()
        self._simple = self._plain and len(self._required) == len(fields) and not self._choices and not self._json

    def __repr__(self) -> str:
        return f"<Kind {self.tag}>"

    def check(self, record: Record) -> None:
        """ValueError unless ``record`` (of this kind's tag and arity, its
        values str or None) builds an event: its required values are there,
        its JSON text parses and the event's own validation takes it."""
        for at in self._required:
            if record[at] is None:
                raise ValueError(f"a {self.tag} record without its {self._keys[at - 1]}")
        for at, allowed in self._choices:
            if record[at] is not None and record[at] not in allowed:
                raise ValueError(f"a {self.tag} record whose {self._keys[at - 1]} is not one of {sorted(allowed)}")
        try:
            for at, what in self._json:
                if record[at] is not None:
                    value = _json.loads(record[at])
                    if what is _OBJECT_JSON and type(value) is not dict:
                        raise ValueError(f"{self._keys[at - 1]} is not a JSON object")
            if not self._plain:
                self.build(record)
        except RecursionError:
            raise ValueError(f"a {self.tag} record whose JSON nests too deep") from None
        except ValueError as e:
            raise ValueError(f"a {self.tag} record that does not build its event ({e})") from None

    def __reduce__(self) -> tuple[Any, ...]:
        return _kind_tagged, (self.tag,)

    def record(self, timestamp: int, *values: Any) -> Record:
        """A record of this kind; ``values`` in the order of ``fields``.
        Raises ValueError for the wrong number of values."""
        if len(values) != len(self.fields):
            raise ValueError(f"a {self.tag} record holds {len(self.fields)} values, not {len(values)}")
        return (self.tag, timestamp, *values)

    def build(self, record: Record) -> BaseEvent:
        """A fresh, validated AG-UI event for a record of this kind. Raises
        pydantic's ValidationError (a ValueError) if a value does not fit."""
        pair = self._pair
        if pair is not None:
            return self._validate({"timestamp": record[1], pair[0]: record[2], pair[1]: record[3]})
        return self._validate(self._values(record))

    def build_complete(self, record: Record) -> BaseEvent:
        """The event ``build`` gives, as validating that event's own dump
        gives it: its ``type`` and every default its dump writes (a reasoning
        start's role) count as set, so ``model_dump(exclude_unset=True)``
        writes them, and an optional field holding JSON null does not.
        Raises what ``build`` raises."""
        values = self._values(record)
        for name in self._omitted:
            if name in values and values[name] is None:
                del values[name]
        return self._validate({**self._written, **values})

    def _values(self, record: Record) -> dict[str, Any]:
        """The field dict of a record, for the validator."""
        fields = self.fields
        if len(fields) == 1:
            values = {"timestamp": record[1], fields[0]: record[2]}
        elif len(fields) == 2:
            values = {"timestamp": record[1], fields[0]: record[2], fields[1]: record[3]}
        elif len(fields) == 3:
            values = {"timestamp": record[1], fields[0]: record[2], fields[1]: record[3], fields[2]: record[4]}
        else:
            values = dict(zip(self._keys, record[1:], strict=True))
        for name in self._optional:
            if values[name] is None:
                del values[name]
        for name in self._json_names:
            text = values.get(name)
            if text is not None:
                values[name] = _json.loads(text)
        return values


_ANY_JSON = "any JSON"
_OBJECT_JSON = "a JSON object"


def _value_check(field: Any, is_json: bool) -> frozenset[str] | str | None:
    """How ``Kind.check`` checks a value of an event field: "" (text the
    event takes as it is), the strings a Literal allows, _ANY_JSON or
    _OBJECT_JSON (JSON text of any value, of an object), or None (only
    building the event tells)."""
    annotation = field.annotation
    if field.metadata:
        return None
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if not is_json and str in args:
            return ""  # text, or something else that a record never holds as text
        annotation = args[0] if len(args) == 1 else None
    if is_json:
        if annotation is Any:
            return _ANY_JSON
        if annotation is dict or typing.get_origin(annotation) is dict:
            key, value = typing.get_args(annotation) or (str, Any)
            return _OBJECT_JSON if key is str and value is Any else None
        return None
    if annotation is str:
        return ""
    if typing.get_origin(annotation) is typing.Literal and all(type(a) is str for a in typing.get_args(annotation)):
        return frozenset(typing.get_args(annotation))
    return None


RUN_STARTED = Kind(RunStartedEvent, ("thread_id", "run_id"))
RUN_FINISHED = Kind(RunFinishedEvent, ("thread_id", "run_id", "result", "outcome", "usage"),
                    json_fields=("result", "outcome", "usage"), content="result")
RUN_ERROR = Kind(RunErrorEvent, ("message", "code", "usage", "metadata"), json_fields=("usage", "metadata"),
                 content="message")
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
SUBAGENT_STARTED = Kind(SubagentStartedEvent,
                        ("subagent_run_id", "name", "parent_subagent_run_id", "parent_tool_call_id"))
SUBAGENT_FINISHED = Kind(SubagentFinishedEvent, ("subagent_run_id", "result", "outcome"),
                         json_fields=("result", "outcome"), content="result")
SUBAGENT_ERROR = Kind(SubagentErrorEvent, ("subagent_run_id", "message", "code"), content="message")

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        RUN_STARTED, RUN_FINISHED, RUN_ERROR, TEXT_START, TEXT_CONTENT, TEXT_END, REASONING_START,
        REASONING_CONTENT, REASONING_END, ENCRYPTED_VALUE, TOOL_START, TOOL_ARGS, TOOL_END, TOOL_RESULT, CUSTOM,
        SUBAGENT_STARTED, SUBAGENT_FINISHED, SUBAGENT_ERROR,
    )
}
"""Every kind the projection emits, by AG-UI event type name."""

SUBAGENT_TAG = "@subagent"
"""What the tag of a subagent's record adds to its type name."""

# Fuller kinds: the same AG-UI events with fields this library's vocabulary
# leaves at their defaults and another vocabulary fills in (see
# ``core.vocabulary``; a13n-stream-protocol's sets RUN_STARTED's protocol
# version, a terminal event's ``raw_event``, an input's CUSTOM ``metadata``,
# and a tool result's content parts). Their tag is the type name and "@full";
# nothing in the default projection makes one, so its records, their bytes
# and their cost are unchanged.
RUN_STARTED_FULL = Kind(RunStartedEvent, ("thread_id", "run_id", "protocol_version"), tag="RUN_STARTED@full")
RUN_FINISHED_FULL = Kind(RunFinishedEvent, ("thread_id", "run_id", "result", "outcome", "usage", "raw_event"),
                         json_fields=("result", "outcome", "usage", "raw_event"), content="result",
                         tag="RUN_FINISHED@full")
RUN_ERROR_FULL = Kind(RunErrorEvent, ("message", "code", "usage", "raw_event"), json_fields=("usage", "raw_event"),
                      content="message", tag="RUN_ERROR@full")
CUSTOM_FULL = Kind(CustomEvent, ("name", "value", "metadata"), json_fields=("value", "metadata"), tag="CUSTOM@full")
TOOL_RESULT_FULL = Kind(ToolCallResultEvent, ("message_id", "tool_call_id", "content", "role"),
                        json_fields=("content",), content="content", tag="TOOL_CALL_RESULT@full")
FULL_KINDS: tuple[Kind, ...] = (RUN_STARTED_FULL, RUN_FINISHED_FULL, RUN_ERROR_FULL, CUSTOM_FULL, TOOL_RESULT_FULL)
"""The fuller kinds, by their own tags (each reads as its type name)."""


def _attributed_variant(kind: Kind) -> Kind:
    json_fields = tuple(name for name in kind.fields if name in kind.json_fields)
    variant = Kind(kind.cls, (*kind.fields, "subagent_run_id"), json_fields=json_fields, content=kind.content,
                   tag=kind.tag + SUBAGENT_TAG)
    kind.attributed = variant
    return variant


_BY_TAG: dict[str, Kind] = dict(KINDS)
_BY_TAG.update((k.tag, k) for k in FULL_KINDS)
_BY_TAG.update(
    (v.tag, v) for v in (_attributed_variant(k) for k in (*KINDS.values(), *FULL_KINDS)
                         if "subagent_run_id" in k.cls.model_fields and "subagent_run_id" not in k.fields)
)


_SIMPLE: dict[str, int] = {tag: 2 + len(k.fields) for tag, k in _BY_TAG.items() if k._simple}
"""The length of a record of each kind whose values are all required text (``check_rows``' fast case)."""


def kind_named(name: str) -> Kind:
    """The kind of the AG-UI event type ``name``; KeyError for another name."""
    return KINDS[name]


def _kind_tagged(tag: str) -> Kind:
    return _BY_TAG[tag]


# -- records, by name ----------------------------------------------------------------------
# One constructor per record the reducer makes, with the constant fields
# (roles, subtypes) filled in. JSON-valued fields take compact JSON text.

def run_started(timestamp: int, thread_id: str, run_id: str) -> Record:
    return ("RUN_STARTED", timestamp, thread_id, run_id)


def run_finished(timestamp: int, thread_id: str, run_id: str, result: str | None, outcome: str,
                 usage: str | None) -> Record:
    return ("RUN_FINISHED", timestamp, thread_id, run_id, result, outcome, usage)


def run_error(timestamp: int, message: str, code: str | None, usage: str | None,
              metadata: str | None = None) -> Record:
    return ("RUN_ERROR", timestamp, message, code, usage, metadata)


def text_start(timestamp: int, message_id: str, role: str = "assistant") -> Record:
    return ("TEXT_MESSAGE_START", timestamp, message_id, role)


def text_content(timestamp: int, message_id: str, delta: str) -> Record:
    return ("TEXT_MESSAGE_CONTENT", timestamp, message_id, delta)


def text_end(timestamp: int, message_id: str) -> Record:
    return ("TEXT_MESSAGE_END", timestamp, message_id)


def reasoning_start(timestamp: int, message_id: str) -> Record:
    return ("REASONING_MESSAGE_START", timestamp, message_id)


def reasoning_content(timestamp: int, message_id: str, delta: str) -> Record:
    return ("REASONING_MESSAGE_CONTENT", timestamp, message_id, delta)


def reasoning_end(timestamp: int, message_id: str) -> Record:
    return ("REASONING_MESSAGE_END", timestamp, message_id)


def reasoning_signature(timestamp: int, message_id: str, signature: str) -> Record:
    """The encrypted value (subtype message) of a reasoning message."""
    return ("REASONING_ENCRYPTED_VALUE", timestamp, "message", message_id, signature)


def tool_call_start(timestamp: int, tool_call_id: str, tool_call_name: str, parent_message_id: str | None) -> Record:
    return ("TOOL_CALL_START", timestamp, tool_call_id, tool_call_name, parent_message_id)


def tool_call_args(timestamp: int, tool_call_id: str, delta: str) -> Record:
    return ("TOOL_CALL_ARGS", timestamp, tool_call_id, delta)


def tool_call_end(timestamp: int, tool_call_id: str) -> Record:
    return ("TOOL_CALL_END", timestamp, tool_call_id)


def tool_call_result(timestamp: int, message_id: str, tool_call_id: str, content: str, metadata: str) -> Record:
    return ("TOOL_CALL_RESULT", timestamp, message_id, tool_call_id, content, "tool", metadata)


def custom(timestamp: int, name: str, value: str) -> Record:
    return ("CUSTOM", timestamp, name, value)


def subagent_started(timestamp: int, subagent_run_id: str, name: str, parent_subagent_run_id: str | None,
                     parent_tool_call_id: str | None) -> Record:
    return ("SUBAGENT_STARTED", timestamp, subagent_run_id, name, parent_subagent_run_id, parent_tool_call_id)


def subagent_finished(timestamp: int, subagent_run_id: str, result: str | None, outcome: str) -> Record:
    return ("SUBAGENT_FINISHED", timestamp, subagent_run_id, result, outcome)


def subagent_error(timestamp: int, subagent_run_id: str, message: str, code: str | None) -> Record:
    return ("SUBAGENT_ERROR", timestamp, subagent_run_id, message, code)


def attributed(record: Record, subagent_run_id: str) -> Record:
    """The record of the same event with ``subagent_run_id`` set (a subagent's
    event). Raises ValueError for a kind that cannot carry it (the RUN_*
    kinds), or that carries it as an ordinary field (the SUBAGENT_* kinds),
    or a record that is already attributed."""
    variant = _BY_TAG[record[0]].attributed
    if variant is None:
        raise ValueError(f"a {record[0]} record cannot be attributed to a subagent")
    return (variant.tag, *record[1:], subagent_run_id)


def subagent_of(record: Record) -> str | None:
    """The subagent run id of a record (None for the root Run's events)."""
    kind = _BY_TAG[record[0]]
    at = kind._at.get("subagent_run_id")
    return None if at is None else record[at]


# -- reading records -------------------------------------------------------------------------

def kind_of(record: Record) -> Kind:
    """The kind of a record (the attributed variant for a subagent's record)."""
    return _BY_TAG[record[0]]


def event_type(record: Record) -> str:
    """The AG-UI event type name of a record (``"TEXT_MESSAGE_CONTENT"``)."""
    return _BY_TAG[record[0]].name


def field_of(record: Record, name: str) -> Any:
    """The stored value of field ``name`` (or ``"timestamp"``) of a record:
    str, None, or JSON text for the kind's JSON fields. None when the
    record's kind has no such field."""
    at = _BY_TAG[record[0]]._at.get(name)
    return None if at is None else record[at]


def content_of(record: Record) -> Any:
    """The stored value of the record's content field (the one a processor
    may change). Raises ValueError for a kind without one."""
    kind = _BY_TAG[record[0]]
    if kind.content is None:
        raise ValueError(f"a {kind.name} record has no content field")
    return record[kind._at[kind.content]]


def with_content(record: Record, value: Any) -> Record:
    """The record with its content field set to ``value`` (the same record
    when the value is equal). Raises ValueError for a kind without one."""
    kind = _BY_TAG[record[0]]
    if kind.content is None:
        raise ValueError(f"a {kind.name} record has no content field")
    at = kind._at[kind.content]
    if record[at] == value:
        return record
    return record[:at] + (value,) + record[at + 1:]


def with_field(record: Record, name: str, value: Any) -> Record:
    """The record with field ``name`` set to ``value`` (the same record when
    the value is equal). Raises ValueError for a field the kind lacks."""
    kind = _BY_TAG[record[0]]
    at = kind._at.get(name)
    if at is None or name == "timestamp":
        raise ValueError(f"a {kind.tag} record has no field {name!r}")
    if record[at] == value:
        return record
    return record[:at] + (value,) + record[at + 1:]


def check_rows(rows: list[Any]) -> tuple[Record, ...]:
    """Every row of ``rows`` as a record (``check``); ValueError at the first
    that is not one. The rows of the streaming kinds (required text only)
    take one test each: most of a log is those."""
    simple = _SIMPLE
    out: list[Record] = []
    append = out.append
    for row in rows:
        if type(row) is list and len(row) == 4 and type(row[1]) is int and type(row[2]) is str \
                and type(row[3]) is str and type(row[0]) is str and simple.get(row[0]) == 4:
            append(tuple(row))
        elif type(row) is list and len(row) == 3 and type(row[1]) is int and type(row[2]) is str \
                and type(row[0]) is str and simple.get(row[0]) == 3:
            append(tuple(row))
        else:
            append(check(row))
    return tuple(out)


def check(row: Any) -> Record:
    """``row`` as a record, if it is one this release could have made: a
    list or tuple of a known tag, an int timestamp and the kind's values (str
    or None) that build its event (``Kind.check``). Raises ValueError
    otherwise. What a checkpoint's records go through when restored."""
    if type(row) not in (list, tuple) or len(row) < 2:
        raise ValueError("a record that is not an array of its tag, timestamp and values")
    tag = row[0]
    kind = _BY_TAG.get(tag) if type(tag) is str else None
    if kind is None or len(row) != len(kind.fields) + 2 or type(row[1]) is not int:
        raise ValueError(f"a record that is not one of this release's kinds ({str(tag)[:80]!r})")
    for v in row[2:]:
        if v is not None and type(v) is not str:
            raise ValueError(f"a {tag} record holding a {type(v).__name__}")
    record = tuple(row)
    kind.check(record)
    return record


def build(record: Record) -> BaseEvent:
    """A fresh AG-UI event for a record (see ``Kind.build``)."""
    kind = _BY_TAG[record[0]]
    pair = kind._pair
    if pair is not None:  # Kind.build's first case, one call less on the hot path
        return kind._validate({"timestamp": record[1], pair[0]: record[2], pair[1]: record[3]})
    return kind.build(record)


def build_complete(record: Record) -> BaseEvent:
    """A fresh AG-UI event for a record, every field its dump writes set (see ``Kind.build_complete``)."""
    return _BY_TAG[record[0]].build_complete(record)


# -- the log of a Run's records -----------------------------------------------------------------

_CHUNK = 64
_new_log = object.__new__
_BLOCK = _CHUNK * _CHUNK
Rows = tuple[Record, ...]


class RecordLog(Sequence[Record]):
    """The records of a projection: an immutable, persistent sequence.

    ``extend`` and ``append`` return a new log sharing everything with the old
    one. It pickles as the tuple of its records.

    The layout keeps the garbage collector's share of observe() small and
    constant. The collector traverses every container created since its last
    young collection in full, and those run every few hundred allocations: a
    single persistent vector of all records, new after each item, made each
    of them cost as much as the whole history. Here an item creates only a
    tail tuple of fewer than CHUNK records; full tails are sealed into a tuple
    of fewer than CHUNK chunks, and full sets of chunks into blocks of
    CHUNK * CHUNK records held by a persistent vector, which is therefore new
    only once every CHUNK * CHUNK records. And a record holds only str, int
    and None, so records, chunks and blocks hold only atomic values and the
    collector stops tracking them after their first collection: a long Run's
    events do not make full collections longer or more frequent.
    """

    __slots__ = ("_blocks", "_chunks", "_tail")

    CHUNK = _CHUNK

    def __init__(self, records: Iterable[Record] = ()) -> None:
        self._blocks, self._chunks, self._tail = _layout(tuple(records))

    @classmethod
    def _of(cls, blocks: PVector[tuple[Rows, ...]], chunks: tuple[Rows, ...], tail: Rows) -> RecordLog:
        log = object.__new__(cls)
        log._blocks = blocks
        log._chunks = chunks
        log._tail = tail
        return log

    BLOCK = _BLOCK

    def sealed_blocks(self) -> Sequence[tuple[Rows, ...]]:
        """The log's sealed blocks, in order: each ``BLOCK`` records as a
        tuple of ``CHUNK`` chunks of ``CHUNK`` records (for checkpoints)."""
        return self._blocks

    def unsealed(self) -> Rows:
        """The records after the last sealed block (fewer than ``BLOCK``)."""
        return tuple(r for chunk in self._chunks for r in chunk) + self._tail

    @classmethod
    def from_blocks(cls, blocks: Sequence[tuple[Rows, ...]], unsealed: Rows) -> RecordLog:
        """The log whose ``sealed_blocks()`` are ``blocks`` and whose
        ``unsealed()`` records are ``unsealed``. ``blocks`` is any sequence
        that also has ``extend`` (a PVector, or a stand-in that decodes its
        blocks when read, as a restored checkpoint's does); the caller
        vouches that each holds exactly ``BLOCK`` records laid out in chunks.
        Raises ValueError for ``BLOCK`` or more unsealed records."""
        if len(unsealed) >= _BLOCK:
            raise ValueError(f"a log has fewer than {_BLOCK} unsealed records, not {len(unsealed)}")
        _, chunks, tail = _layout(unsealed)
        return cls._of(blocks, chunks, tail)  # type: ignore[arg-type]

    def extend(self, records: Iterable[Record]) -> RecordLog:
        """A new log with ``records`` appended (this one if there are none)."""
        tail = self._tail + tuple(records)
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
        if len(self._tail) < _CHUNK - 1:  # the reducer's case: _of(), written out, without a tuple of the record
            log = _new_log(RecordLog)
            log._blocks = self._blocks
            log._chunks = self._chunks
            log._tail = self._tail + (record,)
            return log
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
        return self._row(i)

    def _piece(self, k: int) -> Rows:
        """Chunk number ``k`` (the tail after the last full chunk)."""
        sealed = len(self._blocks) * _CHUNK
        if k < sealed:
            return self._blocks[k // _CHUNK][k % _CHUNK]
        k -= sealed
        return self._chunks[k] if k < len(self._chunks) else self._tail

    def _pieces(self) -> Iterator[Rows]:
        """Every chunk in order, then the tail."""
        for block in self._blocks:
            yield from block
        yield from self._chunks
        yield self._tail

    def _row(self, i: int) -> Record:
        k, at = divmod(i, _CHUNK)
        return self._piece(k)[at]

    def _rows(self, start: int, stop: int) -> Iterator[Record]:
        """The records from ``start`` to ``stop``."""
        i = start
        while i < stop:
            k, at = divmod(i, _CHUNK)
            piece = self._piece(k)[at:at + min(_CHUNK - at, stop - i)]
            if not piece:
                break
            yield from piece
            i += len(piece)

    def __iter__(self) -> Iterator[Record]:
        for piece in self._pieces():
            yield from piece

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

    @property
    def records(self) -> Sequence[Record]:
        """The records the events are built from (for ``core.encode``)."""
        return self._records

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, index: int) -> BaseEvent: ...

    @overload
    def __getitem__(self, index: slice) -> EventLog: ...

    def __getitem__(self, index: int | slice) -> BaseEvent | EventLog:
        if isinstance(index, slice):
            return EventLog(self._records[index])
        return build(self._records[index])

    def __iter__(self) -> Iterator[BaseEvent]:
        records = self._records
        # A RecordLog chunk by chunk: one generator level less per event.
        pieces = records._pieces() if type(records) is RecordLog else (records,)
        kinds = _BY_TAG
        for piece in pieces:
            for record in piece:
                # build(), written out: this loop is all a snapshot read costs.
                kind = kinds[record[0]]
                pair = kind._pair
                if pair is not None:
                    yield kind._validate({"timestamp": record[1], pair[0]: record[2], pair[1]: record[3]})
                else:
                    yield kind.build(record)

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
