# ``TemporaryPostgres`` moved to ``harness_agui.testing.postgres`` (it is test support, not the Host kit);
# the names are served from here, with a DeprecationWarning, for one release.

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = ("TemporaryPostgres", "PostgresNotFoundError", "find_postgres_bin")


def moved(module: str, name: str) -> Any:
    """``harness_agui.testing.postgres.<name>``, with a DeprecationWarning naming the old place."""
    warnings.warn(f"{module}.{name} moved to harness_agui.testing.postgres.{name}; the old name goes in the next "
                  "release", DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module("harness_agui.testing.postgres"), name)


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return moved(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
