# The JSON form of source values: plain dicts with the wire format's field
# names. The wire codec writes it behind its envelope, and the reducer puts it
# into CUSTOM events, so a CUSTOM value carries exactly what a journal line
# would (binary data aside: a CUSTOM value names it, a journal holds it).
#
# ``SHAPES`` says for every class of the source model how each field is
# written. It is derived from the classes' declarations (``core.fields``):
# the wire name is the attrs field name, the ``kind`` says which JSON it
# becomes (``wire.codec`` reads the same table back, strictly). Classes that
# stand in a tagged union (parts, deltas, payloads, content items, the two
# envelopes) carry their tag first (under ``type``, or ``kind`` for an
# envelope). A field whose value equals its default is left out, except where
# it is declared ``always`` (the fields version 1 always wrote, so that what
# version 1 could say is written the same way).
#
# Tool content (``ToolContent``) is the one field with two spellings: a JSON
# value is written as it is under the field's name (``content``), and
# anything else under ``<name>_typed`` as a tagged object (``binary``,
# ``media``, or ``list`` whose items are tagged too, JSON ones as
# ``{"type": "json", "value": ...}``). So a tool result that happens to be a
# JSON object shaped like a tagged item can never be mistaken for one.
#
# Binary data is base64 with its ``size`` beside it, the reference first and
# the bytes last. With ``binary_data=False`` (what the projection uses) the
# bytes are left out and only the reference remains: media type, size,
# identifier.

from __future__ import annotations

import base64
from typing import Any

import attrs

from .fields import FieldSpec, WireKind, class_spec, declared_classes, field_spec, union_members
from .source import (
    BinaryContent,
    ContentList,
    DeferredToolCall,
    MediaContent,
    Part,
    PartDelta,
    Payload,
    RunResult,
    ToolContent,
)

__all__ = [
    "payload_to_json",
    "result_to_json",
    "deferred_call_to_json",
    "content_to_json",
    "value_to_json",
    "FieldKind",
    "WireField",
    "Shape",
    "SHAPES",
    "PART_TYPES",
    "DELTA_TYPES",
    "PAYLOAD_TYPES",
    "CONTENT_TYPES",
    "TYPED_SUFFIX",
]

FieldKind = WireKind

TYPED_SUFFIX = "_typed"


@attrs.frozen
class WireField:
    name: str
    kind: FieldKind
    spec: FieldSpec
    cls: type | None = None
    choices: tuple[str, ...] = ()
    always: bool = False
    required: bool = False
    default: Any = None  # the value left out when not ``always`` (a fresh one from ``default_factory``)
    default_factory: Any = None
    union: dict[str, type] | None = None  # a tagged union's classes by tag

    def is_default(self, value: Any) -> bool:
        default = self.default_factory() if self.default_factory is not None else self.default
        return type(value) is type(default) and value == default


@attrs.frozen
class Shape:
    cls: type
    tag: str | None
    fields: tuple[WireField, ...]
    keys: frozenset[str]  # every key its JSON object may have
    tag_key: str = "type"
    v1: bool = False


def _shape(cls: type) -> Shape:
    """The wire shape of a declared class: every attrs field in order."""
    declaration = class_spec(cls)
    out = []
    for a in attrs.fields(cls):
        spec = field_spec(a)
        kind = spec.kind
        factory = a.default.factory if isinstance(a.default, attrs.Factory) else None  # type: ignore[arg-type]
        out.append(WireField(
            name=a.name, kind=kind.wire, spec=spec,
            cls=kind.cls if kind.wire in ("nested", "tuple") else None,
            choices=kind.choices,
            always=spec.always,
            required=a.default is attrs.NOTHING and not spec.may_omit,
            default=None if a.default is attrs.NOTHING or factory is not None else a.default,
            default_factory=factory,
            union=union_members(kind.cls) if kind.members else None,
        ))
    keys = {f.name for f in out} | {f.name + TYPED_SUFFIX for f in out if f.kind == "content"}
    keys |= {"size" for f in out if f.kind == "binary"}
    if declaration.tag is not None:
        keys.add(declaration.tag_key)
    return Shape(cls, declaration.tag, tuple(out), frozenset(keys), declaration.tag_key, declaration.v1)


SHAPES: dict[type, Shape] = {cls: _shape(cls) for cls in declared_classes()}

PART_TYPES: dict[str, type] = union_members(Part)
DELTA_TYPES: dict[str, type] = union_members(PartDelta)
PAYLOAD_TYPES: dict[str, type] = union_members(Payload)
CONTENT_TYPES: dict[str, type] = {SHAPES[c].tag: c for c in (BinaryContent, MediaContent, ContentList)}  # type: ignore[misc]


# -- writing ------------------------------------------------------------------------------

def value_to_json(value: Any, *, binary_data: bool = True) -> dict[str, Any]:
    """The JSON object of any source value in ``SHAPES`` (fresh dicts; JSON
    fields are shared with the value). Raises TypeError for anything else."""
    shape = SHAPES.get(type(value))
    if shape is None:
        raise TypeError(f"not a source value: {type(value).__name__}")
    if type(value) is BinaryContent:
        return _binary_to_json(value, binary_data)
    out: dict[str, Any] = {shape.tag_key: shape.tag} if shape.tag is not None else {}
    for f in shape.fields:
        v = getattr(value, f.name)
        if not f.required and not f.always and f.is_default(v):
            continue
        kind = f.kind
        if kind == "content":
            if isinstance(v, (BinaryContent, MediaContent, ContentList)):
                out[f.name + TYPED_SUFFIX] = value_to_json(v, binary_data=binary_data)
            else:
                out[f.name] = v
        elif kind in ("nested", "part", "delta", "payload"):
            out[f.name] = value_to_json(v, binary_data=binary_data)
        elif kind == "tuple":
            out[f.name] = [value_to_json(x, binary_data=binary_data) for x in v]
        elif kind == "items":
            out[f.name] = [_item_to_json(x, binary_data) for x in v]
        elif kind == "datetime":
            out[f.name] = v.isoformat()
        else:
            out[f.name] = v
    return out


def _binary_to_json(value: BinaryContent, binary_data: bool) -> dict[str, Any]:
    # The reference first, the (long) data last, so that a journal line reads well.
    out: dict[str, Any] = {"type": "binary", "media_type": value.media_type, "size": len(value.data)}
    if value.identifier is not None:
        out["identifier"] = value.identifier
    if value.vendor_metadata is not None:
        out["vendor_metadata"] = value.vendor_metadata
    if binary_data:
        out["data"] = base64.b64encode(value.data).decode("ascii")
    return out


def _item_to_json(item: Any, binary_data: bool) -> dict[str, Any]:
    if isinstance(item, (BinaryContent, MediaContent)):
        return value_to_json(item, binary_data=binary_data)
    return {"type": "json", "value": item}


def content_to_json(content: ToolContent, *, binary_data: bool = True) -> Any:
    """The JSON of tool content: a JSON value as it is, anything else as its
    tagged object (what the wire writes under ``<field>_typed``)."""
    if isinstance(content, (BinaryContent, MediaContent, ContentList)):
        return value_to_json(content, binary_data=binary_data)
    return content


def payload_to_json(payload: Payload, *, binary_data: bool = True) -> dict[str, Any]:
    """The wire JSON object of a payload (fresh dicts; JSON fields are shared)."""
    if type(payload) not in _PAYLOAD_CLASSES:
        raise TypeError(f"not a Harness payload: {type(payload).__name__}")
    return value_to_json(payload, binary_data=binary_data)


_PAYLOAD_CLASSES = frozenset(PAYLOAD_TYPES.values())


def deferred_call_to_json(call: DeferredToolCall) -> dict[str, Any]:
    return value_to_json(call)


def result_to_json(result: RunResult, *, binary_data: bool = True) -> dict[str, Any]:
    """The wire JSON object of a run result."""
    if type(result) is not RunResult:
        raise TypeError(f"not a RunResult: {type(result).__name__}")
    return value_to_json(result, binary_data=binary_data)
