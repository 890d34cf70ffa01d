# JSON values cross this library in two directions: in from the Harness (tool
# args, tool results, extension payloads, run output) and out to AG-UI
# (CUSTOM values, run results). Both sides want the same two things: a check
# that a Python value really is JSON, and one compact, deterministic text
# form so that replay gives the same bytes as live observation.
#
# ``check_json`` is also where the limits of what can be emitted live, so
# that what the source model accepts is never refused later by a serialiser
# (a value accepted by ``observe()`` whose AG-UI event then could
# not be written stuck a Host's delivery cursor for good). The nesting limit,
# MAX_JSON_DEPTH = 240 arrays/objects, sits between two measured bounds
# (ag-ui-protocol 1.0, pydantic-core 2.50, a13n-harness 0.21):
#   - below: what a real Run carries. a13n-harness passes a tool result
#     nested up to 196 levels through a Run end to end (from 197 its own
#     ``all_messages()`` fails, pydantic's JSON parser stopping at 200), and
#     its terminal item then holds that result 5 levels deeper in the
#     HarnessState (201) and 4 deeper in the message history (200);
#   - above: what the serialisers write. ``model_dump_json`` and
#     ``ag_ui.encoder.EventEncoder`` give up on an event value nested more
#     than 253 levels, and the projection puts a source value at most 6
#     levels deeper into an event (a CUSTOM value's payload, a content list
#     item, an interrupt's metadata), so 240 + 6 leaves room to spare.
# Python's own JSON reader and writer stop near the recursion limit (about
# 1000 levels), far beyond both. Text must be valid Unicode: a lone
# surrogate (which a Python str can hold and a JSON "\ud800" escape can
# produce) cannot be written as UTF-8, and pydantic refuses it in keys and
# values alike. Integers must be printable by ``int.__str__``, which CPython
# refuses past 4300 digits; the bound here is 4000.

from __future__ import annotations

import json
import math
import re
from typing import Any, Union

JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]  # noqa: UP007 (recursive alias)

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_encode_str = json.encoder.encode_basestring  # type: ignore[attr-defined]


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The C encoder that ``_encoder.encode`` builds afresh on every call (with a
# float formatter and a marker dict), built once: the same text, about 1 us
# less per object on the reducer's path. Without markers it does not look
# for cycles; the values written here are JSON trees (``check_json`` refuses
# a cycle as too deep), and a cycle would still fail, with RecursionError.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_c_encode = None if _c_make_encoder is None else _c_make_encoder(
    None, _not_json, _encode_str, None, ":", ",", False, False, False)


def dumps(value: Any) -> str:
    """The compact text form of a JSON value (no spaces, UTF-8 kept as is)."""
    if type(value) is str:
        return _encode_str(value)  # type: ignore[no-any-return]
    if _c_encode is None:  # a Python without the C accelerator
        return _encoder.encode(value)
    return "".join(_c_encode(value, 0))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)  # json.loads builds one per call when given options


def loads(text: str | bytes) -> Any:
    """Parse JSON text, refusing the NaN and Infinity extensions."""
    if type(text) is not str:
        return json.loads(text, parse_constant=_reject_constant)  # bytes: json.loads finds their encoding
    return _decoder.decode(text)


MAX_JSON_DEPTH = 240
"""How many arrays/objects a JSON value may nest (``[[1]]`` nests 2)."""

MAX_INT_DIGITS = 4000
"""How many decimal digits a JSON integer may have."""

_INT_BITS = 13_287  # every int of at most this many bits has fewer than 4001 digits
_INT_TOO_LONG = 10**MAX_INT_DIGITS


def check_text(value: str, what: str) -> None:
    """Raise ValueError if ``value`` holds a lone surrogate, which no UTF-8
    writer and no AG-UI serialiser accepts."""
    if not value.isascii():
        m = _SURROGATE.search(value)
        if m is not None:
            raise ValueError(f"{what} contains a lone surrogate (U+{ord(m.group()):04X}), which is not Unicode text "
                             "and cannot be written as UTF-8")


def check_json(value: Any, what: str) -> None:
    """Raise TypeError unless ``value`` is built only of JSON types, and
    ValueError unless every serialiser can write it.

    Arrays must be lists and objects dicts with string keys, so that a value
    survives the wire format unchanged (a tuple would come back as a list).
    ValueError for: a non-finite float (JSON has no spelling for it), nesting
    deeper than MAX_JSON_DEPTH, a lone surrogate in a string or a key, an
    integer of more than MAX_INT_DIGITS digits.
    """
    # Level by level, so that the depth is a counter, not a tuple per element.
    level = [value]
    depth = 0
    while level:
        deeper: list[Any] = []
        for v in level:
            if v is None or v is True or v is False:
                continue
            if isinstance(v, str):
                if not v.isascii():
                    check_text(v, what)
            elif isinstance(v, int):
                if v.bit_length() > _INT_BITS and abs(v) >= _INT_TOO_LONG:
                    raise ValueError(f"{what} contains an integer of more than {MAX_INT_DIGITS} digits")
            elif isinstance(v, float):
                if not math.isfinite(v):
                    raise ValueError(f"{what} contains {v!r}, which is not a JSON number")
            elif isinstance(v, list):
                if depth == MAX_JSON_DEPTH:
                    raise ValueError(f"{what} is nested more than {MAX_JSON_DEPTH} arrays or objects deep")
                deeper.extend(v)
            elif isinstance(v, dict):
                if depth == MAX_JSON_DEPTH:
                    raise ValueError(f"{what} is nested more than {MAX_JSON_DEPTH} arrays or objects deep")
                for k in v:
                    if not isinstance(k, str):
                        raise TypeError(f"{what} has a non-string object key {k!r:.60}")
                    if not k.isascii():
                        check_text(k, f"{what} (an object key)")
                deeper.extend(v.values())
            else:
                raise TypeError(
                    f"{what} must be JSON (dict, list, str, int, float, bool or None), not {type(v).__name__}")
        level = deeper
        depth += 1


_SURROGATE = re.compile("[\ud800-\udfff]")


_COPY_DEPTH = 100_000  # far past any parsed JSON text; only a cycle gets there


def copy_json(value: Any) -> Any:
    """A copy of a JSON value whose lists and dicts are all new, as plain
    ``list`` and ``dict`` (other values are shared: JSON scalars are
    immutable). Iterative, so any depth a JSON parser gives is copied
    without RecursionError, unlike ``copy.deepcopy``. Raises ValueError for
    a value that contains itself."""
    if not isinstance(value, (list, dict)):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 1)]
    while stack:
        v, parent, key, depth = stack.pop()
        if depth > _COPY_DEPTH:
            raise ValueError(f"a JSON value nested more than {_COPY_DEPTH} levels deep (does it contain itself?)")
        new: Any
        if isinstance(v, dict):
            new = dict(v)
            for k, x in new.items():
                if isinstance(x, (list, dict)):
                    stack.append((x, new, k, depth + 1))
        else:
            new = list(v)
            for i, x in enumerate(new):
                if isinstance(x, (list, dict)):
                    stack.append((x, new, i, depth + 1))
        parent[key] = new
    return root[0]


def escape_surrogates(text: str) -> str:
    if text.isascii():
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
