# The kinds of field the source model is declared with, and the one place
# where a declaration is turned into what each consumer needs.
#
# Every field of every class in ``core.source`` is written once, as
#
#     tool_call_id: str = attrs.field(**NAME(v1=True))
#     provider_name: str | None = attrs.field(default=None, **TEXT(optional=True))
#
# A ``Kind`` says what a value of the field is: the check run on it (the
# attrs validator, raising TypeError for a wrong Python type and ValueError
# for a value the Harness contract forbids, both naming ``Class.field``), the
# JSON form it takes on the wire (``wire``), the class or union it holds, and
# for a closed vocabulary its choices. Calling a kind gives the keyword
# arguments of ``attrs.field``: the validator (accepting None too when
# ``optional``), a converter where the kind has one, and the ``FieldSpec`` in
# the field's metadata, which keeps what only the wire format and the test
# strategies need: whether the field is written even at its default
# (``always``), the known names of an open vocabulary (``known``), and
# whether wire version 1 had it (``v1``, or the closed vocabulary version 1
# allowed for it).
#
# A class is registered with ``declared(tag)``: its tag in the tagged union it
# stands in (parts, deltas, payloads, content items, the two envelopes) and
# whether version 1 had it. From these declarations ``core.jsonform`` derives
# the wire shapes, ``wire.codec`` its reader, writer and version 1 check,
# ``core._fast_source`` its builders, ``harness_agui.a13n`` its field tables
# and ``testing.strategies`` the strategies of single values; nothing there
# repeats a field list or a vocabulary.

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timezone
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import Any, Literal, TypeVar

import attrs

from ._json import check_json, check_text

__all__ = [
    "WireKind",
    "Kind",
    "FieldSpec",
    "ClassSpec",
    "declared",
    "class_spec",
    "field_spec",
    "declared_classes",
    "union_members",
    "choices_of",
    "TEXT",
    "NAME",
    "DECIMAL",
    "INDEX",
    "COUNT",
    "BOOL",
    "JSON_VALUE",
    "OBJECT",
    "ARRAY",
    "ARGS",
    "TEXT_OR_OBJECT",
    "COUNTS",
    "INSTANT",
    "BYTES",
    "choice",
    "nested",
    "tuple_of",
    "union",
    "MAX_JSON_INT",
    "MAX_SOURCE_ID_LENGTH",
    "ID_TEXT",
    "type_error",
]

WireKind = Literal[
    "str",       # a string
    "int",       # an integer
    "bool",      # true or false
    "json",      # any JSON value
    "object",    # a JSON object
    "array",     # a JSON array
    "args",      # tool args: a string or a JSON object
    "text_or_object",  # input content: a string or a JSON object
    "choice",    # a string out of a closed vocabulary (``choices``)
    "datetime",  # an ISO 8601 string with an offset
    "binary",    # bytes, as base64 beside their size
    "content",   # a ToolContent: JSON under the name, anything else under <name>_typed
    "nested",    # an object of ``cls``
    "tuple",     # an array of objects of ``cls``
    "part",      # a tagged part
    "delta",     # a tagged delta
    "payload",   # a tagged payload
    "items",     # the items of a ContentList: each tagged, JSON ones as {"type": "json", "value": ...}
]

MAX_JSON_INT = 2**53 - 1
"""The largest integer every JSON reader keeps exactly (AG-UI's bound for counts)."""

MAX_SOURCE_ID_LENGTH = 512
"""The longest id or name a source value holds, in characters: every ``NAME`` and ``ID_TEXT`` field (a
thread, run, message, part, tool call or input id, a vocabulary's word). A real id is 36 to 40 characters;
this is what the server takes for a wire id (``serve.MAX_ID_LENGTH``), since a Run may be journaled under
its wire ids. An id is repeated in every fragment or delta an event is cut into, so the limit is what lets
``ProjectionOptions.max_event_bytes`` (at least ``core.state.MIN_EVENT_BYTES``) hold any event of any
item the source model accepts."""

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]

_SPEC = "harness_agui.source"  # the metadata key of a FieldSpec


@attrs.frozen
class FieldSpec:
    """What a field's declaration says beyond its attrs default."""

    kind: Kind
    optional: bool = False  # None is allowed (for JSON kinds, null is a value anyway)
    always: bool = False  # written on the wire even when it holds its default
    may_omit: bool = False  # required in Python, but may be left out (or null) on the wire, meaning None
    known: tuple[str, ...] = ()  # the known names of an open vocabulary (any other non-blank name is kept)
    v1: bool = False  # wire version 1 had this field
    v1_choices: tuple[str, ...] | None = None  # the closed vocabulary version 1 allowed, when narrower


@attrs.frozen
class Kind:
    """One kind of field value: its check, its JSON form and what it holds."""

    name: str
    wire: WireKind
    check: Validator
    cls: Any = None  # the class of a nested or tuple kind; the union alias of a union kind
    choices: tuple[str, ...] = ()
    converter: Callable[[Any], Any] | None = None

    def __call__(self, *, optional: bool = False, always: bool = False, may_omit: bool = False,
                 known: tuple[str, ...] = (), v1: bool | tuple[str, ...] = False) -> dict[str, Any]:
        """The keyword arguments of ``attrs.field`` for a field of this kind
        (its default, if any, is given beside them)."""
        spec = FieldSpec(self, optional=optional, always=always, may_omit=may_omit, known=known, v1=bool(v1),
                         v1_choices=v1 if isinstance(v1, tuple) else None)
        out: dict[str, Any] = {"validator": _optional(self.check) if optional or may_omit else self.check,
                               "metadata": {_SPEC: spec}}
        if self.converter is not None:
            out["converter"] = self.converter
        return out

    @property
    def members(self) -> tuple[type, ...]:
        """The classes a union kind admits (empty for other kinds)."""
        return typing.get_args(self.cls) if self.wire in ("part", "delta", "payload") else ()


def _optional(check: Validator) -> Validator:
    def optional(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            check(inst, attr, value)

    return optional


@attrs.frozen
class ClassSpec:
    """A declared class: its tag in the union it stands in, and whether wire version 1 had it."""

    cls: type
    tag: str | None
    tag_key: str = "type"
    v1: bool = False


_DECLARED: dict[type, ClassSpec] = {}
_T = TypeVar("_T", bound=type)


def declared(tag: str | None = None, *, v1: bool = False, tag_key: str = "type") -> Callable[[_T], _T]:
    """Register an attrs class of the source model (apply above ``@attrs.frozen``).
    Every field must be declared with a kind."""
    def register(cls: _T) -> _T:
        for a in attrs.fields(cls):
            if _SPEC not in a.metadata:
                raise TypeError(f"{cls.__name__}.{a.name} is not declared with a field kind")
        _DECLARED[cls] = ClassSpec(cls, tag, tag_key, v1)
        return cls

    return register


def class_spec(cls: type) -> ClassSpec:
    """The declaration of ``cls``; KeyError for a class that is not declared."""
    return _DECLARED[cls]


def declared_classes() -> Mapping[type, ClassSpec]:
    """Every declared class, in declaration order."""
    return MappingProxyType(_DECLARED)


def field_spec(attr: attrs.Attribute[Any]) -> FieldSpec:
    spec: FieldSpec = attr.metadata[_SPEC]
    return spec


def union_members(alias: Any) -> dict[str, type]:
    """The tag of each class of a union alias (``Part``), in the alias's order."""
    return {_DECLARED[cls].tag: cls for cls in typing.get_args(alias)}  # type: ignore[misc]


def choices_of(literal: Any) -> tuple[str, ...]:
    """The strings of a Literal type."""
    return tuple(typing.get_args(literal))


# -- checks ------------------------------------------------------------------------------
# Each takes (instance, attribute, value) as an attrs validator does, and builds
# its message only when it raises.

def type_error(inst: Any, attr: attrs.Attribute[Any], value: Any, expected: str) -> TypeError:
    return TypeError(
        f"{type(inst).__name__}.{attr.name} must be {expected}, not {type(value).__name__} ({value!r:.60})"
    )


def _where(inst: Any, attr: attrs.Attribute[Any]) -> str:
    return f"{type(inst).__name__}.{attr.name}"


def _text(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if type(value) is not str:
        if not isinstance(value, str):
            raise type_error(inst, attr, value, "str")
    if not value.isascii():
        check_text(value, _where(inst, attr))


def _id_text(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if type(value) is not str and not isinstance(value, str):
        raise type_error(inst, attr, value, "str")
    if len(value) > MAX_SOURCE_ID_LENGTH:  # before the text check, which reads the whole string
        raise ValueError(f"{_where(inst, attr)} is {len(value)} characters long; an id or name may have at most "
                         f"{MAX_SOURCE_ID_LENGTH}")
    if not value.isascii():
        check_text(value, _where(inst, attr))


def _name(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    _id_text(inst, attr, value)
    if not value.strip():
        raise ValueError(f"{_where(inst, attr)} must not be blank")


def _decimal(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str):
        raise type_error(inst, attr, value, "str (a decimal number)")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"{_where(inst, attr)} must be a decimal number, got {value!r:.60}") from None
    if not number.is_finite() or value != value.strip() or len(value) > 100:
        raise ValueError(f"{_where(inst, attr)} must be a finite decimal number, got {value!r:.60}")


def _index(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise type_error(inst, attr, value, "int")
    if value < 0:
        raise ValueError(f"{_where(inst, attr)} must be >= 0, got {value}")


def _count(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    _index(inst, attr, value)
    if value > MAX_JSON_INT:
        raise ValueError(f"{_where(inst, attr)} must be <= 2**53 - 1, got {value}")


def _bool(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise type_error(inst, attr, value, "bool")


def _json(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    check_json(value, _where(inst, attr))


def _object(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        raise type_error(inst, attr, value, "dict")
    check_json(value, _where(inst, attr))


def _array(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, list):
        raise type_error(inst, attr, value, "list")
    check_json(value, _where(inst, attr))


def _args(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, str):
        _text(inst, attr, value)
    elif isinstance(value, dict):
        check_json(value, _where(inst, attr))
    else:
        raise type_error(inst, attr, value, "str, dict or None")


def _text_or_object(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, dict):
        check_json(value, _where(inst, attr))
    elif isinstance(value, str):
        check_text(value, _where(inst, attr))
    else:
        raise type_error(inst, attr, value, "str or dict")


def _counts(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        raise type_error(inst, attr, value, "dict of str to int, or None")
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, int) or isinstance(v, bool):
            raise type_error(inst, attr, value, "dict of str to int")
        check_text(k, f"{_where(inst, attr)} (a key)")
        if abs(v) > MAX_JSON_INT:
            raise ValueError(f"{_where(inst, attr)}[{k!r}] must be within +-(2**53 - 1), got {v}")


def _fixed_offset(value: Any) -> Any:
    """An aware datetime with a zone (say ZoneInfo) as the same instant at a
    fixed UTC offset, so that it survives the wire format unchanged (an
    ambiguous local time never compares equal across zones otherwise). The
    wall time is kept and only the zone relabelled, which cannot overflow
    (``astimezone`` goes through UTC, which can)."""
    if isinstance(value, datetime) and value.tzinfo is not None and type(value.tzinfo) is not timezone:
        offset = value.utcoffset()
        if offset is not None:
            return value.replace(tzinfo=timezone(offset), fold=0)
    return value


def _instant(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, datetime):
        raise type_error(inst, attr, value, "datetime")
    if value.utcoffset() is None:
        raise ValueError(f"{_where(inst, attr)} must be timezone-aware, got {value!r}")
    try:
        if value.year == 1 or value.year == 9999:  # only within a day of the calendar's ends can UTC overflow
            value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{_where(inst, attr)} {value.isoformat()} is outside the range of "
                         "datetime in UTC (years 1 to 9999)") from None


def _instance_of(*types: type) -> Validator:
    names = " or ".join(t.__name__ for t in types)

    def check(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, types):
            raise type_error(inst, attr, value, names)

    return check


def _choice(choices: tuple[str, ...]) -> Validator:
    def check(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
        _text(inst, attr, value)
        if value not in choices:
            raise ValueError(f"{_where(inst, attr)} must be one of {', '.join(choices)}; got {value!r}")

    return check


def _tuple_check(cls: type) -> Validator:
    def check(inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, tuple):
            raise type_error(inst, attr, value, f"tuple of {cls.__name__}")
        for v in value:
            if not isinstance(v, cls):
                raise type_error(inst, attr, v, f"{cls.__name__} items")

    return check


# -- the kinds ----------------------------------------------------------------------------

TEXT = Kind("text", "str", _text)
"""Any text (valid Unicode: no lone surrogate)."""
NAME = Kind("name", "str", _name)
"""Non-blank text of at most MAX_SOURCE_ID_LENGTH characters: an id, a name, a vocabulary's word."""
ID_TEXT = Kind("id_text", "str", _id_text)
"""Text of at most MAX_SOURCE_ID_LENGTH characters, blank allowed: an id a provider or capability may leave empty."""
DECIMAL = Kind("decimal", "str", _decimal)
"""A finite decimal number written as text ("0.0125"), kept exactly."""
INDEX = Kind("index", "int", _index)
"""An int >= 0 (a part index)."""
COUNT = Kind("count", "int", _count)
"""An int from 0 to 2**53 - 1 (a sequence, a token count): JSON-safe."""
BOOL = Kind("bool", "bool", _bool)
JSON_VALUE = Kind("json", "json", _json)
"""Any JSON value (None is JSON null)."""
OBJECT = Kind("object", "object", _object)
"""A JSON object (a dict with str keys)."""
ARRAY = Kind("array", "array", _array)
"""A JSON array (a list)."""
ARGS = Kind("args", "args", _args)
"""Tool args: their JSON text, or a JSON object."""
TEXT_OR_OBJECT = Kind("text_or_object", "text_or_object", _text_or_object)
"""Text, or a JSON object (input content)."""
COUNTS = Kind("counts", "object", _counts)
"""A dict of str to int (usage details)."""
INSTANT = Kind("instant", "datetime", _instant, converter=_fixed_offset)
"""A timezone-aware datetime whose instant exists in UTC, kept at a fixed offset."""
BYTES = Kind("bytes", "binary", _instance_of(bytes))


def choice(literal: Any) -> Kind:
    """A closed vocabulary: one of the strings of the Literal type ``literal``."""
    choices = choices_of(literal)
    return Kind("choice", "choice", _choice(choices), choices=choices)


def nested(cls: type) -> Kind:
    """An instance of ``cls``."""
    return Kind("nested", "nested", _instance_of(cls), cls=cls)


def tuple_of(cls: type, check: Validator | None = None) -> Kind:
    """A tuple of instances of ``cls`` (``check`` replaces the default check)."""
    return Kind("tuple", "tuple", check or _tuple_check(cls), cls=cls)


def union(alias: Any, wire: Literal["part", "delta", "payload"]) -> Kind:
    """An instance of one of the classes of the union ``alias``, written tagged."""
    return Kind(wire, wire, _instance_of(*typing.get_args(alias)), cls=alias)
