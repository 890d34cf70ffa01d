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
#
# A restored state is data someone may have written, so its bounds are held to
# the documented limits (MAX_PENDING_LIMIT, MAX_BYTES_LIMIT, the constructor's
# too) and its counts must add up (each ``size`` the UTF-8 bytes of its
# ``parts``, fewer parts than ``count``, no more assemblies than ``max_pending``
# and no more held than ``max_bytes``): FragmentState's validator refuses
# anything else, and ``restore`` validates again whatever it is given. Every
# held frame costs FRAME_OVERHEAD bytes of the budget besides its data, so that
# empty frames cannot pile up for free. The assembler keeps the bytes it holds
# as a running total and its assemblies oldest first in an OrderedDict (the
# oldest leaves in constant time): a frame costs the same however many events
# are open, never a scan of them.

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Self

from ag_ui.core.events import CustomEvent
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "FRAGMENT_EVENT_NAME",
    "FRAME_CHARS",
    "FRAME_OVERHEAD",
    "FRAME_THRESHOLD_BYTES",
    "MAX_BYTES_LIMIT",
    "MAX_PENDING_LIMIT",
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
FRAME_OVERHEAD = 64
"""Bytes of the assembler's budget every held frame costs besides its data (so an empty frame counts)."""
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_PENDING = 8
MAX_BYTES_LIMIT = 1024 * 1024 * 1024
"""The largest ``max_bytes`` an assembler takes or restores (1 GiB)."""
MAX_PENDING_LIMIT = 65536
"""The largest ``max_pending`` an assembler takes or restores."""


def _check_bounds(max_bytes: object, max_pending: object) -> None:
    """ValueError unless both bounds are ints from 1 to their documented limit."""
    for name, value, limit in (("max_bytes", max_bytes, MAX_BYTES_LIMIT),
                               ("max_pending", max_pending, MAX_PENDING_LIMIT)):
        if type(value) is not int or value < 1:
            raise ValueError(f"custom event assembly bounds must be positive ({name}={value!r})")
        if value > limit:
            raise ValueError(f"custom event assembly bound {name}={value} is above its limit {limit}")


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
    count: int = Field(ge=1)
    parts: list[str] = Field(default_factory=list)
    size: int = Field(default=0, ge=0)

    @property
    def held(self) -> int:
        """What these frames cost of an assembler's byte budget."""
        return self.size + FRAME_OVERHEAD * len(self.parts)


class FragmentState(BaseModel):
    """An assembler's open assemblies, its gap flag and its bounds (never the
    events it already completed)."""

    model_config = ConfigDict(extra="forbid")
    pending: dict[str, PendingFrames] = Field(default_factory=dict)
    gap: bool = False
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1, le=MAX_BYTES_LIMIT)
    max_pending: int = Field(default=DEFAULT_MAX_PENDING, ge=1, le=MAX_PENDING_LIMIT)

    @model_validator(mode="after")
    def _counts_add_up(self) -> Self:
        _check_state(self)
        return self


def _check_state(state: FragmentState) -> None:
    """ValueError unless ``state`` is one an assembler can be in (module comment). Linear in its frames."""
    _check_bounds(state.max_bytes, state.max_pending)
    if len(state.pending) > state.max_pending:
        raise ValueError(f"{len(state.pending)} open assemblies, more than max_pending={state.max_pending}")
    held = 0
    for identity, frames in state.pending.items():
        if type(frames.count) is not int or not 0 < len(frames.parts) < frames.count:
            raise ValueError(f"assembly {identity!r} holds {len(frames.parts)} of {frames.count!r} frames")
        if frames.size != sum(len(part.encode("utf-8")) for part in frames.parts):
            raise ValueError(f"assembly {identity!r} says {frames.size!r} bytes, not those of its frames")
        held += frames.held
    if held > state.max_bytes:
        raise ValueError(f"open assemblies holding {held} bytes, more than max_bytes={state.max_bytes}")


class CustomEventAssembler:
    """Joins ``a13n.stream.fragment`` frames back into the events they carry.

    ``max_bytes`` bounds the data held across all open assemblies,
    ``max_pending`` the number of events being assembled at once (the oldest
    is dropped, and ``gap`` set, to start another); each held frame counts
    FRAME_OVERHEAD bytes besides its data. Raises ValueError for a bound
    below 1 or above its limit (MAX_BYTES_LIMIT, MAX_PENDING_LIMIT).
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        _check_bounds(max_bytes, max_pending)
        self.max_bytes = max_bytes
        self.max_pending = max_pending
        self.gap = False
        self._pending: OrderedDict[str, PendingFrames] = OrderedDict()  # oldest first
        self._held = 0  # the sum of the held frames' ``held``

    def export(self) -> FragmentState:
        """A detached copy of the assembler's state."""
        return FragmentState(
            pending=dict(self._pending), gap=self.gap, max_bytes=self.max_bytes, max_pending=self.max_pending
        ).model_copy(deep=True)

    @classmethod
    def restore(cls, state: FragmentState) -> CustomEventAssembler:
        """An assembler that continues from ``state`` (which is not shared).
        Raises ValueError (pydantic's ValidationError) for a state no assembler
        can be in: bounds outside their limits, or counts that do not add up
        (see the module comment); nothing is restored then."""
        copy = FragmentState.model_validate(state.model_dump())  # validated again, and a deep copy
        assembler = cls(max_bytes=copy.max_bytes, max_pending=copy.max_pending)
        assembler._pending = OrderedDict(copy.pending)
        assembler._held = sum(frames.held for frames in copy.pending.values())
        assembler.gap = copy.gap
        return assembler

    def _drop(self, identity: str) -> None:
        frames = self._pending.pop(identity, None)
        if frames is not None:
            self._held -= frames.held

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
            self._drop(identity)
            while len(self._pending) >= self.max_pending:
                _, oldest = self._pending.popitem(last=False)
                self._held -= oldest.held
                self.gap = True
            self._pending[identity] = PendingFrames(count=count)
        frames = self._pending.get(identity)
        size = len(data.encode("utf-8"))
        if (frames is None or frames.count != count or len(frames.parts) != index
                or self._held + size + FRAME_OVERHEAD > self.max_bytes):
            self._drop(identity)
            self.gap = True
            return None
        frames.parts.append(data)
        frames.size += size
        self._held += size + FRAME_OVERHEAD
        if len(frames.parts) < count:
            return None
        self._drop(identity)
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
