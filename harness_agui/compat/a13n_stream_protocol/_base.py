# The observer's names that need no a13n-harness: its error, its processor type
# and the JSON shape of its continuation. The display fold embeds the
# continuation and the package root exports the error, so both import where
# a13n-harness is not installed; the observer and the vocabulary (which need
# it) import them from here.

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ag_ui.core import Event
from pydantic import BaseModel, ConfigDict, Field

from ...core.errors import AguiObservationError as _LibraryObservationError

__all__ = ["AguiEventProcessor", "AguiObservationError", "ObserverContinuation", "PartCursor", "RunCursor"]

AguiEventProcessor = Callable[[Any, Event], Event | None]
"""``processor(source_item, event) -> event | None``: a Host's replay-stable filter or content rewrite. The
compat observers give it the native a13n-harness item."""


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
