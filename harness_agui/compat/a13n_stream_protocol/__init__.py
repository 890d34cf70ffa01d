"""a13n-stream-protocol 0.21's public API, built on harness-agui.

The same module names as ``a13n_stream_protocol`` (``observer``, ``fragments``,
``content``, ``messages``, ``memory``, ``display``) and the same root names.
``harness_agui.compat.install()`` puts this package behind the name
``a13n_stream_protocol`` for a Host that cannot change its imports.

Root names that need a13n-harness (``tool_result_content``, ``ContentMetadata``,
the observers) are imported on first use, so the fragments, memory and display
modules also work where a13n-harness is not installed.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..._a13n_release import require_release
from ._base import AguiEventProcessor, AguiObservationError
from ._names import AUTHORED_INPUT_EVENT_NAMES
from .fragments import CustomEventAssembler, fragment_custom_event

SUPPORTED: tuple[tuple[int, int], ...] = ((0, 20), (0, 21))
"""The a13n-harness series this vocabulary reads. Its observers refuse another release when they are made
(ImportError naming the installed and the supported releases) rather than publish 0.21's events for it."""

# This package's modules also serve the a13n-stream-protocol 0.5 package (``a13n_stream_protocol_05``), so its
# import refuses only a release that neither supports.
require_release(__name__, ((0, 5), *SUPPORTED))

__version__ = "0.21.0"
"""The a13n-stream-protocol release whose API and vocabulary this package reproduces."""

__all__ = [
    "AUTHORED_INPUT_EVENT_NAMES",
    "AguiEventProcessor",
    "AguiObservationError",
    "ContentMetadata",
    "CustomEventAssembler",
    "HarnessAguiObserver",
    "HarnessAguiStreamObserver",
    "__version__",
    "fragment_custom_event",
    "tool_result_content",
]


def __getattr__(name: str) -> Any:
    # importlib, not `from . import`: that form looks the submodule up on this package first, which
    # would call this function again.
    if name == "tool_result_content":
        return importlib.import_module(f"{__name__}.content").tool_result_content
    if name == "ContentMetadata":
        return importlib.import_module(f"{__name__}.messages").ContentMetadata
    if name in ("HarnessAguiObserver", "HarnessAguiStreamObserver"):
        return getattr(importlib.import_module(f"{__name__}.observer"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
