# Stream membership: which items of a root Run's stream belong to a child
# Run, and where each child Run is in its life. One module, one table, as
# h11 keeps its connection's states in ``_state.py``.
#
# A Run that delegates publishes one stream: its own items and those of its
# child Runs (and theirs), interleaved, each numbering its own from 0. What a
# real a13n-harness child Run forwards (INPUT_SPACE.md, section 2) is always
# the same opening: its lifecycle ``run_started`` at sequence 0, then, at
# sequence 1 and under its own run id, its *announcement*: the delegation
# ``inline_delegation`` "started" notice that names its parent Run. Its
# delegation *ends* with a "completed" or "failed" notice under the
# delegating Run. So a child Run goes
#
#     (unseen) --opening--> pending --announcement--> running --end--> finished
#
# and every reader asks this module, and nothing else, what an item is to
# that life:
#
#   - ``announcement``: whether an item announces its own Run as a child Run
#     of the parent its notice names. The one test of the notice that links a
#     child: the reducer links the child with it; the JSONL reader tells a
#     chosen stream's children from the other Runs of a file by it; the
#     journals (both backends, ``host.journal.announced_parent``) adopt a
#     child's first item that was filed as a stream of its own; and
#     ``check_journal`` names each child's parent;
#   - ``delegation_end`` / ``named_child``: the notice that ends a child's
#     delegation (the reducer closes the child), and the child that a
#     delegation notice of another Run names (the JSONL reader finds a child
#     it passed over);
#   - ``child_transition``: the lifecycle itself, one table per order policy
#     (``core.history``): the status a child Run takes after one of its own
#     items, or the fault that refuses the item. Its opening is its
#     run_started at sequence 0 (under "tap" anywhere, or its announcement
#     first; "unchecked" takes anything).
#
# The opening and the order are two rules, each with one home. The stream
# cursor of ``core.history`` (every store, the JSONL reader, the supervisor)
# checks order only: a run id it has not seen starts at sequence 0, whatever
# the item, and a first item anywhere else is a ForeignRunError rather than
# a gap. Membership (a run_started at sequence 0, then the announcement) is
# this table's, and only a projection applies it: a store keeps a Run that a
# projection may still refuse (a file of several root Runs read unchosen is
# one stream, whose second root reads as a child until its own fault shows).
# A real a13n-harness child always opens with run_started at sequence 0, and
# one that does not is refused by the projection (tests/test_membership.py).
#
# Ends (a delegation end naming the child, the root's terminal result) come
# under other Runs and need the projection's state (which Run delegated,
# which children are below); the reducer applies them to running children
# only (``core.reduce``: ``_delegation_end``, ``_terminal_step``).

from __future__ import annotations

from typing import Literal

from .notices import DelegationNotice, delegation_notice, is_run_started
from .source import HarnessEvent, HarnessStreamEvent

__all__ = ["announcement", "delegation_end", "named_child", "child_transition", "ChildInput",
           "ChildOutcome"]

ChildInput = Literal["opening", "announcement", "item"]
"""What an item of a child Run is to its lifecycle: its opening (run_started at sequence 0, or under "tap" a
run_started anywhere), its own announcement, or any other item."""

ChildOutcome = Literal["pending", "running", "foreign", "unannounced", "finished"]
"""What ``child_transition`` makes of an item: the child's status after it ("pending": the child waits for its
announcement, and so do its items; "running": it is linked now or already was), or the fault that refuses it
("foreign": nothing says the item is a child Run's, "unannounced": its second item is not its announcement,
"finished": its delegation already ended)."""

# (order policy, the child's status, the item's input) -> outcome. A status is None for a run id the
# stream has not seen; "finished" stands for completed, failed and cut off. Every pair is here.
_NEW, _PENDING, _RUNNING, _FINISHED = None, "pending", "running", "finished"
_TABLE: dict[tuple[str, str | None, ChildInput], ChildOutcome] = {
    ("strict", _NEW, "opening"): "pending",
    ("strict", _NEW, "announcement"): "foreign",
    ("strict", _NEW, "item"): "foreign",
    ("strict", _PENDING, "opening"): "unannounced",
    ("strict", _PENDING, "announcement"): "running",
    ("strict", _PENDING, "item"): "unannounced",
    # Under the tap a child's items may come before its announcement, or start with it.
    ("tap", _NEW, "opening"): "pending",
    ("tap", _NEW, "announcement"): "running",
    ("tap", _NEW, "item"): "foreign",
    ("tap", _PENDING, "opening"): "pending",
    ("tap", _PENDING, "announcement"): "running",
    ("tap", _PENDING, "item"): "pending",
    # Unchecked, anything starts a child Run.
    ("unchecked", _NEW, "opening"): "pending",
    ("unchecked", _NEW, "announcement"): "running",
    ("unchecked", _NEW, "item"): "pending",
    ("unchecked", _PENDING, "opening"): "pending",
    ("unchecked", _PENDING, "announcement"): "running",
    ("unchecked", _PENDING, "item"): "pending",
}
for _order in ("strict", "tap", "unchecked"):
    for _input in ("opening", "announcement", "item"):
        _TABLE[(_order, _RUNNING, _input)] = "running"  # a second announcement is an ordinary item
        # Unchecked, a child that finished and sends again starts afresh.
        _TABLE[(_order, _FINISHED, _input)] = _TABLE[(_order, _NEW, _input)] if _order == "unchecked" else "finished"
del _order, _input
# The rows whose outcome does not depend on the item (a running child's items, the most common): read from
# the table, so that most items need not be classified.
_UNIFORM = {(o, st): outcome for (o, st, i), outcome in _TABLE.items()
            if all(_TABLE[(o, st, other)] == outcome for other in ("opening", "announcement", "item"))}


def announcement(item: HarnessStreamEvent) -> DelegationNotice | None:
    """The notice of ``item`` when it announces its own Run as a child Run (an ``inline_delegation``
    "started" notice whose ``child_run_id`` is the item's run id), else None. Its ``parent_run_id`` names the
    parent, which the caller resolves."""
    if type(item) is not HarnessEvent:
        return None
    notice = delegation_notice(item.event)
    return notice if notice is not None and notice.action == "started" and notice.child_run_id == item.run_id \
        else None


def delegation_end(item: HarnessEvent) -> DelegationNotice | None:
    """The notice of ``item`` when it ends the delegation to a child Run ("completed" or "failed", naming
    the child), else None."""
    notice = delegation_notice(item.event)
    if notice is None or notice.action not in ("completed", "failed") or notice.child_run_id is None:
        return None
    return notice


def named_child(item: HarnessStreamEvent) -> str | None:
    """The child Run that a delegation notice of ``item`` names, when it names a Run other than the item's
    own (the delegating side of a delegation), else None."""
    if not isinstance(item, HarnessEvent):
        return None
    notice = delegation_notice(item.event)
    if notice is None or notice.child_run_id == item.run_id:
        return None
    return notice.child_run_id


def child_transition(order: str, status: str | None, item: HarnessStreamEvent) -> ChildOutcome:
    """The outcome of ``item``, an item of a child Run whose status is ``status`` (None: new to the stream;
    completed, failed and cut off are "finished"), under the ``order`` policy. See ``ChildOutcome``.
    Raises KeyError for an unknown policy, and nothing else."""
    if status is not None and status != _RUNNING and status != _PENDING:
        status = _FINISHED
    outcome = _UNIFORM.get((order, status))
    return outcome if outcome is not None else _TABLE[(order, status, _input_of(item, order))]


def _input_of(item: HarnessStreamEvent, order: str) -> ChildInput:
    if announcement(item) is not None:
        return "announcement"
    if is_run_started(item) and (item.sequence == 0 or order != "strict"):
        return "opening"
    return "item"
