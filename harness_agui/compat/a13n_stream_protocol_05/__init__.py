"""a13n-stream-protocol 0.5's public API, built on harness-agui: the vocabulary
a13n-service 0.0.94 folds its Runs with (a13n-harness 0.5).

The module names of ``a13n_stream_protocol`` 0.5 (``observer``, ``fragments``,
``content``, ``messages``) and its root names. ``harness_agui.compat.install()``
puts this package behind the name ``a13n_stream_protocol`` where a13n-harness
0.5 is installed. It shares the 0.21 package's machinery and renders 0.5's
events (``vocabulary.NAME_05``: what differs is listed in that module's
comment).

Importing it with another a13n-harness release installed raises ImportError
naming the installed and the supported release.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..._a13n_release import require_release

SUPPORTED: tuple[tuple[int, int], ...] = ((0, 5),)
"""The a13n-harness series this vocabulary reads."""

require_release(__name__, SUPPORTED)

from ..a13n_stream_protocol._base import AguiEventProcessor, AguiObservationError  # noqa: E402
from ..a13n_stream_protocol._names import AUTHORED_INPUT_EVENT_NAMES  # noqa: E402
from .fragments import CustomEventAssembler, fragment_custom_event  # noqa: E402

__version__ = "0.5.4"
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
    if name == "tool_result_content":
        return importlib.import_module(f"{__name__}.content").tool_result_content
    if name == "ContentMetadata":
        return importlib.import_module(f"{__name__}.messages").ContentMetadata
    if name in ("HarnessAguiObserver", "HarnessAguiStreamObserver"):
        return getattr(importlib.import_module(f"{__name__}.observer"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
