# AG-UI wire JSON straight from records, without building an event.
#
# What a Host writes for an event is ``event.model_dump_json(by_alias=True)``
# (what ``ag_ui.encoder.EventEncoder`` puts after ``data: `` and what
# ``wire.agui.agui_to_json`` returns): the event's fields in the model's
# field order, under their camelCase aliases, with every optional field that
# defaults to None left out when it is None (ag-ui-protocol's base model
# omits those itself, so ``exclude_none=True`` changes nothing for the
# events this library emits: it would only drop a required field that is
# null, such as a CUSTOM value of None, which the projection never makes).
#
# A record already holds every value of its event as text (a str, or the
# compact JSON text of a JSON value, see ``records``), so that JSON is a
# fixed frame with the values spliced in. For every record kind this module
# generates, once at import, a small function that writes that frame (the
# way attrs generates ``__init__``): the kind's fields in model order, the
# constants (type name, defaults such as a reasoning message's role) written
# out, optional values left out when None. Strings are escaped by the
# standard library's JSON string encoder (the one ``json.dumps(...,
# ensure_ascii=False)`` uses), which writes exactly what pydantic-core
# writes for valid Unicode text: the same escapes for quote, backslash and
# control characters, everything else as is. A JSON field is spliced in as
# the text the record holds, which ``_json.dumps`` wrote; pydantic-core
# writes the same text for the same value except for one spelling of
# floats: an exponent between -5 and -9 is ``1e-07`` in Python and ``1e-7``
# in pydantic-core. So a JSON text that contains ``e-0`` anywhere (a float
# with such an exponent, or a string that merely contains those characters)
# takes the slow path.
#
# The slow path is the reference itself: build the event from the record
# and dump it with pydantic (``event_json``). It is taken for a record whose
# kind holds a nested AG-UI model (RUN_FINISHED's outcome and usage,
# RUN_ERROR's usage, SUBAGENT_FINISHED's outcome: once per Run), for the
# floats above, for a value that is not what the kind declares, and for
# text with a lone surrogate, which pydantic refuses and which ``event_json``
# writes as a ``\udXXX`` escape (see ``_json.escape_surrogates``). The
# records the reducer and the processor contract make never hold a lone
# surrogate or a wrong type: those cases only keep hand-made records exact.
#
# ``event_json`` has a fast path of its own for an unmodified event of a
# kind without JSON fields: the same frame, filled from the event's fields
# when each is exactly what a record would hold, so a Host that encodes the
# events ``observe()`` returned pays little more than for records.
# tests/test_encode.py checks both paths against pydantic's dump for every
# event of generated histories, subagent streams included.

from __future__ import annotations

import json
import typing
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import pydantic_core
from pydantic_core import PydanticSerializationError

from . import _json
from ._generated import define
from .records import _BY_TAG, EventLog, Kind, Record, build

__all__ = ["EncodedEvent", "record_json", "records_json", "encode_records", "encoded", "event_json"]


class EncodedEvent(NamedTuple):
    """An AG-UI event as it goes on the wire: ``type``, the event type name
    (``"TEXT_MESSAGE_CONTENT"``), and ``json``, the event's compact JSON with
    camelCase names, exactly ``agui_to_json`` of the event."""

    type: str
    json: str


_esc = json.encoder.encode_basestring  # type: ignore[attr-defined]  # the C string encoder json.dumps uses
_SURROGATE = _json._SURROGATE
_new_encoded = tuple.__new__


# -- the frames, generated per kind -----------------------------------------------------------

_JSON_ANY = (Any, typing.Optional[Any], dict[str, Any], typing.Optional[dict[str, Any]],  # noqa: UP045
             typing.Dict[str, Any], typing.Optional[typing.Dict[str, Any]])  # noqa: UP006, UP045


def _omittable(info: Any) -> bool:
    return not info.is_required() and info.default is None


def _frame_source(kind: Kind, fn: str) -> str | None:
    """The source of a function ``fn(r)`` returning the EncodedEvent of a
    record of ``kind``, or None to send the record to the slow path (a value
    of another type than the kind declares, text with a lone surrogate).
    None when no record of the kind can be written this way (a nested model
    in a JSON field)."""
    at = kind._at
    lines = [f"def {fn}(r):"]
    pieces: list[str] = []  # of the f-string the function returns

    def literal(text: str) -> str:
        return text.replace("{", "{{").replace("}", "}}")

    for name, info in kind.cls.model_fields.items():
        key = _esc(info.serialization_alias or info.alias or name)
        i = at.get(name)
        if name == "type":
            pieces.append(literal("{" + key + ":" + _esc(kind.name)))
        elif i is None:  # a field records do not carry: its default, unless that is an omitted None
            if not _omittable(info):
                pieces.append(literal("," + key + ":" + pydantic_core.to_json(info.default).decode()))
        elif name == "timestamp":  # an int (None, or a bool, takes the slow path)
            lines.append(f"    if r[{i}].__class__ is not int: return None")
            pieces.append(literal("," + key + ":") + f"{{r[{i}]}}")
        elif name in kind.json_fields:  # compact JSON text, spliced in
            if info.annotation not in _JSON_ANY:
                return None
            if _omittable(info):
                lines.append(f"    v{i} = r[{i}]")
                lines.append(f"    if v{i} is None: v{i} = ''")
                lines.append(f"    elif 'e-0' in v{i}: return None")
                lines.append(f"    else: v{i} = '," + key + f":' + v{i}")
                pieces.append(f"{{v{i}}}")
            else:
                lines.append(f"    if 'e-0' in r[{i}]: return None")
                pieces.append(literal("," + key + ":") + f"{{r[{i}]}}")
        elif _omittable(info):  # optional text
            lines.append(f"    v{i} = r[{i}]")
            lines.append(f"    v{i} = '' if v{i} is None else '," + key + f":' + esc(v{i})")
            pieces.append(f"{{v{i}}}")
        else:  # text
            pieces.append(literal("," + key + ":") + f"{{esc(r[{i}])}}")
    text = "f'" + "".join(pieces) + "}}'"
    lines.append(f"    t = {text}")
    lines.append("    if t.isascii() or surrogate(t) is None:")
    lines.append(f"        return new(EncodedEvent, ({kind.name!r}, t))")
    lines.append("    return None")
    # A value of another type than the kind declares raises TypeError: the slow path too.
    return "\n".join([lines[0], "    try:", *("    " + line for line in lines[1:]), "    except TypeError:",
                      "        return None"])


def _no_frame(record: Record) -> None:
    return None


def _compile(kind: Kind) -> Any:
    fn = "encode_" + kind.tag.replace("@", "_at_")
    source = _frame_source(kind, fn)
    if source is None:
        return _no_frame
    scope: dict[str, Any] = {"esc": _esc, "surrogate": _SURROGATE.search, "new": _new_encoded,
                             "EncodedEvent": EncodedEvent}
    return define(source, fn, f"frame {kind.tag}", scope)


# Every kind has one: it returns the EncodedEvent, or None for the slow path.
_ENCODERS: dict[str, Any] = {tag: _compile(kind) for tag, kind in _BY_TAG.items()}
_TYPES: dict[str, str] = {tag: kind.name for tag, kind in _BY_TAG.items()}


# -- records ---------------------------------------------------------------------------------------

def _slow(record: Record) -> str:
    return event_json(build(record))


def record_json(record: Record) -> str:
    """The AG-UI wire JSON of a record's event: exactly
    ``agui_to_json(build(record))``, without building the event when the
    record allows. Raises what ``build`` raises for a record that does not
    make a valid event."""
    return _encoded(record).json


def records_json(records: Iterable[Record]) -> list[str]:
    """``record_json`` of each record, in order."""
    return [record_json(record) for record in records]


def _encoded(record: Record) -> EncodedEvent:
    event = _ENCODERS[record[0]](record)
    return event if event is not None else _new_encoded(EncodedEvent, (_TYPES[record[0]], _slow(record)))


def encode_records(records: Sequence[Record]) -> tuple[EncodedEvent, ...]:
    """An ``EncodedEvent`` (type name and ``record_json``) per record, in order."""
    if len(records) == 1:  # most items make one event, usually by their kind's encoder
        event = _ENCODERS[records[0][0]](records[0])
        if event is not None:
            return (event,)
    return tuple(map(_encoded, records))


def encoded(events: EventLog | Iterable[Record]) -> Iterator[EncodedEvent]:
    """``encode_records`` lazily, of a snapshot (``observer.snapshot()``, a
    slice of it) or of records: what a Host that checks or re-sends its
    delivered events compares and writes."""
    records = events.records if isinstance(events, EventLog) else events
    return map(_encoded, records)


# -- events ------------------------------------------------------------------------------------

_Unset = tuple[tuple[str, Any], ...]


def _event_frames() -> dict[type, tuple[Kind, Kind | None, Any, _Unset]]:
    """Per AG-UI class of a kind without JSON fields: its kind, the kind of
    such an event with ``subagent_run_id`` set, its type value, and the
    fields no record holds, with the defaults they must still have."""
    out: dict[type, tuple[Kind, Kind | None, Any, _Unset]] = {}
    for tag, kind in _BY_TAG.items():
        if tag != kind.name or kind.json_fields or _ENCODERS[tag] is _no_frame:
            continue
        attributed = kind if "subagent_run_id" in kind.fields else kind.attributed
        unset = tuple((n, d) for n, d in kind.unset if n != "subagent_run_id")
        out[kind.cls] = (kind, attributed, kind.cls.model_fields["type"].default, unset)
    return out


_EVENT_KINDS = _event_frames()


def event_json(event: Any) -> str:
    """One AG-UI event as compact JSON with camelCase wire names (optional
    fields without a value are left out): ``event.model_dump_json(by_alias=True)``,
    except that text with a lone surrogate, which pydantic refuses, is
    written with ``\\udXXX`` escapes, so the result is always UTF-8
    encodable. Raises whatever pydantic raises for an object that is not an
    AG-UI event."""
    found = _EVENT_KINDS.get(type(event))
    if found is not None and not event.__pydantic_extra__:
        kind, attributed, type_, unset = found
        values = event.__dict__
        for name, default in unset:
            if values[name] is not default and values[name] != default:
                break
        else:
            use = kind if values.get("subagent_run_id") is None else attributed
            if use is not None and values["type"] is type_:
                written = _ENCODERS[use.tag]((use.tag, values["timestamp"], *[values[n] for n in use.fields]))
                if written is not None:
                    return written.json  # type: ignore[no-any-return]
    try:
        return event.model_dump_json(by_alias=True)  # type: ignore[no-any-return]
    except PydanticSerializationError:
        # Only a lone surrogate in some text gets here: pydantic refuses it.
        text = json.dumps(event.model_dump(mode="json", by_alias=True), separators=(",", ":"), ensure_ascii=False)
        return _json.escape_surrogates(text)
