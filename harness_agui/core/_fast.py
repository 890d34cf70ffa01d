# The reducer's private speed paths, all in one place.
#
# observe() builds a few immutable values per item: a token makes a new
# OpenPart, a new RunState for its Run, a new HistoryCursor and a new
# ProjectionState. Their public constructors cost more than the rest of a
# token's work (a NamedTuple's generated ``__new__`` is a Python frame with
# keyword handling; an attrs ``__init__`` sets field after field), so the
# reducer builds them here instead:
#
#   - a NamedTuple from all its values in field order, with ``tuple.__new__``
#     (what its generated ``__new__`` ends with);
#   - a frozen attrs instance (a class with an instance dict, no validators
#     or converters) by filling its ``__dict__`` the way attrs' ``__init__``
#     does.
#
# Each is equal to the public construction: ``tests/test_fast.py`` checks
# that, field by field, for every class built here, and ``bench/fast.py``
# measures each against its public path (a path stays here only while the
# bench shows it pays). Nothing else in the library takes a private path.

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # this module imports nothing of the core: every module may use it
    from .history import HistoryCursor
    from .state import OpenPart, ProjectionState, RunState

__all__ = ["new_tuple", "part_streamed", "run_state", "projection_state", "with_fields"]

new_tuple = tuple.__new__
"""``new_tuple(cls, values)``: the NamedTuple ``cls`` of all its values in field order."""
_new_object = object.__new__
_set_attr = object.__setattr__

_T = TypeVar("_T")


def part_streamed(part: OpenPart, streamed: int) -> OpenPart:
    """``part._replace(streamed=streamed)``, the one change a token makes."""
    index, kind, message_id, part_id, _, started, tool_name, pending, object_args_json, signature, retired = part
    return new_tuple(type(part), (index, kind, message_id, part_id, streamed, started, tool_name, pending,
                                  object_args_json, signature, retired))


def run_state(history: HistoryCursor, request_index: int | None, parent_message_id: str | None,
              parts: tuple[OpenPart, ...], run: RunState) -> RunState:
    """``run._replace(history=..., request_index=..., parent_message_id=..., parts=...)``
    (``calls``, ``message_ids`` and the renames as in ``run``)."""
    return new_tuple(type(run), (history, request_index, parent_message_id, parts, run[4], run[5], run[6], run[7]))


def projection_state(state: ProjectionState, root: RunState, events: Any) -> ProjectionState:
    """``attrs.evolve(state, root=root, events=events)``."""
    new = _new_object(type(state))
    fields = state.__dict__.copy()
    fields["root"] = root
    fields["events"] = events
    _set_attr(new, "__dict__", fields)
    return new


def with_fields(value: _T, **changes: Any) -> _T:
    """``attrs.evolve(value, **changes)`` for a frozen attrs class with an
    instance dict and no validators or converters (ProjectionState,
    SubagentState), without evolve's per-call introspection."""
    new = _new_object(type(value))
    fields = value.__dict__.copy()
    assert changes.keys() <= fields.keys(), f"no such field: {sorted(changes.keys() - fields.keys())}"
    fields.update(changes)
    _set_attr(new, "__dict__", fields)
    return new
