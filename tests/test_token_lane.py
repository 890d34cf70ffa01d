# The reducer's token lane (core/reduce.py) does for most items what the
# general transition does, written out for speed. These tests hold the two
# to the same result: for every item of generated histories (plain,
# delegating, with processors, and cut by an invalid item) ``step`` and the
# general ``_step`` give equal states and records, or raise the same error.

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness_agui.core import reduce as reducer
from harness_agui.core.errors import AguiObservationError
from harness_agui.core.source import HarnessEvent, PartDeltaEvent, TextPartDelta
from harness_agui.core.state import INITIAL_STATE
from harness_agui.testing import histories, invalid_cases, replay_stable_processors
from harness_agui.testing.builder import SourceBuilder
from harness_agui.testing.delegation import delegating_histories

processors = st.none() | replay_stable_processors()


def both_ways(items: list[Any], processor: Any = None) -> int:
    """Step ``items`` through ``step`` and through ``_step`` side by side,
    asserting equal results at every item; return how many items the token
    lane took."""
    state = INITIAL_STATE
    taken = 0
    for item in items:
        try:
            expected = reducer._step(state, item, processor)
        except Exception as error:  # the lane must fail the same way
            with pytest.raises(type(error)) as raised:
                reducer.step(state, item, processor)
            assert str(raised.value) == str(error)
            return taken
        if isinstance(item, HarnessEvent) and isinstance(item.event, PartDeltaEvent):
            taken += reducer._token_step(state, item, item.event, processor) is not None
        got = reducer.step(state, item, processor)
        assert got[1] == expected[1]
        assert got[0] == expected[0]
        assert list(got[0].events) == list(expected[0].events)
        state = got[0]
    return taken


@given(items=histories(), processor=processors)
def test_the_lane_and_the_general_step_agree_on_every_item(items: list[Any], processor: Any) -> None:
    both_ways(items, processor)


@given(items=delegating_histories(), processor=processors)
def test_the_lane_and_the_general_step_agree_in_delegating_streams(items: list[Any], processor: Any) -> None:
    both_ways(items, processor)


@given(case=invalid_cases(), processor=processors)
def test_the_lane_and_the_general_step_refuse_the_same_item_the_same_way(case: Any, processor: Any) -> None:
    both_ways([*case.history, case.item], processor)


def long_run() -> list[Any]:
    """Model requests of a streamed thought, a streamed answer and a tool
    call with streamed args, then its result: tokens, mostly."""
    b = SourceBuilder().user("plan a trip")
    for n in range(20):
        b.request()
        b.thinking(0, [f"step {n}.{k} " for k in range(10)], signature=f"sig-{n}")
        b.text(1, [f"word{k} " for k in range(10)])
        b.tool_call(2, "lookup", f"call-{n}", ['{"q": ', f'"{n}"', "}"])
        b.tool_result(f"call-{n}", "lookup", {"ok": n})
    return b.completed("done").items


def test_the_lane_takes_the_tokens_of_a_long_run() -> None:
    items = long_run()
    tokens = sum(isinstance(i, HarnessEvent) and isinstance(i.event, PartDeltaEvent) for i in items)
    assert tokens == 20 * 24
    # Every token streams into the one open part: the lane takes all but the
    # signature deltas, which replace the part's signature and take _step.
    assert both_ways(items) == tokens - 20


def test_a_token_for_a_part_that_is_not_open_is_refused_by_the_general_step() -> None:
    items = long_run()
    state = INITIAL_STATE
    for item in items[:4]:  # the user input, the request notice, the thinking start and its first token
        state = reducer.step(state, item)[0]
    assert [p.index for p in state.parts] == [0]
    stray = attrs.evolve(items[4], event=PartDeltaEvent(index=3, delta=TextPartDelta(content_delta="stray")))
    with pytest.raises(AguiObservationError, match="not open"):
        reducer.step(state, stray)
    with pytest.raises(AguiObservationError, match="changed kind"):
        reducer.step(state, attrs.evolve(items[4], event=PartDeltaEvent(
            index=0, delta=TextPartDelta(content_delta="text in a thought"))))
