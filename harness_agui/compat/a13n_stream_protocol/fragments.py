# Transport framing of large CUSTOM events, in a13n-stream-protocol 0.21's format.
#
# A CUSTOM event whose JSON (``model_dump_json(by_alias=True)``) takes more than
# FRAME_THRESHOLD_BYTES of UTF-8 travels as ``a13n.stream.fragment`` events, each
# carrying FRAME_CHARS characters of that JSON text in ``value.data`` beside the
# frame's ``id``, ``index`` and ``count``. The frames keep the original event's
# timestamp and subagentRunId so a transport can route them like the original.
# 4096 characters stay under 64 KiB per frame even when every character is
# non-ASCII and the text is escaped a second time inside the frame's JSON.
#
# The assembler is the receiving half. It takes frames as the JSON dicts a
# client holds, one at a time, and hands back a complete event only when every
# frame of it arrived in order. Anything else (a missing, repeated or foreign
# frame, too many open assemblies, a byte budget exceeded, a payload that does
# not parse as a CUSTOM event) sets ``gap`` and yields nothing for that
# event: a client shows its "something was lost" notice and never a partial
# event. Its state exports to FragmentState (pydantic, JSON) and restores from
# it, so a display checkpoint can hold the frames of an event that is still
# arriving; the JSON shape is the one a13n-stream-protocol's Hosts persist.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ag_ui.core.events import CustomEvent
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "FRAGMENT_EVENT_NAME",
    "FRAME_CHARS",
    "FRAME_THRESHOLD_BYTES",
    "CustomEventAssembler",
    "FragmentState",
    "PendingFrames",
    "fragment_custom_event",
]

FRAGMENT_EVENT_NAME = "a13n.stream.fragment"
FRAME_THRESHOLD_BYTES = 48 * 1024
"""A CUSTOM event whose JSON is longer than this many UTF-8 bytes is framed."""
FRAME_CHARS = 4096
"""Characters of the original event's JSON text in one frame."""
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_PENDING = 8


def fragment_custom_event(event: CustomEvent, *, identity: str) -> list[CustomEvent]:
    """The frames that carry ``event``: ``[event]`` itself when it is small enough,
    else ordered ``a13n.stream.fragment`` events named ``identity``.

    ``identity`` must be unique among the events a receiver may be assembling
    at once. Raises nothing of its own; the event is not changed.
    """
    text = event.model_dump_json(by_alias=True)
    if len(text.encode("utf-8")) <= FRAME_THRESHOLD_BYTES:
        return [event]
    pieces = [text[start:start + FRAME_CHARS] for start in range(0, len(text), FRAME_CHARS)]
    return [
        CustomEvent(
            timestamp=event.timestamp,
            subagent_run_id=event.subagent_run_id,
            name=FRAGMENT_EVENT_NAME,
            value={"id": identity, "index": index, "count": len(pieces), "data": piece},
        )
        for index, piece in enumerate(pieces)
    ]


class PendingFrames(BaseModel):
    """The frames received so far of one event: ``count`` expected, ``parts`` in
    order, ``size`` their UTF-8 bytes."""

    model_config = ConfigDict(extra="forbid")
    count: int
    parts: list[str] = Field(default_factory=list)
    size: int = 0


class FragmentState(BaseModel):
    """An assembler's open assemblies, its gap flag and its bounds (never the
    events it already completed)."""

    model_config = ConfigDict(extra="forbid")
    pending: dict[str, PendingFrames] = Field(default_factory=dict)
    gap: bool = False
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1)
    max_pending: int = Field(default=DEFAULT_MAX_PENDING, ge=1)


class CustomEventAssembler:
    """Joins ``a13n.stream.fragment`` frames back into the events they carry.

    ``max_bytes`` bounds the data held across all open assemblies,
    ``max_pending`` the number of events being assembled at once (the oldest
    is dropped, and ``gap`` set, to start another). Raises ValueError for a
    bound below 1.
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        if max_bytes < 1 or max_pending < 1:
            raise ValueError("custom event assembly bounds must be positive")
        self.max_bytes = max_bytes
        self.max_pending = max_pending
        self.gap = False
        self._pending: dict[str, PendingFrames] = {}

    @property
    def _held(self) -> int:
        return sum(frames.size for frames in self._pending.values())

    def export(self) -> FragmentState:
        """A detached copy of the assembler's state."""
        return FragmentState(
            pending=self._pending, gap=self.gap, max_bytes=self.max_bytes, max_pending=self.max_pending
        ).model_copy(deep=True)

    @classmethod
    def restore(cls, state: FragmentState) -> CustomEventAssembler:
        """An assembler that continues from ``state`` (which is not shared)."""
        copy = state.model_copy(deep=True)
        assembler = cls(max_bytes=copy.max_bytes, max_pending=copy.max_pending)
        assembler._pending = copy.pending
        assembler.gap = copy.gap
        return assembler

    def accept(self, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Take one event as JSON. Anything but a frame comes back unchanged (the
        same object); a frame gives None until it completes its event, whose
        JSON (``mode="json"``, by alias) it then returns. A bad or out-of-order
        frame sets ``gap`` and drops what was held for its event; never raises
        for what a stream carries."""
        if payload.get("name") != FRAGMENT_EVENT_NAME:
            return payload
        frame = _frame(payload.get("value"))
        if frame is None:
            self.gap = True
            return None
        identity, index, count, data = frame
        if index == 0:
            self._pending.pop(identity, None)
            while len(self._pending) >= self.max_pending:
                del self._pending[next(iter(self._pending))]
                self.gap = True
            self._pending[identity] = PendingFrames(count=count)
        frames = self._pending.get(identity)
        size = len(data.encode("utf-8"))
        if (frames is None or frames.count != count or len(frames.parts) != index
                or self._held + size > self.max_bytes):
            self._pending.pop(identity, None)
            self.gap = True
            return None
        frames.parts.append(data)
        frames.size += size
        if len(frames.parts) < count:
            return None
        del self._pending[identity]
        try:
            event = CustomEvent.model_validate_json("".join(frames.parts))
        except ValidationError:
            self.gap = True
            return None
        if event.name == FRAGMENT_EVENT_NAME:
            self.gap = True
            return None
        return event.model_dump(mode="json", by_alias=True)


def _frame(value: object) -> tuple[str, int, int, str] | None:
    """The (id, index, count, data) of a frame's value, or None when it is not one."""
    if not isinstance(value, dict):
        return None
    identity, index, count, data = (value.get(key) for key in ("id", "index", "count", "data"))
    if (isinstance(identity, str) and isinstance(index, int) and isinstance(count, int)
            and isinstance(data, str) and 0 <= index < count):
        return identity, index, count, data
    return None
