# The reducer's private speed paths, all in one place.
#
# observe() builds a few immutable values per item: a token makes a new
# OpenPart, a new HistoryCursor, a new RunState for its Run and a new
# ProjectionState, all NamedTuples. Their public constructors cost more than
# the rest of a token's work (a NamedTuple's generated ``__new__`` is a Python
# frame with keyword handling, ``_replace`` two more; an attrs ``__init__``
# sets field after field), so the reducer builds them here instead:
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

from typing import Any, TypeVar

__all__ = ["new_tuple", "part_streamed", "with_fields"]

new_tuple = tuple.__new__
"""``new_tuple(cls, values)``: the NamedTuple ``cls`` of all its values in field order."""
_new_object = object.__new__
_set_attr = object.__setattr__

_T = TypeVar("_T")


def part_streamed(part: Any, streamed: int) -> Any:
    """``part._replace(streamed=streamed)``, the one change a token makes."""
    index, kind, message_id, part_id, _, started, tool_name, pending, object_args_json, signature, ended = part
    return new_tuple(type(part), (index, kind, message_id, part_id, streamed, started, tool_name, pending,
                                  object_args_json, signature, ended))


def with_fields(value: _T, **changes: Any) -> _T:
    """``attrs.evolve(value, **changes)`` for a frozen attrs class with an
    instance dict and no validators or converters (SubagentState, the
    conversation's values), without evolve's per-call introspection."""
    new = _new_object(type(value))
    fields = value.__dict__.copy()
    assert changes.keys() <= fields.keys(), f"no such field: {sorted(changes.keys() - fields.keys())}"
    fields.update(changes)
    _set_attr(new, "__dict__", fields)
    return new
