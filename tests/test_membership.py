"""Stream membership (``core.membership``): the child lifecycle's one table,
and the one test of the notice that announces a child Run, as every reader
uses them."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.core.errors import FinishedSubagentError, ForeignRunError, UnknownSubagentError
from harness_agui.core.history import StreamCursor, advance_stream
from harness_agui.core.membership import announcement, child_transition, delegation_end, named_child
from harness_agui.core.notices import is_run_started
from harness_agui.testing import RunWriter
from harness_agui.wire.codec import decode

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "a13n"
ORDERS = ("strict", "tap", "unchecked")
STATUSES = (None, "pending", "running", "completed", "failed", "cut_off")
OUTCOMES = {"pending", "running", "foreign", "unannounced", "finished"}


def real(name: str) -> list[HarnessStreamEvent]:
    return [decode(line, line=n) for n, line in enumerate((FIXTURES / f"{name}.jsonl").read_text().splitlines(), 1)]


def writers() -> tuple[RunWriter, RunWriter]:
    root = RunWriter("thread-root", "run-root").run_started().request().user("go")
    root.tool_call(0, "delegate", "call-d", ['{"task": "x"}']).model_request_completed()
    child = RunWriter("thread-child", "run-child").run_started()
    child.delegation("started", child_run_id="run-child", subagent="researcher", parent_run_id="run-root",
                     parent_tool_call_id="call-d", status="running")
    return root, child


def child_items() -> tuple[list[HarnessStreamEvent], RunWriter]:
    root, child = writers()
    return list(root.items), child


def opening_item() -> HarnessStreamEvent:
    _, child = child_items()
    return child.items[0]


def announcing_item() -> HarnessStreamEvent:
    _, child = child_items()
    return child.items[1]


def plain_item(sequence: int = 0) -> HarnessStreamEvent:
    _, child = child_items()
    return attrs.evolve(child.request().items[2], sequence=sequence)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("status", STATUSES)
def test_every_status_and_input_of_every_policy_has_an_outcome_and_nothing_else(order, status):
    for item in (opening_item(), announcing_item(), plain_item(), plain_item(5)):
        assert child_transition(order, status, item) in OUTCOMES


def test_under_the_strict_order_a_child_opens_with_run_started_at_zero_then_announces_itself():
    assert child_transition("strict", None, opening_item()) == "pending"
    assert child_transition("strict", "pending", announcing_item()) == "running"
    assert child_transition("strict", None, plain_item()) == "foreign"
    assert child_transition("strict", None, attrs.evolve(opening_item(), sequence=3)) == "foreign"
    assert child_transition("strict", None, announcing_item()) == "foreign"
    assert child_transition("strict", "pending", plain_item(1)) == "unannounced"
    assert child_transition("strict", "running", announcing_item()) == "running"  # a second one is an item
    for status in ("completed", "failed", "cut_off"):
        assert child_transition("strict", status, plain_item(4)) == "finished"


def test_under_the_tap_a_child_may_start_with_its_announcement_and_unchecked_anything_starts_one():
    assert child_transition("tap", None, announcing_item()) == "running"
    assert child_transition("tap", None, attrs.evolve(opening_item(), sequence=3)) == "pending"
    assert child_transition("tap", "pending", plain_item(2)) == "pending"
    assert child_transition("tap", None, plain_item()) == "foreign"
    assert child_transition("unchecked", None, plain_item(7)) == "pending"
    assert child_transition("unchecked", "completed", plain_item(7)) == "pending"  # it starts afresh


def test_an_announcement_is_the_childs_own_started_notice_and_nothing_else():
    notice = announcement(announcing_item())
    assert notice is not None and (notice.parent_run_id, notice.subagent) == ("run-root", "researcher")
    root, _ = child_items()
    ended = RunWriter("thread-root", "run-root").delegation(
        "completed", child_run_id="run-child", subagent="researcher", parent_run_id="run-root",
        parent_tool_call_id="call-d", status="completed").items[0]
    started_by_parent = RunWriter("thread-root", "run-root").delegation(
        "started", child_run_id="run-child", subagent="researcher", parent_run_id="run-root",
        parent_tool_call_id="call-d", status="running").items[0]
    assert announcement(ended) is None and announcement(started_by_parent) is None
    assert announcement(opening_item()) is None and all(announcement(i) is None for i in root)
    assert delegation_end(ended) is not None and delegation_end(announcing_item()) is None  # type: ignore[arg-type]
    assert named_child(ended) == "run-child" and named_child(announcing_item()) is None


@pytest.mark.parametrize("name", ["subagent", "nested_subagents"])
def test_every_child_of_a_real_run_opens_with_run_started_at_zero_and_announces_itself_at_one(name):
    items = real(name)
    root = items[0].run_id
    firsts: dict[str, list[HarnessStreamEvent]] = {}
    for item in items:
        if item.run_id != root:
            firsts.setdefault(item.run_id, []).append(item)
    assert firsts
    for run_items in firsts.values():
        first, second = run_items[:2]
        assert (first.sequence, is_run_started(first)) == (0, True)
        assert second.sequence == 1 and announcement(second) is not None
        assert child_transition("strict", None, first) == "pending"
        assert child_transition("strict", "pending", second) == "running"


def test_a_new_run_whose_item_at_zero_is_not_run_started_is_refused_by_the_projection_and_kept_by_a_store():
    # Membership is the projection's (the table); the stream cursor of the stores checks order only.
    root, _ = child_items()
    stray = plain_item(0)
    observer = HarnessAguiObserver()
    for item in root:
        observer.observe(item)
    before = observer.state
    with pytest.raises(ForeignRunError, match="starts with its lifecycle run_started at sequence 0"):
        observer.observe(stray)
    assert observer.state is before
    cursor = StreamCursor.of("run-root")
    for item in root:
        cursor = advance_stream(cursor, item)
    after = advance_stream(cursor, stray)
    assert after.cursor_of("run-child") is not None and after.next_position == cursor.next_position + 1
    with pytest.raises(ForeignRunError):  # a first item anywhere else is no child Run to any reader
        advance_stream(cursor, plain_item(1))


# The reducer against the table: a child brought to each status, then one item of each input at the child's
# next sequence; what the observer does must be what the table says.
_FAULTS = {"foreign": ForeignRunError, "unannounced": UnknownSubagentError, "finished": FinishedSubagentError}


def _child_at(status: str | None) -> tuple[list[HarnessStreamEvent], RunWriter]:
    root, child = child_items()
    if status is None:
        return root, RunWriter("thread-child", "run-child")
    if status == "pending":
        return root + child.items[:1], RunWriter("thread-child", "run-child").run_started()
    if status == "completed":
        root_writer, _ = writers()
        ended = root_writer.delegation("completed", child_run_id="run-child", subagent="researcher",
                                       parent_run_id="run-root", parent_tool_call_id="call-d", status="completed")
        return root + child.items + ended.items[len(root):], child
    return root + child.items, child


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("status", [None, "pending", "running", "completed"])
@pytest.mark.parametrize("kind", ["opening", "announcement", "item"])
def test_the_projection_does_to_a_childs_item_what_the_table_says(order, status, kind):
    prefix, writer = _child_at(status)
    if kind == "opening":
        writer.run_started()
    elif kind == "announcement":
        writer.delegation("started", child_run_id="run-child", subagent="researcher", parent_run_id="run-root",
                          parent_tool_call_id="call-d", status="running")
    else:
        writer.observation("progress", {"step": 1})
    item = writer.items[-1]
    observer = HarnessAguiObserver(order=order)
    for earlier in prefix:
        observer.observe(earlier)
    outcome = child_transition(order, status, item)
    if outcome in _FAULTS:
        before = observer.state
        with pytest.raises(_FAULTS[outcome]):
            observer.observe(item)
        assert observer.state is before
        return
    events = observer.observe(item)
    subagent = observer.state.subagents["run-child"]
    assert subagent.status == outcome  # unchecked, a finished child that sends again starts afresh
    assert (events == ()) == (outcome == "pending")  # a pending child's items wait for its announcement
