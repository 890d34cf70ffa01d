# The reducer's private speed paths (core/_fast.py) build exactly what the
# public constructors build: every value the reducer makes along generated
# histories, plain and delegating, is rebuilt through the public path and
# compared field by field (and by type), so a field added to a class, or a
# change in how attrs fills an instance, fails here instead of in a Run.

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from harness_agui.core import _fast
from harness_agui.core.reduce import advance
from harness_agui.core.state import INITIAL_STATE, OpenPart, ProjectionState, RunLedger, RunState, SubagentState
from harness_agui.testing import complete_histories, live_histories
from harness_agui.testing.delegation import delegating_histories


def _public(value: Any) -> Any:
    """``value`` rebuilt through its class's public constructor."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*value)
    return type(value)(*(getattr(value, a.name) for a in attrs.fields(type(value))))


def _same(fast: Any, public: Any) -> None:
    assert type(fast) is type(public)
    assert fast == public
    if hasattr(public, "__dict__") and not isinstance(public, tuple):
        assert list(vars(fast).items()) == list(vars(public).items())


@given(st.one_of(complete_histories(), live_histories(), delegating_histories()))
def test_every_value_the_reducer_builds_equals_the_one_its_public_constructor_builds(items: list[Any]) -> None:
    state = INITIAL_STATE
    for item in items:
        state = advance(state, item)
        _same(state, _public(state))
        runs = [state.root, *(sub.run for sub in state.subagents.values())]
        for run in runs:
            _same(run, _public(run))
            for part in run.parts:
                _same(part, _public(part))
        for sub in state.subagents.values():
            _same(sub, _public(sub))


def test_each_fast_builder_equals_its_public_counterpart() -> None:
    part = OpenPart(2, "text", "m", part_id="p", streamed=3)
    _same(_fast.part_streamed(part, 9), part._replace(streamed=9))
    run = RunState(parts=(part,), ledger=RunLedger(request_index=1))
    history = run.history._replace(next_sequence=5)
    _same(_fast.new_tuple(RunState, (history, (), run.ledger)), run._replace(history=history, parts=()))
    state = ProjectionState(root=run, announced=3)
    _same(_fast.new_tuple(ProjectionState, (RunState(), *state[1:])), state._replace(root=RunState()))
    sub = SubagentState("run-child", run)
    _same(_fast.with_fields(sub, status="running", depth=2), attrs.evolve(sub, status="running", depth=2))
