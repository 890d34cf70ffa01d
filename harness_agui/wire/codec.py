# The wire format: one source item per JSON line, versioned by "v".
#
# Encoding is a straight walk over the frozen source values, driven by the
# field table of ``core.jsonform``, which is derived from the source model's
# declarations (field names are the attrs field names, the envelope's "kind"
# is its tag), and written by writers generated from that table (see
# ``encode``); decoding is the reverse walk over the same table with a
# strict reader that names the line and the field at fault. Nothing is
# skipped: an unknown version, kind, payload type or field is an error
# unless the caller supplied a migration for that version, which turns the
# older JSON object into a current one before it is read. Being
# strict about unknown fields is what makes "v" meaningful: a writer that adds
# a field bumps the version and ships a migration, so a typo in a journal
# (``"signatur"``) can never drop data quietly.
#
# The same payload-to-JSON walk feeds the CUSTOM events of the projection, so
# a CUSTOM value carries exactly what a journal line would.
#
# Version 2 (this release) holds the whole public stream of a13n-harness
# 0.21: new payload, part, delta and content types, new optional fields, and
# binary content as base64 beside its media type and size. Every version 1
# line is also a version 2 line with the same meaning, so the migration from
# version 1, registered by default, checks that the line uses only what
# version 1 had (the classes, fields and words the source model declares
# ``v1``) and relabels it. A migration gets its own copy of the line's
# object, made without recursion, so a line nested as deep as the JSON
# parser reads fails where a current line would: in the source model, with
# the error naming the field.
#
# Lines are UTF-8 text with non-ASCII characters kept as they are. The
# decoder enforces no limit of its own: the limits (text without lone
# surrogates, JSON nested at most 240 levels, integers of at most 4000
# digits, sequences up to 2**53 - 1, instants that exist in UTC) belong to
# the source model, whose constructors the decoder calls, so a line is
# refused exactly when the value it describes would be, with a DecodeError
# naming the line and the field. A "\ud800" escape is valid JSON but
# decodes to a lone surrogate, so such a line is refused; a high and a low
# surrogate escaped next to each other are one character and are read as
# such. The JSON parser itself stops at about 1000 levels of nesting
# (Python's recursion limit): deeper text is "nested too deeply". How long
# a line may be is the journal reader's business (``jsonl``), since it is
# the one that reads lines from a file.

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

from ..core import _json
from ..core._generated import define
from ..core.errors import HarnessAguiError
from ..core.jsonform import (
    CONTENT_TYPES,
    SHAPES,
    TYPED_SUFFIX,
    Shape,
    WireField,
    value_to_json,
)
from ..core.source import (
    BinaryContent,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    MediaContent,
)

__all__ = [
    "WIRE_VERSION",
    "DEFAULT_MIGRATIONS",
    "DecodeError",
    "Migration",
    "migrate_v1_to_v2",
    "encode",
    "decode",
    "to_json",
    "from_json",
]

WIRE_VERSION = 2

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""Turns a decoded JSON object of an older wire version into the next one."""


class DecodeError(HarnessAguiError, ValueError):
    """A line of the wire format could not be decoded.

    ``reason`` says what was wrong (naming the field at fault where there is
    one), ``line`` is the 1-based line number and ``source`` the file name,
    each when the caller knew it. ``str()`` of the error is one line:
    ``source:line: reason``, ``line N: reason`` or just the reason.
    """

    def __init__(self, reason: str, line: int | None = None, source: str | None = None) -> None:
        self.reason = reason
        self.line = line
        self.source = source
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        else:
            where = f"line {line}: " if line is not None else ""
        super().__init__(where + reason)

    def at(self, line: int | None = None, source: str | None = None) -> DecodeError:
        """The same error located at ``line`` of ``source`` (each kept from
        this error when not given). Returns a new error."""
        return DecodeError(self.reason, self.line if line is None else line,
                           self.source if source is None else source)


# -- encoding ------------------------------------------------------------------

def to_json(item: HarnessStreamEvent) -> dict[str, Any]:
    """The wire JSON object of a source item (fresh dicts; JSON fields are
    shared with the item). Raises TypeError for anything else."""
    if type(item) not in _ENVELOPE_CLASSES:
        raise TypeError(f"not a Harness stream item: {type(item).__name__}")
    out: dict[str, Any] = {"v": WIRE_VERSION}
    out.update(value_to_json(item))
    return out


def encode(item: HarnessStreamEvent) -> str:
    """One wire line (without a trailing newline) for a source item.

    The line is compact JSON, UTF-8 encodable (the source model admits no
    lone surrogate), with keys in a fixed order, so the same item always
    gives the same text: ``_json.dumps(to_json(item))``, written by the
    item's generated writer (below). Raises TypeError for anything that is
    not a Harness stream item.
    """
    write = _LINES.get(type(item))
    if write is None:
        raise TypeError(f"not a Harness stream item: {type(item).__name__}")
    return write(item)


# A journal writes one line per item, and building the JSON object of an item only to write it costs more
# than projecting the item. So every class whose fields are all of the simple kinds (text, numbers, flags,
# instants, JSON values, and nested values) has a writer generated from its shape, that writes its text
# directly: the same keys in the same order, the same default fields left out, each value written as the
# compact JSON writer writes it. A nested value of a class without a writer (tool content, binary data,
# lists of values) is written by ``_json.dumps(value_to_json(value))``, which is what its text is inside the
# whole object's. ``tests/test_codec.py`` checks the writers against that on every generated item.

_SIMPLE = {
    "str": "(_esc({v}) if type({v}) is str else _dumps({v}))",
    "choice": "(_esc({v}) if type({v}) is str else _dumps({v}))",
    "int": "(_int({v}) if type({v}) is int else _dumps({v}))",
    "bool": "('true' if {v} is True else 'false' if {v} is False else _dumps({v}))",
    "datetime": "_esc({v}.isoformat())",
    "json": "_dumps({v})", "object": "_dumps({v})", "array": "_dumps({v})", "args": "_dumps({v})",
    "text_or_object": "_dumps({v})",
    "nested": "_write({v})", "part": "_write({v})", "delta": "_write({v})", "payload": "_write({v})",
}


def _write(value: Any) -> str:
    """The JSON text of a source value, by its class's writer if it has one."""
    write = _WRITERS.get(type(value))
    return write(value) if write is not None else _json.dumps(value_to_json(value))


def _writer(shape: Shape, head: str) -> Callable[[Any], str] | None:
    """The generated writer of ``shape``'s class, its text opened by ``head``
    (``{`` and whatever leads); None if a field is not of a simple kind."""
    if any(f.kind not in _SIMPLE for f in shape.fields) or shape.cls is BinaryContent:
        return None
    namespace: dict[str, Any] = {"_esc": json.encoder.encode_basestring, "_dumps": _json.dumps, "_int": int.__repr__,
                                 "_write": _write}
    lines = ["def write(value):", f"    out = [{head!r}]"]
    if shape.tag is not None:
        lines.append(f"    out.append({_json.dumps(shape.tag_key) + ':' + _json.dumps(shape.tag)!r})")
    for i, f in enumerate(shape.fields):
        v = f"v{i}"
        lines.append(f"    {v} = value.{f.name}")
        text = f"{_json.dumps(f.name) + ':'!r} + {_SIMPLE[f.kind].format(v=v)}"
        if f.required or f.always:
            lines.append(f"    out.append({text})")
            continue
        if f.default_factory is not None:
            namespace[f"_default{i}"] = f.is_default
            lines.append(f"    if not _default{i}({v}):")
        elif f.default is None:
            lines.append(f"    if {v} is not None:")
        else:
            namespace[f"_default{i}"], namespace[f"_type{i}"] = f.default, type(f.default)
            lines.append(f"    if not (type({v}) is _type{i} and {v} == _default{i}):")
        lines.append(f"        out.append({text})")
    lines.append("    return out[0] + ','.join(out[1:]) + '}'")
    return define("\n".join(lines), "write", f"writer {shape.cls.__name__} {head}", namespace)  # type: ignore[no-any-return]


_WRITERS: dict[type, Callable[[Any], str]] = {
    cls: w for cls, shape in SHAPES.items() if (w := _writer(shape, "{")) is not None}
_LINES: dict[type, Callable[[Any], str]] = {
    cls: w for cls in (HarnessEvent, HarnessRunResultEvent)
    if (w := _writer(SHAPES[cls], '{"v":' + str(WIRE_VERSION) + ",")) is not None}
assert len(_LINES) == 2, "an envelope field of a kind the writers do not know"


# -- decoding --------------------------------------------------------------------
# A small strict reader: every accessor names the wire path of the field it
# reads ("event.part.content") and the JSON type it found, and every object
# refuses fields it does not know. A TypeError or ValueError raised by the
# frozen classes' own validators (a blank id, a negative index) becomes a
# DecodeError in ``from_json``.

_MISSING = object()

_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
}


# Field kinds whose value is one JSON type, and the exact Python type json.loads gives it; a value of
# that exact type (bool is not int here) needs no further check. Anything else takes ``_field``.
_EXACT: dict[str, type] = {"str": str, "int": int, "bool": bool, "object": dict, "array": list}
# The same by JSON type name, for ``_Obj.req``.
_EXACT_OF: dict[str, type] = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class _Obj:
    __slots__ = ("data", "path")

    def __init__(self, data: Any, path: str, allowed: frozenset[str] | None = None) -> None:
        if not isinstance(data, dict):
            raise DecodeError(f"{'field ' + path if path else 'the item'} must be an object, not {_json_type(data)}")
        self.data = data
        self.path = path
        if allowed is not None:
            self.only(allowed)

    def _at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def only(self, allowed: frozenset[str]) -> None:
        unknown = [k for k in self.data if k not in allowed]
        if unknown:
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            raise DecodeError(f"unknown field {self._at(unknown[0])}{more}")

    def req(self, key: str, *types: str) -> Any:
        value = self.data.get(key, _MISSING)
        if value is _MISSING:
            raise DecodeError(f"missing field {self._at(key)}")
        return self._check(key, value, types)

    def opt(self, key: str, *types: str) -> Any:
        value = self.data.get(key)
        return None if value is None else self._check(key, value, types)

    def json(self, key: str) -> Any:
        return self.data.get(key)

    def choice(self, key: str, choices: tuple[str, ...]) -> str:
        value = self.req(key, "string")
        if value not in choices:
            raise DecodeError(f"field {self._at(key)} must be one of {', '.join(choices)}; got {value!r}")
        return value

    def obj(self, key: str, allowed: frozenset[str] | None = None) -> _Obj:
        return _Obj(self.req(key, "object"), self._at(key), allowed)

    def opt_obj(self, key: str, allowed: frozenset[str] | None = None) -> _Obj | None:
        value = self.opt(key, "object")
        return None if value is None else _Obj(value, self._at(key), allowed)

    def _check(self, key: str, value: Any, types: tuple[str, ...]) -> Any:
        if not types or type(value) is _EXACT_OF[types[0]]:  # no check, or the exact type json.loads gives
            return value
        for t in types:
            if _CHECKS[t](value):
                return value
        raise DecodeError(f"field {self._at(key)} must be {' or '.join(types)}, not {_json_type(value)}")


def _read(o: _Obj, cls: type, keys: frozenset[str] | None = None) -> Any:
    """The value of class ``cls`` that the object ``o`` describes, every
    field read as the ``jsonform`` table says; unknown fields (any key not
    in ``keys``, by default the shape's) are refused."""
    if cls is BinaryContent:
        return _binary_from(o)
    shape = SHAPES[cls]
    o.only(shape.keys if keys is None else keys)
    kwargs: dict[str, Any] = {}
    for f in shape.fields:
        if f.kind == "content":
            typed = o.opt_obj(f.name + TYPED_SUFFIX)
            if typed is not None:
                if o.data.get(f.name) is not None:
                    raise DecodeError(f"fields {o._at(f.name)} and {o._at(f.name + TYPED_SUFFIX)} exclude each other")
                kwargs[f.name] = _tagged(typed, CONTENT_TYPES, "content")
            elif f.name in o.data:
                kwargs[f.name] = o.data[f.name]
            continue
        if f.kind == "json":
            if f.name in o.data:
                kwargs[f.name] = o.data[f.name]
            continue
        raw = o.data.get(f.name, _MISSING)
        if type(raw) is _EXACT.get(f.kind):  # the common case, as json.loads makes it: no check to run
            kwargs[f.name] = raw
            continue
        if raw is _MISSING or raw is None:
            if f.required:
                _field(o, f)  # raises: missing, or null where a value is due
            kwargs[f.name] = f.default_factory() if f.default_factory is not None else f.default
            continue
        kwargs[f.name] = _field(o, f)
    return cls(**kwargs)


def _field(o: _Obj, f: WireField) -> Any:
    kind, name = f.kind, f.name
    if kind == "str":
        return o.req(name, "string")
    if kind == "int":
        return o.req(name, "integer")
    if kind == "bool":
        return o.req(name, "boolean")
    if kind == "object":
        return o.req(name, "object")
    if kind == "array":
        return o.req(name, "array")
    if kind in ("args", "text_or_object"):
        return o.req(name, "string", "object")
    if kind == "choice":
        return o.choice(name, f.choices)
    if kind == "datetime":
        return _datetime_from(o, name)
    if kind == "nested":
        assert f.cls is not None
        return _read(o.obj(name), f.cls)
    if kind == "tuple":
        assert f.cls is not None
        return tuple(_read(_Obj(x, f"{o._at(name)}[{i}]"), f.cls) for i, x in enumerate(o.req(name, "array")))
    if kind in ("part", "delta", "payload"):
        assert f.union is not None
        return _tagged(o.obj(name), f.union, kind)
    if kind == "items":
        return tuple(_item_from(_Obj(x, f"{o._at(name)}[{i}]")) for i, x in enumerate(o.req(name, "array")))
    raise AssertionError(f"field kind {kind}")  # pragma: no cover - the table uses only the kinds above


def _tagged(o: _Obj, known: Mapping[str, type], what: str) -> Any:
    kind = o.req("type", "string")
    cls = known.get(kind)
    if cls is None:
        where = f" at {o.path}" if o.path else ""
        raise DecodeError(f"unknown {what} type {kind!r}{where} (known: {', '.join(known)})")
    return _read(o, cls)


def _item_from(o: _Obj) -> Any:
    if o.req("type", "string") == "json":
        o.only(_JSON_ITEM_KEYS)
        if "value" not in o.data:
            raise DecodeError(f"missing field {o._at('value')}")
        return o.data["value"]
    return _tagged(o, _ITEM_TYPES, "content item")


_JSON_ITEM_KEYS = frozenset({"type", "value"})
_ENVELOPES: dict[str, type] = {SHAPES[c].tag: c for c in (HarnessEvent, HarnessRunResultEvent)}  # type: ignore[misc]
_ENVELOPE_CLASSES = frozenset(_ENVELOPES.values())
_ITEM_KEYS = {tag: SHAPES[cls].keys | {"v"} for tag, cls in _ENVELOPES.items()}
_ITEM_TYPES: dict[str, type] = {"json": type(None), "binary": BinaryContent, "media": MediaContent}
_BINARY_KEYS = SHAPES[BinaryContent].keys


def _binary_from(o: _Obj) -> BinaryContent:
    o.only(_BINARY_KEYS)
    if o.req("type", "string") != "binary":
        raise DecodeError(f"field {o._at('type')} must be 'binary'")
    text = o.req("data", "string")
    size = o.req("size", "integer")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise DecodeError(f"field {o._at('data')} is not base64") from None
    if base64.b64encode(data).decode("ascii") != text:
        raise DecodeError(f"field {o._at('data')} is not canonical base64")
    if len(data) != size:
        raise DecodeError(f"field {o._at('size')} is {size} but {o._at('data')} holds {len(data)} bytes")
    return BinaryContent(data=data, media_type=o.req("media_type", "string"), identifier=o.opt("identifier", "string"),
                         vendor_metadata=o.opt("vendor_metadata", "object"))


# -- version 1 ---------------------------------------------------------------------------
# What version 1 wrote is declared with the source model: the classes and
# fields marked ``v1``, and for a vocabulary that version 1 kept closed, its
# words. A version 1 line is a version 2 line of the same meaning once it is
# known to use nothing else. The check walks the line by the shapes, as the
# reader does; JSON values are not entered.

def _v1_keys(shape: Shape) -> frozenset[str]:
    keys = {f.name for f in shape.fields if f.spec.v1}
    if shape.tag is not None:
        keys.add(shape.tag_key)
    return frozenset(keys)


_V1_KEYS = {cls: _v1_keys(shape) for cls, shape in SHAPES.items() if shape.v1}


def _v1_object(o: _Obj, cls: type, keys: frozenset[str] | None = None) -> None:
    o.only(_V1_KEYS[cls] if keys is None else keys)
    for f in SHAPES[cls].fields:
        if f.name not in o.data or o.data[f.name] is None:
            continue
        choices = f.spec.v1_choices
        if choices is not None:
            o.choice(f.name, choices)
        elif f.kind == "nested":
            _v1_object(o.obj(f.name), f.cls)  # type: ignore[arg-type]
        elif f.kind == "tuple":
            for i, x in enumerate(o.req(f.name, "array")):
                _v1_object(_Obj(x, f"{o._at(f.name)}[{i}]"), f.cls)  # type: ignore[arg-type]
        elif f.union is not None:
            _v1_tagged(o.obj(f.name), f.union, f.kind)


def _v1_tagged(o: _Obj, known: Mapping[str, type], what: str, keys: frozenset[str] = frozenset()) -> None:
    tag = o.req(SHAPES[next(iter(known.values()))].tag_key, "string")
    cls = known.get(tag)
    if cls is None or cls not in _V1_KEYS:
        v1 = ", ".join(t for t, c in known.items() if c in _V1_KEYS)
        where = f" at {o.path}" if o.path else ""
        raise DecodeError(f"unknown {what} type {tag!r}{where} in wire version 1 (known: {v1})")
    _v1_object(o, cls, _V1_KEYS[cls] | keys)


def _v1_check(data: dict[str, Any]) -> None:
    o = _Obj(data, "")
    if o.data.get("kind") in _ENVELOPES:  # anything else is the reader's to refuse
        _v1_tagged(o, _ENVELOPES, "kind", frozenset({"v"}))


def migrate_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Wire version 1 to 2: refuse what version 1 could not say, then relabel."""
    _v1_check(data)
    data["v"] = 2
    return data


DEFAULT_MIGRATIONS: Mapping[int, Migration] = MappingProxyType({1: migrate_v1_to_v2})
"""The migrations ``decode`` applies unless the caller gives its own for the same version."""


# ``datetime.fromisoformat`` drops an offset's fraction of a second when its
# seconds are zero ("+00:00:00.000001" reads as UTC), so such offsets, which
# ``isoformat`` does write, are parsed here.
_FRACTIONAL_OFFSET = re.compile(r"([+-])(\d\d):(\d\d):(\d\d)\.(\d{1,6})$")


def _parse_datetime(text: str) -> datetime:
    m = _FRACTIONAL_OFFSET.search(text)
    if m is None:
        return datetime.fromisoformat(text)
    local = datetime.fromisoformat(text[: m.start()])
    if local.tzinfo is not None:
        raise ValueError("two offsets")
    sign, hours, minutes, seconds, fraction = m.groups()
    offset = timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds),
                       microseconds=int(fraction.ljust(6, "0")))
    return local.replace(tzinfo=timezone(-offset if sign == "-" else offset))


def _datetime_from(o: _Obj, key: str) -> datetime:
    text = o.req(key, "string")
    try:
        value = _parse_datetime(text)
    except ValueError:
        raise DecodeError(f"field {o._at(key)} is not an ISO 8601 datetime: {text!r}") from None
    if value.utcoffset() is None:
        raise DecodeError(f"field {o._at(key)} has no timezone offset: {text!r}")
    return value


def _migrate(data: dict[str, Any], version: int, migrations: Mapping[int, Migration] | None) -> dict[str, Any]:
    seen: set[int] = set()
    while version != WIRE_VERSION:
        migrate = migrations.get(version) if migrations is not None else None
        if migrate is None:
            migrate = DEFAULT_MIGRATIONS.get(version)
        if migrate is None:
            if version < WIRE_VERSION:
                raise DecodeError(f"wire version {version} is older than this release reads (version "
                                  f"{WIRE_VERSION}) and no migration for it was given")
            raise DecodeError(f"unknown wire version {version} (this release reads version {WIRE_VERSION})")
        if version in seen:
            raise DecodeError(f"the migrations lead back to wire version {version}")
        seen.add(version)
        try:
            upgraded = migrate(_json.copy_json(data))
        except DecodeError:
            raise
        except Exception as e:
            raise DecodeError(f"migration from wire version {version} failed: {type(e).__name__}: {e}") from e
        if not isinstance(upgraded, dict):
            raise DecodeError(f"migration from wire version {version} returned {type(upgraded).__name__}, not dict")
        data = upgraded
        version = _Obj(data, "").req("v", "integer")
    return data


def from_json(data: Any, *, migrations: Mapping[int, Migration] | None = None,
              line: int | None = None) -> HarnessStreamEvent:
    """Decode one wire JSON object into the source item it describes.

    ``migrations`` maps an older version number to a function that takes an
    object of that version (a deep copy: it may be changed in place) and
    returns one of a later version; they are chained until the object is
    current. ``data`` itself is never changed.

    Raises DecodeError (a ValueError) naming ``line`` for anything that is
    not a valid current item: unknown version, kind, payload type or field;
    a missing, null or mistyped required field; a value the source model
    refuses; a migration that fails (its exception is the ``__cause__``).
    """
    try:
        o = _Obj(data, "")
        version = o.req("v", "integer")
        if version != WIRE_VERSION:
            o = _Obj(_migrate(o.data, version, migrations), "")
        kind = o.req("kind", "string")
        cls = _ENVELOPES.get(kind)
        if cls is None:
            raise DecodeError(f"unknown kind {kind!r} (expected {' or '.join(map(repr, _ENVELOPES))})")
        item: HarnessStreamEvent = _read(o, cls, _ITEM_KEYS[kind])
        return item
    except DecodeError as e:
        if e.line is None and line is not None:
            raise e.at(line) from e.__cause__
        raise
    except (TypeError, ValueError) as e:
        raise DecodeError(f"invalid item: {e}", line) from None


def decode(text: str | bytes, *, migrations: Mapping[int, Migration] | None = None,
           line: int | None = None) -> HarnessStreamEvent:
    """Decode one wire line (str, or UTF-8 bytes) into a source item.

    Surrounding whitespace, including the line's own newline, is ignored.
    Raises DecodeError (a ValueError) naming ``line`` for malformed JSON,
    text that is not UTF-8, and everything ``from_json`` refuses; TypeError
    when ``text`` is neither str nor bytes.
    """
    if not isinstance(text, (str, bytes)):
        raise TypeError(f"decode() takes str or bytes, not {type(text).__name__}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"not UTF-8 text ({e.reason} at byte {e.start})", line) from None
    if not text.strip():
        raise DecodeError("empty line, expected a JSON object", line)
    return from_json(parse_json_line(text, line), migrations=migrations, line=line)


def parse_json_line(text: str, line: int | None = None) -> Any:
    """The JSON value of one line of text (its newline ignored), refusing
    NaN and Infinity. Raises DecodeError naming ``line`` and the column."""
    try:
        return _json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as e:
        where = f"column {e.colno}" if e.msg.endswith(" at") else f"at column {e.colno}"
        raise DecodeError(f"malformed JSON: {e.msg} {where}", line) from None
    except ValueError as e:
        raise DecodeError(f"malformed JSON: {e}", line) from None
    except RecursionError:
        raise DecodeError(f"malformed JSON: nested too deeply (values may nest {_json.MAX_JSON_DEPTH} levels)",
                          line) from None
