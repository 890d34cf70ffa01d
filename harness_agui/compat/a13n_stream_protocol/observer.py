# The observer of the compat package: what exists of it, and the seam for the rest.
#
# Built: the error type, the processor type and the JSON shape of an observer's
# continuation (``ObserverContinuation``), which display checkpoints embed and
# Hosts persist, so it must read and write exactly what a13n-stream-protocol
# 0.21 Hosts store: ``{"thread_id", "run_id", "state": {"request_index",
# "parts": {"<part index>": {kind, part_id, tool_name, emitted_content,
# emitted_signature}}, "children": {"<run id>": <state>}, "threads":
# {"<run id>": "<thread id>"}}}``.
#
# Not built yet: ``HarnessAguiObserver`` and ``HarnessAguiStreamObserver``. They
# are harness-agui's reducer run with the a13n-stream-protocol vocabulary (a
# vocabulary chosen at construction, not a second reducer), and wait for the
# reducer's vocabulary interface. Importing either raises ObserverNotBuiltError
# (an ImportError) that says so; nothing pretends to convert.

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ag_ui.core import Event
from pydantic import BaseModel, ConfigDict, Field

from ...core.errors import AguiObservationError as _LibraryObservationError

__all__ = [
    "AguiEventProcessor",
    "AguiObservationError",
    "ObserverContinuation",
    "ObserverNotBuiltError",
    "PartCursor",
    "RunCursor",
]

AguiEventProcessor = Callable[[Any, Event], Event | None]
"""``processor(source_item, event) -> event | None``: a Host's replay-stable filter or content rewrite."""


class AguiObservationError(_LibraryObservationError, ValueError):
    """A public Harness item could not be observed without changing its meaning.

    A ValueError, as in a13n-stream-protocol, and harness-agui's
    ``AguiObservationError``, so Host code written against either catches it."""


class PartCursor(BaseModel):
    """An open part of one Run: its kind, its message or tool call id, the tool name
    so far, and whether its content / signature was already emitted."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["text", "reasoning", "tool_call"]
    part_id: str
    tool_name: str | None = None
    emitted_content: bool = False
    emitted_signature: bool = False


class RunCursor(BaseModel):
    """The conversion state of one Run: its latest model request index, its open
    parts by part index, and (for the stream's root) each inline child's state
    and each Run's Thread."""

    model_config = ConfigDict(extra="forbid")
    request_index: int = 0
    parts: dict[int, PartCursor] = Field(default_factory=dict)
    children: dict[str, RunCursor] = Field(default_factory=dict)
    threads: dict[str, str] = Field(default_factory=dict)


class ObserverContinuation(BaseModel):
    """The conversion cursors an observer resumes from mid-part, without history
    and without its accumulated events."""

    model_config = ConfigDict(extra="forbid")
    thread_id: str | None = None
    run_id: str | None = None
    state: RunCursor = Field(default_factory=RunCursor)


class ObserverNotBuiltError(ImportError):
    """The compat observer classes do not exist yet (see this module's comment)."""


_NOT_BUILT = frozenset({"HarnessAguiObserver", "HarnessAguiStreamObserver"})


def __getattr__(name: str) -> Any:
    if name in _NOT_BUILT:
        raise ObserverNotBuiltError(
            f"harness_agui.compat.a13n_stream_protocol.observer.{name} is not built yet: it is harness-agui's "
            "reducer with the a13n-stream-protocol vocabulary, which needs the reducer's vocabulary interface"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
