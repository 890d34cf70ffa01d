# Names shared by modules that must import without a13n-harness (the display fold).

from __future__ import annotations

__all__ = ["AUTHORED_INPUT_EVENT_NAMES"]

AUTHORED_INPUT_EVENT_NAMES: frozenset[str] = frozenset({"a13n.input.user", "a13n.input.steering"})
"""The CUSTOM names of inputs a person wrote (user and steering text), as opposed to generated ones."""
