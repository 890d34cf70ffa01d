"""Test support for Hosts and for this library's own tests.

``SourceBuilder`` and ``simulated_run`` (from ``testing.builder``) write the
items of a Run in a few lines and need nothing beyond the core. The
hypothesis strategies (``testing.strategies``: ``histories``,
``complete_histories``, ``invalid_cases``, ...; ``testing.delegation``:
``delegating_runs``, ``delegating_histories``, ... for streams of Runs that
delegate to subagents, and ``simulated_delegation``) need hypothesis, installed by
the ``testing`` extra; they are loaded on first use, so importing this package
works without it.
"""

from __future__ import annotations

import importlib
from typing import Any

from .builder import DEMO_START, SourceBuilder, projection_json, simulated_run

__all__ = ["SourceBuilder", "simulated_run", "projection_json", "DEMO_START"]


# Names served lazily by ``testing.delegation`` (streams of delegating Runs);
# every other name is looked up in ``testing.strategies``.
_DELEGATION = frozenset({
    "RunWriter", "PlannedSubagent", "DelegatingRun", "delegating_runs", "delegating_histories",
    "complete_delegating_histories", "live_delegating_histories", "simulated_delegation",
    "fanned_out_delegation",
})


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _DELEGATION:
        return getattr(importlib.import_module(f"{__name__}.delegation"), name)
    strategies = importlib.import_module(f"{__name__}.strategies")
    try:
        return getattr(strategies, name)
    except AttributeError:
        raise AttributeError(f"module 'harness_agui.testing' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    """The names served here, the lazily loaded strategies' included (they need hypothesis to be used, not to
    be listed)."""
    names = set(__all__) | _DELEGATION
    try:
        names |= set(importlib.import_module(f"{__name__}.strategies").__all__)
    except ImportError:
        pass
    return sorted(names)
