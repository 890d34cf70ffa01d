# JSON values cross this library in two directions: in from the Harness (tool
# args, tool results, extension payloads, run output) and out to AG-UI
# (CUSTOM values, run results). Both sides want the same two things: a check
# that a Python value really is JSON, and one compact, deterministic text
# form so that replay gives the same bytes as live observation.

from __future__ import annotations

import json
import math
import re
from typing import Any, Union

JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]  # noqa: UP007 (recursive alias)

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dumps(value: Any) -> str:
    """The compact text form of a JSON value (no spaces, UTF-8 kept as is)."""
    return _encoder.encode(value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def loads(text: str | bytes) -> Any:
    """Parse JSON text, refusing the NaN and Infinity extensions."""
    return json.loads(text, parse_constant=_reject_constant)


def check_json(value: Any, what: str) -> None:
    """Raise TypeError unless ``value`` is built only of JSON types.

    Arrays must be lists and objects dicts with string keys, so that a value
    survives the wire format unchanged (a tuple would come back as a list).
    Non-finite floats raise ValueError: JSON has no spelling for them.
    """
    stack = [value]
    while stack:
        v = stack.pop()
        if v is None or isinstance(v, (str, bool, int)):
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                raise ValueError(f"{what} contains {v!r}, which is not a JSON number")
            continue
        if isinstance(v, list):
            stack.extend(v)
            continue
        if isinstance(v, dict):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise TypeError(f"{what} has a non-string object key {k!r}")
                stack.append(item)
            continue
        raise TypeError(f"{what} must be JSON (dict, list, str, int, float, bool or None), not {type(v).__name__}")


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    if text.isascii():
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
