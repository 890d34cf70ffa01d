# Subagents: one stream carrying a root Run and its delegated child Runs.
#
# Properties over generated delegating streams (harness_agui.testing's
# delegating_runs): replay equivalence at every cut, resume atomicity at
# every cut, observe atomicity on refused items, AG-UI validity of every
# complete stream, one SUBAGENT lifecycle per announced child, attribution,
# unique ids. Then one example per mapping rule and per error.

import asyncio
import pickle
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from ag_ui.core import BaseEvent, CustomEvent
from ag_ui_validate.pytest_plugin import validate_agui
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core.errors import (
    AfterTerminalError,
    AguiObservationError,
    FinishedSubagentError,
    ForeignRunError,
    HistoryError,
    SequenceGapError,
    SequenceOrderError,
    UnknownSubagentError,
)
from harness_agui.core.reduce import CUT_OFF, advance
from harness_agui.core.state import INITIAL_STATE
from harness_agui.testing import (
    RunWriter,
    cut_points,
    delegating_histories,
    delegating_runs,
    replay_stable_processors,
    simulated_delegation,
)
from harness_agui.wire.codec import decode

processors = st.none() | replay_stable_processors()
ROOT = "run-root"


class InjectedFailure(Exception):
    pass


@attrs.define
class FailOnce:
    inner: Any
    at: int
    calls: int = 0

    def __call__(self, item: Any, event: BaseEvent) -> BaseEvent | None:
        self.calls += 1
        if self.calls == self.at:
            raise InjectedFailure(f"processor call {self.at}")
        return event if self.inner is None else self.inner(item, event)


async def aiter_of(items: Sequence[Any], *, fail_at: int | None = None) -> AsyncIterator[Any]:
    for i, item in enumerate(items):
        if i == fail_at:
            raise InjectedFailure(f"history item {i}")
        yield item
    if fail_at == len(items):
        raise InjectedFailure("history end")


def observe_all(items: Sequence[Any], processor: Any = None) -> tuple[HarnessAguiObserver, list[tuple]]:
    observer = HarnessAguiObserver(processor)
    return observer, [observer.observe(item) for item in items]


def dumped(events: Any) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in events]


def validate(events: Any) -> list[str]:
    report = validate_agui(dumped(events))
    assert report.internal_errors == []
    return [f"{d.rule} {d.severity} at {d.event_index}: {d.message}" for d in report.diagnostics
            if d.severity in ("error", "warning")]


def types(events: Any) -> list[str]:
    return [e.type.value for e in events]


def assert_fresh(observer: HarnessAguiObserver) -> None:
    assert observer.is_fresh and observer.state is INITIAL_STATE
    assert observer.snapshot() == () and observer.event_count == 0


# -- properties ----------------------------------------------------------------------------

@settings(max_examples=60)
@given(history=delegating_histories(), processor=processors, data=st.data())
def test_resuming_any_prefix_of_a_delegating_stream_then_observing_the_rest_equals_live_observation(
        history, processor, data):
    reference, outputs = observe_all(history, processor)
    expected = reference.snapshot()
    counts = [0]
    for out in outputs:
        counts.append(counts[-1] + len(out))

    async def every_cut() -> None:
        for k in data.draw(cut_points(len(history)), label="cuts"):
            observer = HarnessAguiObserver(processor)
            assert await observer.resume(aiter_of(history[:k])) is None
            assert observer.snapshot() == expected[:counts[k]]
            assert observer.state.subagents == advance_all(history[:k], processor).subagents
            for j in range(k, len(history)):
                assert observer.observe(history[j]) == outputs[j], f"cut {k}, live item {j}"
            assert observer.snapshot() == expected
            assert observer.state == reference.state

    asyncio.run(every_cut())


def advance_all(items: Sequence[Any], processor: Any = None) -> Any:
    state = INITIAL_STATE
    for item in items:
        state = advance(state, item, processor)
    return state


@settings(max_examples=25)
@given(history=delegating_histories(max_children=3), processor=processors, data=st.data())
def test_a_resume_of_a_delegating_stream_failing_anywhere_leaves_the_observer_fresh(history, processor, data):
    reference, _ = observe_all(history, processor)
    counting = FailOnce(processor, at=0)
    observe_all(history, counting)

    async def retry(observer: HarnessAguiObserver) -> None:
        assert_fresh(observer)
        await observer.resume(aiter_of(history))
        assert observer.snapshot() == reference.snapshot()
        assert observer.state == reference.state

    async def every_position() -> None:
        for i in data.draw(cut_points(len(history)), label="source fails at"):
            observer = HarnessAguiObserver(processor)
            with pytest.raises(InjectedFailure):
                await observer.resume(aiter_of(history, fail_at=i))
            await retry(observer)
        for at in data.draw(cut_points(counting.calls, first=1), label="processor fails at"):
            observer = HarnessAguiObserver(FailOnce(processor, at))
            with pytest.raises(InjectedFailure):
                await observer.resume(aiter_of(history))
            await retry(observer)

    asyncio.run(every_position())


FAULTS = ("repeat", "go_back", "skip", "unknown_run", "first_not_at_zero", "after_root_terminal")


@st.composite
def faulty_streams(draw: st.DrawFn) -> tuple[list[Any], Any, type[Exception]]:
    """A valid prefix of a delegating stream and an item that must be refused."""
    run = draw(delegating_runs(complete=True))
    items = list(run.items)
    children = [i for i, item in enumerate(items) if item.run_id != ROOT]
    fault = draw(st.sampled_from(FAULTS))
    if fault in ("repeat", "go_back", "skip") and children:
        at = draw(st.sampled_from(children))
        item = items[at]
        if fault == "repeat":
            return items[:at + 1], item, SequenceOrderError
        if fault == "go_back" and item.sequence > 0:
            return items[:at + 1], attrs.evolve(item, sequence=draw(st.integers(0, item.sequence - 1))), \
                SequenceOrderError
        # A skip on a child's first item: a run that does not start like a subagent Run.
        error = SequenceGapError if item.sequence > 0 else ForeignRunError
        return items[:at], attrs.evolve(item, sequence=item.sequence + draw(st.integers(1, 5))), error
    cut = draw(st.integers(1, len(items)))
    item = attrs.evolve(items[0], run_id="run-stranger", sequence=draw(st.integers(1, 9)))
    if fault == "first_not_at_zero":
        item = attrs.evolve(items[1 if len(items) > 1 else 0], run_id="run-stranger", sequence=0)
        if item == attrs.evolve(items[0], run_id="run-stranger"):
            item = attrs.evolve(item, sequence=1)
    if fault == "after_root_terminal" and run.complete:
        return items, attrs.evolve(items[0], run_id="run-late"), UnknownSubagentError
    return items[:cut], item, ForeignRunError


@settings(max_examples=80)
@given(case=faulty_streams(), processor=processors)
def test_an_item_out_of_its_runs_order_is_refused_and_changes_nothing(case, processor):
    prefix, item, error = case
    observer, _ = observe_all(prefix, processor)
    before = observer.state
    with pytest.raises(error) as info:
        observer.observe(item)
    assert type(info.value) is error and isinstance(info.value, HistoryError)
    assert observer.state is before
    staged = HarnessAguiObserver(processor)
    with pytest.raises(error):
        asyncio.run(staged.resume([*prefix, item]))
    assert_fresh(staged)


@settings(max_examples=120)
@given(run=delegating_runs(complete=True))
def test_every_complete_delegating_stream_projects_onto_a_valid_agui_run(run):
    observer, _ = observe_all(run.items)
    assert validate(observer.snapshot()) == []


@settings(max_examples=80)
@given(run=delegating_runs())
def test_each_announced_child_gets_one_subagent_lifecycle_that_matches_its_fate(run):
    observer, _ = observe_all(run.items)
    events = list(observer.snapshot())
    started = {e.subagent_run_id: e for e in events if e.type.value == "SUBAGENT_STARTED"}
    ended = {e.subagent_run_id: e for e in events if e.type.value in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR")}
    assert len(started) == len([e for e in events if e.type.value == "SUBAGENT_STARTED"])
    for sub in run.subagents:
        if sub.fate == "not_started":
            assert sub.run_id not in started
            continue
        start = started[sub.run_id]
        assert start.name == sub.name
        assert start.parent_subagent_run_id == (None if sub.parent_run_id == ROOT else sub.parent_run_id)
        calls = {e.tool_call_id for e in events if e.type.value == "TOOL_CALL_START"
                 and e.subagent_run_id == (None if sub.parent_run_id == ROOT else sub.parent_run_id)}
        assert start.parent_tool_call_id in calls
        end = ended.get(sub.run_id)
        if sub.fate == "running":
            assert end is None
        elif sub.fate == "completed":
            assert end.type.value == "SUBAGENT_FINISHED" and end.outcome.type == "success"
        elif sub.fate == "failed":
            assert end.type.value == "SUBAGENT_ERROR" and end.code == "failed"
        else:
            assert end.type.value == "SUBAGENT_ERROR" and end.code == CUT_OFF
        assert observer.state.subagents[sub.run_id].status == ("cut_off" if sub.fate == "cut_off" else
                                                               sub.fate if sub.fate != "running" else "running")
    if run.complete:
        assert set(ended) == set(started)
        assert not any(s.running or s.status == "pending" for s in observer.state.subagents.values())


@settings(max_examples=80)
@given(run=delegating_runs())
def test_every_event_of_a_child_item_carries_its_run_id_and_no_root_event_does(run):
    observer, outputs = observe_all(run.items)
    for item, out in zip(run.items, outputs, strict=True):
        for event in out:
            kind = event.type.value
            if kind.startswith(("RUN_", "SUBAGENT_")):
                continue
            if isinstance(event, CustomEvent) and event.value.get("run_id") is not None:
                assert event.subagent_run_id == (None if event.value["run_id"] == ROOT else event.value["run_id"])
            elif item.run_id != ROOT:
                # a child's own events, or closing events of a child its parent's item ended
                assert event.subagent_run_id is not None
    assert types(observer.snapshot()).count("RUN_STARTED") == (1 if run.items else 0)
    assert types(observer.snapshot()).count("RUN_FINISHED") + types(observer.snapshot()).count("RUN_ERROR") == (
        1 if run.complete else 0)


@settings(max_examples=80)
@given(run=delegating_runs())
def test_message_and_tool_call_ids_are_unique_across_the_stream(run):
    observer, _ = observe_all(run.items)
    messages, calls = [], []
    owner_of_call: dict[str, str | None] = {}
    for event in observer.snapshot():
        kind = event.type.value
        if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START", "TOOL_CALL_RESULT"):
            messages.append(event.message_id)
        if kind == "TOOL_CALL_START":
            calls.append(event.tool_call_id)
            owner_of_call[event.tool_call_id] = event.subagent_run_id
        if kind == "TOOL_CALL_RESULT":
            assert owner_of_call[event.tool_call_id] == event.subagent_run_id
            assert event.message_id == f"{event.tool_call_id}:result"
    assert len(messages) == len(set(messages))
    assert len(calls) == len(set(calls))


@settings(max_examples=30)
@given(run=delegating_runs())
def test_a_delegating_state_pickles(run):
    state = advance_all(run.items)
    copy = pickle.loads(pickle.dumps(state))
    assert copy == state and copy.snapshot() == state.snapshot()


# -- real a13n-harness Runs ------------------------------------------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "a13n"


@pytest.mark.parametrize(("name", "children", "ends"), [
    ("subagent", 1, ["SUBAGENT_FINISHED"]),
    ("nested_subagents", 2, ["SUBAGENT_FINISHED", "SUBAGENT_FINISHED"]),
    ("failed_child", 1, ["SUBAGENT_ERROR"]),
])
def test_the_real_delegating_runs_of_a13n_harness_project_onto_valid_agui_runs(name, children, ends):
    lines = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    items = [decode(line) for line in lines if line.strip()]
    observer, _ = observe_all(items)
    events = list(observer.snapshot())
    assert validate(events) == []
    assert len(observer.state.subagents) == children
    assert [e.type.value for e in events if e.type.value in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR")] == ends
    assert types(events).count("SUBAGENT_STARTED") == children
    resumed = HarnessAguiObserver()
    asyncio.run(resumed.resume(items))
    assert resumed.snapshot() == observer.snapshot()


# -- examples: the mapping --------------------------------------------------------------------

def writers() -> tuple[RunWriter, RunWriter]:
    return RunWriter("thread-root", ROOT), RunWriter("thread-child", "run-child")


def announce(child: RunWriter, parent: str = ROOT, call: str = "call-d", name: str = "researcher") -> RunWriter:
    return child.run_started().delegation("started", child_run_id=child.run_id, subagent=name,
                                          parent_run_id=parent, parent_tool_call_id=call, status="running")


def end(parent: RunWriter, child: str, action: str = "completed", call: str = "call-d",
        name: str = "researcher") -> RunWriter:
    return parent.delegation(action, child_run_id=child, subagent=name, parent_run_id=parent.run_id,
                             parent_tool_call_id=call, status=action)


def delegating_root() -> RunWriter:
    root, _ = writers()
    root.run_started().request().user("go").text(0, ["[root] ", "delegating"])
    return root.tool_call(1, "delegate", "call-d", ['{"task": "x"}']).model_request_completed()


DELEGATED = len(delegating_root().items)
"""How many items delegating_root() writes: the child's items may come after them."""


def test_the_child_run_started_is_held_until_its_announcement_emits_subagent_started():
    root = delegating_root()
    _, child = writers()
    announce(child)
    observer, _ = observe_all(root.items)
    assert observer.observe(child.items[0]) == ()
    out = observer.observe(child.items[1])
    assert types(out) == ["SUBAGENT_STARTED", "CUSTOM", "CUSTOM"]
    started = out[0]
    assert (started.subagent_run_id, started.name, started.parent_tool_call_id,
            started.parent_subagent_run_id) == ("run-child", "researcher", "call-d", None)
    assert [e.value["sequence"] for e in out[1:]] == [0, 1]
    assert all(e.subagent_run_id == "run-child" for e in out[1:])
    assert observer.state.subagents["run-child"].status == "running"


def test_a_childs_text_tool_calls_and_results_are_ordinary_events_with_its_subagent_run_id():
    root = delegating_root()
    _, child = writers()
    announce(child).request().thinking(0, ["hm"], signature="sig").text(1, ["[child] ", "facts"])
    child.tool_call(2, "search", "call-s", ['{}']).model_request_completed().tool_result("call-s", "search", "ok")
    observer, _ = observe_all(root.items + child.items)
    mine = [e for e in observer.snapshot() if getattr(e, "subagent_run_id", None) == "run-child"]
    assert {"REASONING_MESSAGE_START", "REASONING_ENCRYPTED_VALUE", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
            "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "CUSTOM"} <= set(types(mine))
    assert "RUN_STARTED" not in types(mine) and types(observer.snapshot()).count("RUN_STARTED") == 1
    text = next(e for e in mine if e.type.value == "TEXT_MESSAGE_START")
    assert text.message_id == "run-child:request-0:part-1:text"
    call = next(e for e in mine if e.type.value == "TOOL_CALL_START")
    assert call.parent_message_id == text.message_id


def test_a_completed_delegation_closes_the_childs_open_parts_and_finishes_with_its_last_text():
    root = delegating_root()
    _, child = writers()
    announce(child).request().text(0, ["first"]).request().open_text(0, ["[child] ", "the ", "answer"])
    end(root, "run-child")
    observer, _ = observe_all(root.items[:-1] + child.items)
    out = observer.observe(root.items[-1])
    assert types(out) == ["TEXT_MESSAGE_END", "SUBAGENT_FINISHED", "CUSTOM"]
    assert out[0].subagent_run_id == "run-child" and out[2].subagent_run_id is None
    assert out[1].result == "[child] the answer" and out[1].outcome.type == "success"


def test_a_completed_child_without_text_finishes_without_a_result():
    root = delegating_root()
    _, child = writers()
    announce(child).request()
    end(root, "run-child")
    observer, _ = observe_all(root.items[:-1] + child.items)
    (finished,) = [e for e in observer.observe(root.items[-1]) if e.type.value == "SUBAGENT_FINISHED"]
    assert finished.result is None and "result" not in finished.model_fields_set


def test_a_failed_delegation_closes_the_childs_open_parts_and_reports_subagent_error():
    items = simulated_delegation(child_fails=True)
    observer, outputs = observe_all(items)
    at = next(i for i, item in enumerate(items) if item.run_id == ROOT and item.sequence > 0
              and getattr(item.event, "kind", None) == "delegation")
    assert types(outputs[at]) == ["TEXT_MESSAGE_END", "SUBAGENT_ERROR", "CUSTOM"]
    error = outputs[at][1]
    assert error.code == "failed" and "planner" in error.message
    assert observer.state.subagents[f"{ROOT}-planner"].status == "failed"
    assert validate(observer.snapshot()) == []


def test_a_nested_delegation_names_its_parent_subagent_and_passes_through_unchanged():
    items = simulated_delegation()
    observer, _ = observe_all(items)
    events = list(observer.snapshot())
    starts = [e for e in events if e.type.value == "SUBAGENT_STARTED"]
    assert [(s.subagent_run_id, s.parent_subagent_run_id, s.parent_tool_call_id) for s in starts] == [
        (f"{ROOT}-planner", None, "call-delegate"),
        (f"{ROOT}-worker", f"{ROOT}-planner", f"call-delegate:{ROOT}-planner"),
    ]
    assert [e.type.value for e in events if e.type.value.startswith("SUBAGENT_")] == [
        "SUBAGENT_STARTED", "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_FINISHED"]
    worker = [e for e in events if getattr(e, "subagent_run_id", None) == f"{ROOT}-worker"]
    extensions = [i.sequence for i in items if i.run_id == f"{ROOT}-worker" and i.event.__class__.__name__ ==
                  "ExtensionEvent"]
    assert [e.value["sequence"] for e in worker if e.type.value == "CUSTOM"] == extensions == [0, 1, 2, 9]
    assert validate(events) == []


def test_a_delegation_end_closes_the_childs_running_children_deepest_first():
    root = delegating_root()
    _, child = writers()
    grand = RunWriter("thread-grand", "run-grand")
    announce(child).request().tool_call(0, "delegate", "call-g", ['{}']).model_request_completed()
    announce(grand, parent="run-child", call="call-g", name="worker").request().open_text(0, ["deep"])
    end(root, "run-child")
    observer, _ = observe_all(root.items[:-1] + child.items + grand.items)
    out = observer.observe(root.items[-1])
    assert [(e.type.value, getattr(e, "subagent_run_id", None)) for e in out] == [
        ("TEXT_MESSAGE_END", "run-grand"), ("SUBAGENT_ERROR", "run-grand"), ("SUBAGENT_FINISHED", "run-child"),
        ("CUSTOM", None)]
    assert out[1].code == CUT_OFF


def test_the_root_terminal_cuts_off_every_running_child_deepest_first_before_run_finished():
    root = delegating_root()
    _, child = writers()
    grand = RunWriter("thread-grand", "run-grand")
    late = RunWriter("thread-late", "run-late")
    announce(child).request().open_text(0, ["child "]).tool_call(1, "delegate", "call-g", ['{}'])
    announce(grand, parent="run-child", call="call-g", name="worker").request().open_text(0, ["deep"])
    late.run_started()
    root.cancelled()
    observer, _ = observe_all(root.items[:-1] + child.items + grand.items + late.items)
    out = observer.observe(root.items[-1])
    assert [(e.type.value, getattr(e, "subagent_run_id", None)) for e in out] == [
        ("TEXT_MESSAGE_END", "run-grand"), ("SUBAGENT_ERROR", "run-grand"),
        ("TEXT_MESSAGE_END", "run-child"), ("SUBAGENT_ERROR", "run-child"),
        ("CUSTOM", "run-late"), ("RUN_FINISHED", None)]
    assert {e.code for e in out if e.type.value == "SUBAGENT_ERROR"} == {CUT_OFF}
    assert {s.status for s in observer.state.subagents.values()} == {"cut_off"}
    assert validate(observer.snapshot()) == []


def test_a_delegation_end_for_a_child_that_never_ran_is_only_its_custom_event():
    root = delegating_root()
    end(root, "run-never", action="failed")
    observer, outputs = observe_all(root.items)
    assert types(outputs[-1]) == ["CUSTOM"] and observer.state.delegation is None


def test_ids_another_run_published_first_are_renamed_and_referenced_renamed():
    root = delegating_root()
    _, child = writers()
    # The child reuses the root's delegate call id and a part id; the root later reuses the child's part id.
    announce(child).request().text(0, ["a"], id="msg-1").tool_call(1, "search", "call-d", ['{}'])
    child.model_request_completed().tool_result("call-d", "search", "ok")
    end(root, "run-child").tool_result("call-d", "delegate", "done").request().text(0, ["b"], id="msg-1")
    root.completed("b")
    observer, _ = observe_all(root.items[:DELEGATED] + child.items + root.items[DELEGATED:])
    events = list(observer.snapshot())
    pick = [(e.type.value, getattr(e, "subagent_run_id", None), getattr(e, "tool_call_id", None),
             getattr(e, "message_id", None)) for e in events if e.type.value.startswith(("TOOL_CALL_", "TEXT_"))]
    assert ("TOOL_CALL_START", None, "call-d", None) in pick
    assert ("TOOL_CALL_START", "run-child", "call-d:run-child", None) in pick
    assert ("TOOL_CALL_ARGS", "run-child", "call-d:run-child", None) in pick
    assert ("TOOL_CALL_END", "run-child", "call-d:run-child", None) in pick
    assert ("TOOL_CALL_RESULT", "run-child", "call-d:run-child", "call-d:run-child:result") in pick
    assert ("TOOL_CALL_RESULT", None, "call-d", "call-d:result") in pick
    assert ("TEXT_MESSAGE_START", "run-child", None, "msg-1") in pick
    assert ("TEXT_MESSAGE_START", None, None, f"msg-1:{ROOT}") in pick
    assert ("TEXT_MESSAGE_END", None, None, f"msg-1:{ROOT}") in pick
    assert validate(events) == []


def test_a_processor_sees_subagent_events_and_may_rewrite_their_content_but_not_their_attribution():
    items = simulated_delegation()

    def shout(item: Any, event: BaseEvent) -> BaseEvent:
        if event.type.value == "SUBAGENT_FINISHED":
            return event.model_copy(update={"result": {"said": event.result}})
        return event

    observer, _ = observe_all(items, shout)
    results = [e.result for e in observer.snapshot() if e.type.value == "SUBAGENT_FINISHED"]
    assert results == [{"said": "[worker] sunny all week"}, {"said": "[planner] worker said: sunny"}]

    def steal(item: Any, event: BaseEvent) -> BaseEvent:
        if getattr(event, "subagent_run_id", None) is not None and event.type.value == "TEXT_MESSAGE_CONTENT":
            return event.model_copy(update={"subagent_run_id": None})
        return event

    with pytest.raises(AguiObservationError, match="subagent_run_id"):
        observe_all(items, steal)


def test_a_run_that_never_delegates_has_no_delegation_state():
    root = delegating_root()
    root.completed("x")
    observer, _ = observe_all(root.items)
    assert observer.state.delegation is None and observer.state.subagents == {}


# -- examples: the errors -----------------------------------------------------------------

def refused(items: Sequence[Any], item: Any, error: type[Exception]) -> Exception:
    observer, _ = observe_all(items)
    before = observer.state
    with pytest.raises(error) as info:
        observer.observe(item)
    assert observer.state is before
    return info.value


def test_a_first_item_of_another_run_that_is_not_its_run_started_at_zero_is_a_foreign_run():
    root = delegating_root()
    _, child = writers()
    announce(child)
    error = refused(root.items, child.items[1], ForeignRunError)
    assert type(error) is ForeignRunError  # the class every reader of one Run's history raises
    assert (error.run_id, error.found_run_id) == (ROOT, "run-child")
    assert "run-child" in str(error) and ROOT in str(error)
    late = attrs.evolve(child.items[0], sequence=3)
    assert type(refused(root.items, late, ForeignRunError)) is ForeignRunError


def test_a_second_item_that_is_not_the_announcement_is_an_unknown_subagent():
    root = delegating_root()
    _, child = writers()
    child.run_started().request()
    error = refused(root.items + child.items[:1], child.items[1], UnknownSubagentError)
    assert "never announced" in str(error)


def test_an_announcement_naming_an_unknown_or_unannounced_parent_is_an_unknown_subagent():
    root = delegating_root()
    _, child = writers()
    announce(child, parent="run-nobody")
    error = refused(root.items + child.items[:1], child.items[1], UnknownSubagentError)
    assert (error.subagent_run_id, error.parent_run_id) == ("run-child", "run-nobody")
    pending = RunWriter("thread-p", "run-pending").run_started()
    _, child = writers()
    announce(child, parent="run-pending")
    refused(root.items + pending.items + child.items[:1], child.items[1], UnknownSubagentError)


def test_an_announcement_naming_a_finished_parent_is_a_finished_subagent():
    root = delegating_root()
    _, child = writers()
    announce(child).request()
    end(root, "run-child")
    grand = announce(RunWriter("thread-g", "run-grand"), parent="run-child")
    prefix = root.items[:DELEGATED] + child.items + root.items[DELEGATED:] + grand.items[:1]
    error = refused(prefix, grand.items[1], FinishedSubagentError)
    assert isinstance(error, AfterTerminalError)
    assert (error.run_id, error.subagent_run_id, error.root_run_id) == ("run-grand", "run-child", ROOT)


def test_an_item_of_a_finished_child_is_a_finished_subagent():
    root = delegating_root()
    _, child = writers()
    announce(child).request().text(0, ["late"])
    end(root, "run-child")
    prefix = root.items[:DELEGATED] + child.items[:3] + root.items[DELEGATED:]
    error = refused(prefix, child.items[3], FinishedSubagentError)
    assert (error.run_id, error.subagent_run_id, error.sequence) == ("run-child", "run-child", 3)
    cancelled = delegating_root()
    cancelled.cancelled()
    refused(cancelled.items[:-1] + child.items[:3] + cancelled.items[-1:], child.items[3], FinishedSubagentError)


def test_a_second_end_of_one_delegation_is_a_finished_subagent():
    root = delegating_root()
    _, child = writers()
    announce(child)
    end(root, "run-child")
    end(root, "run-child")
    refused(root.items[:DELEGATED] + child.items + root.items[DELEGATED:-1], root.items[-1], FinishedSubagentError)


def test_a_delegation_end_from_a_run_that_did_not_start_the_child_is_an_unknown_subagent():
    root = delegating_root()
    _, child = writers()
    other = announce(RunWriter("thread-o", "run-other"), call="call-d", name="other")
    announce(child)
    end(other, "run-child")
    error = refused(root.items + other.items[:-1] + child.items, other.items[-1], UnknownSubagentError)
    assert (error.found_run_id, error.subagent_run_id, error.parent_run_id) == ("run-other", "run-child", ROOT)


def test_a_childs_own_order_is_checked_in_its_own_sequence_domain():
    root = delegating_root()
    _, child = writers()
    announce(child).request().text(0, ["a", "b"])
    prefix = root.items + child.items[:4]
    error = refused(prefix, child.items[3], SequenceOrderError)
    assert (error.run_id, error.expected) == ("run-child", 4)
    error = refused(prefix, child.items[5], SequenceGapError)
    assert (error.run_id, error.expected) == ("run-child", 4)
    refused(prefix, attrs.evolve(child.items[4], thread_id="thread-other"), ForeignRunError)


def test_a_terminal_result_of_a_child_is_refused():
    root = delegating_root()
    _, child = writers()
    announce(child).completed("no")
    refused(root.items + child.items[:2], child.items[2], AguiObservationError)


def test_an_item_of_a_new_run_after_the_root_terminal_is_refused():
    root = delegating_root()
    root.completed("x")
    late = RunWriter("thread-late", "run-late").run_started()
    error = refused(root.items, late.items[0], UnknownSubagentError)
    assert (error.run_id, error.found_run_id, error.subagent_run_id) == (ROOT, "run-late", "run-late")
    refused(root.items, late.request().items[1], ForeignRunError)
