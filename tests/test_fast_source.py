# The builders of core._fast_source are the constructors of the source model
# by another road: for every declared class, a generated value is rebuilt
# equal by its builder, and any field replaced by an odd value (a wrong type,
# a blank name, an id at and past its length limit, an out-of-range count, a
# lone surrogate, JSON too deep, a naive datetime, a zone to relabel) gives
# the builder exactly the outcome of the constructor: the same equal value,
# or the same exception with the same message.

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_agui.core._fast_source import builder
from harness_agui.core.fields import declared_classes
from harness_agui.core.source import (
    BinaryContent,
    Deferred,
    DeferredToolCall,
    ObservationEvent,
    RunResult,
    TextPart,
    TextPartDelta,
    ToolCallPart,
)
from harness_agui.testing.strategies import source_values

CLASSES = list(declared_classes())


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 7, 2**53, 2**64, 1.5, math.nan, "", " ", "\t", "x", "caf\u00e9", "bad \ud800",
    "success", "completed", "i" * 512, "i" * 513, " " * 513,
    b"", b"\xff\x00", bytearray(b"x"), (), ("x",), [], [1], {}, {"k": "v"}, {1: "one"},
    {"deep": _deep(300)}, object(), datetime(2026, 1, 1), datetime(2026, 1, 1, tzinfo=UTC),
    datetime(2026, 1, 1, tzinfo=ZoneInfo("Europe/Paris")), datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
    TextPart(content="hi"), TextPartDelta(content_delta="h"), ObservationEvent(name="n"),
    ToolCallPart(tool_name="f", args=None, tool_call_id="c"), BinaryContent(data=b"x", media_type="image/png"),
    RunResult(status="cancelled"), (DeferredToolCall(tool_call_id="c", tool_name="f"),),
    (DeferredToolCall(tool_call_id="c", tool_name="f"), DeferredToolCall(tool_call_id="c", tool_name="g")),
    Deferred(calls=(DeferredToolCall(tool_call_id="c", tool_name="f"),)),
]


def _fields(value: Any) -> list[Any]:
    return [getattr(value, a.name) for a in attrs.fields(type(value))]


def _outcome(make: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "value", make(*args)
    except (TypeError, ValueError) as e:
        return type(e).__name__, str(e)


def test_every_class_of_the_source_model_is_declared_and_has_a_builder() -> None:
    from harness_agui.core import source

    classes = {v for v in vars(source).values() if attrs.has(v) and v.__module__ == source.__name__}
    assert classes == set(CLASSES) and len(classes) == 35
    for cls in CLASSES:
        assert callable(builder(cls))


@settings(max_examples=30, deadline=None)
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@given(data=st.data())
def test_a_builder_rebuilds_any_value_of_its_class_equal(cls: type, data: st.DataObject) -> None:
    value = data.draw(source_values(cls))
    built = builder(cls)(*_fields(value))
    assert type(built) is cls and built == value
    assert _fields(built) == _fields(value)


@settings(max_examples=3, deadline=None)
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@given(data=st.data())
def test_a_builder_gives_the_constructors_outcome_for_every_odd_value_in_every_field(
        cls: type, data: st.DataObject) -> None:
    base = _fields(data.draw(source_values(cls)))
    for i, a in enumerate(attrs.fields(cls)):
        for odd in ODD_VALUES:
            args = [*base[:i], odd, *base[i + 1:]]
            expected = _outcome(cls, *args)
            got = _outcome(builder(cls), *args)
            assert got == expected, (cls.__name__, a.name, odd)
            if expected[0] == "value":
                assert _fields(got[1]) == _fields(expected[1])
                assert [type(x) for x in _fields(got[1])] == [type(x) for x in _fields(expected[1])]
