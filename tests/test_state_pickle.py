# A ProjectionState is a plain value: it pickles and unpickles to an equal
# state at every point of any Run, and the copy carries on exactly like the
# original (same events for the next item, same snapshot).

from __future__ import annotations

import io
import pickle
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from harness_agui import INITIAL_STATE, ProjectionState
from harness_agui.core.reduce import advance, reduce
from harness_agui.testing import complete_histories, live_histories


def _round_trip(state: ProjectionState) -> ProjectionState:
    copy = pickle.loads(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(copy) is ProjectionState
    return copy  # type: ignore[no-any-return]


@given(st.one_of(complete_histories(), live_histories()))
def test_every_state_of_any_run_pickles_to_an_equal_state(items: list[Any]) -> None:
    state = INITIAL_STATE
    assert _round_trip(state) == state
    for item in items:
        copy = _round_trip(state)
        assert copy == state
        # The copy carries on exactly like the original.
        after, events = reduce(state, item)
        copy_after, copy_events = reduce(copy, item)
        assert copy_events == events
        assert copy_after == after
        state = after
    copy = _round_trip(state)
    assert copy == state
    assert copy.snapshot() == state.snapshot()
    assert copy.events == state.events


@given(complete_histories())
def test_a_pickled_state_is_no_larger_than_its_records_need(items: list[Any]) -> None:
    state = INITIAL_STATE
    for item in items:
        state = advance(state, item)
    # Kinds are not pickled as objects: a record is its type name, its
    # timestamp and its values. (The classes the pickle names are checked, not
    # its bytes: a generated tool may well be called "Kind".)
    classes: set[tuple[str, str]] = set()

    class Recording(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            classes.add((module, name))
            return super().find_class(module, name)

    Recording(io.BytesIO(pickle.dumps(state))).load()
    assert not [(m, n) for m, n in classes if m.startswith("ag_ui") or n == "Kind"]
