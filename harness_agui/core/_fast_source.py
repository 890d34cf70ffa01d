# Building source values without attrs' generated __init__: the private
# speed path of the a13n-harness adapter, kept here alone.
#
# ``from_a13n`` turns every item of a Run into three or four source values,
# and attrs' __init__ (a keyword frame that sets field after field through
# ``object.__setattr__``, then calls one validator function per field) costs
# more than the rest of the conversion. ``construction(cls, names)`` gives
# the statements that build a ``cls`` from local variables (the a13n
# adapter's generated converters include them), and ``builder(cls)`` the
# same statements as a function that takes every field of ``cls``
# positionally, in declaration order. Either gives what ``cls(*args)``
# returns, or raises what it raises:
#
#   - each field's kind (``core.fields``) gives a quick test that is true
#     only for values its check accepts (an ASCII ``str`` for a name that is
#     neither blank nor too long, an ``int`` in range, ``None`` where None is
#     allowed, an exact member class of a union); only when the quick test
#     fails is the field's own attrs validator called, with the same
#     arguments attrs would give it, so every error is the constructor's own;
#   - converters and ``__attrs_post_init__`` run as attrs runs them;
#   - the instance is made with ``object.__new__`` and its slots filled
#     through their descriptors, which is what attrs' __init__ ends up doing.
#
# The functions are generated from the declarations (one per class, built on
# first use), so there is no second list of rules to keep in step.
# ``tests/test_fast_source.py`` checks, on generated values of every class
# and on values every check refuses, that a builder gives an equal value or
# the same error as the constructor; ``bench/a13n.py`` measures the adapter
# with them, with the builders and with the public constructors.

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import attrs

from ._generated import define
from .fields import MAX_JSON_INT, MAX_SOURCE_ID_LENGTH, FieldSpec, field_spec

__all__ = ["builder", "construction"]

# The quick test of each kind, as an expression of the value ``{v}``; ``{c}``
# names the field's own constant (its choices, its class, its union's classes).
_QUICK: dict[str, str] = {
    "text": "type({v}) is str and {v}.isascii()",
    "name": f"type({{v}}) is str and {{v}}.isascii() and {{v}} != '' and len({{v}}) <= {MAX_SOURCE_ID_LENGTH} "
            "and not {v}.isspace()",
    "id_text": f"type({{v}}) is str and {{v}}.isascii() and len({{v}}) <= {MAX_SOURCE_ID_LENGTH}",
    "index": "type({v}) is int and {v} >= 0",
    "count": f"type({{v}}) is int and 0 <= {{v}} <= {MAX_JSON_INT}",
    "bool": "({v} is True or {v} is False)",
    "json": "{v} is None",
    "content": "{v} is None",
    "args": "type({v}) is str and {v}.isascii()",
    "text_or_object": "type({v}) is str and {v}.isascii()",
    "instant": "type({v}) is _datetime and type({v}.tzinfo) is _timezone and 1 < {v}.year < 9999",
    "bytes": "type({v}) is bytes",
    "choice": "type({v}) is str and {v} in {c}",
    "nested": "type({v}) is {c}",
    "part": "type({v}) in {c}",
    "delta": "type({v}) in {c}",
    "payload": "type({v}) in {c}",
    "tuple": "type({v}) is tuple and not {v}",
}


def _constant(spec: FieldSpec) -> Any:
    kind = spec.kind
    if kind.name == "choice":
        return frozenset(kind.choices)
    if kind.members:
        return frozenset(kind.members)
    return kind.cls


def construction(cls: type, values: list[str]) -> tuple[list[str], dict[str, Any]]:
    """The statements that build an instance of the declared class ``cls``
    into the local ``o`` from the locals named ``values`` (one per field, in
    declaration order; a converter may rebind them), and the names those
    statements use (for the namespace they are executed in)."""
    fields = attrs.fields(cls)
    namespace: dict[str, Any] = {"_cls": cls, "_new": object.__new__, "_datetime": datetime, "_timezone": timezone}
    lines = ["o = _new(_cls)"]
    for i, (a, v) in enumerate(zip(fields, values, strict=True)):
        spec = field_spec(a)
        namespace[f"_A{i}"] = a
        namespace[f"_V{i}"] = a.validator
        namespace[f"_S{i}"] = cls.__dict__[a.name].__set__
        namespace[f"_C{i}"] = _constant(spec)
        if a.converter is not None:
            namespace[f"_K{i}"] = a.converter
            if spec.kind.name == "instant":  # the converter changes only a datetime whose zone is not a timezone
                lines.append(f"if type({v}) is not _datetime or type({v}.tzinfo) is not _timezone: {v} = _K{i}({v})")
            else:
                lines.append(f"{v} = _K{i}({v})")
    for i, (a, v) in enumerate(zip(fields, values, strict=True)):
        spec = field_spec(a)
        quick = _QUICK.get(spec.kind.name)
        if quick is None:
            test = f"{v} is None" if spec.optional or spec.may_omit else None
        else:
            test = quick.format(v=v, c=f"_C{i}")
            if (spec.optional or spec.may_omit) and quick != "{v} is None":
                test = f"{v} is None or ({test})"
        lines.append(f"_V{i}(o, _A{i}, {v})" if test is None else f"if not ({test}): _V{i}(o, _A{i}, {v})")
    lines.extend(f"_S{i}(o, {v})" for i, v in enumerate(values))
    if hasattr(cls, "__attrs_post_init__"):
        lines.append("o.__attrs_post_init__()")
    return lines, namespace


@functools.cache
def builder(cls: type) -> Callable[..., Any]:
    """The builder of a declared source class (see the module comment)."""
    names = [f"f{i}" for i in range(len(attrs.fields(cls)))]
    lines, namespace = construction(cls, names)
    source = "\n".join([f"def build({', '.join(names)}):", *("    " + line for line in lines), "    return o"])
    build: Callable[..., Any] = define(source, "build", f"builder {cls.__name__}", namespace)
    build.__qualname__ = build.__name__ = f"build_{cls.__name__}"
    return build
