# The in-memory feed of one root Run's committed events, shared by every
# follower of the Run in this process.
#
# A follower (an SSE client) must never cost the Run anything: it reads no
# database while the Run is live, and nothing it does makes a write wait.
# So each Run that has followers here has one ``RunFeed``: the SSE frames of
# its latest committed events (each frame written once, as bytes, with its
# durable id), its last event id, whether it has finished, and one wake-up
# for all its followers. Its source is either this process's driver of the
# Run (``host.supervisor``: it publishes each batch right after its commit)
# or, for a Run driven by another process, one reader per Run and process
# that reads a page of new events after each wake-up (a NOTIFY on
# PostgreSQL, a poll on SQLite) and publishes it: one read per commit,
# fanned out to every follower.
#
# The feed keeps the last ``window`` frames. A follower that is further
# behind (a reconnect with an old Last-Event-ID, a slow client) reads pages
# of the delivery log until it reaches the window, then takes frames from the
# feed: its memory is a page, or the frames it has not sent yet, never the
# whole Run. Every frame the feed holds has been committed: a follower can
# never be sent an event whose item is not durable.

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..wire.agui import sse_frame
from .delivery import _run_tag

__all__ = ["RunFeed"]


class RunFeed:
    """The committed events of one root Run, for this process's followers (see the module comment).

    ``base`` is the event id before the first frame held (a follower at or after it reads the feed),
    ``last`` the last event id published, ``finished`` whether the Run's last event is among them.
    ``local`` says this process's driver publishes (else a reader of the delivery log does);
    ``closed`` that the feed was given up (its followers find the Run's feed again)."""

    __slots__ = ("run_id", "tag", "window", "base", "last", "finished", "local", "closed", "followers", "_frames",
                 "_changed", "_timer")

    def __init__(self, run_id: str, *, last_event_id: int = 0, finished: bool = False, window: int = 1024,
                 local: bool = False) -> None:
        self.run_id = run_id
        self.tag = _run_tag(run_id)  # once per Run, not per event
        self.window = window
        self.base = last_event_id
        self.last = last_event_id
        self.finished = finished
        self.local = local
        self.closed = False
        self.followers = 0
        self._frames: list[bytes] = []
        self._changed = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None

    def frame(self, event_id: int, data: str) -> bytes:
        """The SSE frame of event ``event_id`` of this Run, whose JSON is ``data``."""
        return sse_frame(data, event_id=f"{event_id}.{self.tag}").encode("utf-8", "surrogatepass")

    def publish(self, events: Iterable[tuple[int, str]], *, finished: bool = False) -> None:
        """Add committed events ``(event id, JSON)`` (the ids following ``last``) and wake the followers."""
        frames = self._frames
        for event_id, data in events:
            if event_id != self.last + 1:
                if event_id <= self.last:
                    continue  # already published (a reader that overlapped the driver's start)
                self.reset(event_id - 1)  # a gap: start the window again there; older ids are read from the log
                frames = self._frames
            frames.append(self.frame(event_id, data))
            self.last = event_id
        if len(frames) > 2 * self.window:  # trim rarely, in one go
            drop = len(frames) - self.window
            del frames[:drop]
            self.base += drop
        self.finished = self.finished or finished
        self._wake()

    def reset(self, last_event_id: int, *, finished: bool = False) -> None:
        """Forget the frames held: the feed continues after ``last_event_id`` (a driver that starts from
        the delivery log)."""
        self._frames = []
        self.base = self.last = last_event_id
        self.finished = finished
        self._wake()

    def close(self) -> None:
        """Give the feed up: its followers are woken and find the Run's feed again."""
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._wake()

    def after(self, event_id: int) -> bytes | None:
        """The frames after event ``event_id``, as one chunk (b"" when there are none yet); None when
        ``event_id`` is before the window (read the delivery log up to ``base`` first)."""
        if event_id < self.base:
            return None
        start = event_id - self.base
        frames = self._frames
        if start >= len(frames):
            return b""
        if start == len(frames) - 1:
            return frames[start]
        return b"".join(frames[start:])

    async def wait(self, seen: int, timeout: float) -> bool:
        """Wait until an event after ``seen`` is published, the Run finishes or the feed is closed, at
        most ``timeout`` seconds; whether one of those happened. It may return sooner: the feed keeps one
        timer for all its followers, at the earliest time one of them asked for, and wakes them all when it
        fires (a follower that was woken early waits again for the rest of its time)."""
        if self.last != seen or self.finished or self.closed:
            return True
        # One timer per feed, moved only when a waiter needs it sooner: a live Run's followers wait between
        # every two events, and a timer of their own each time cost a handle, a heap entry and a
        # cancellation per event and follower.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        timer = self._timer
        if timer is None or timer.when() > deadline:
            if timer is not None:
                timer.cancel()
            self._timer = loop.call_at(deadline, self._time_up)
        await self._changed.wait()
        return self.last != seen or self.finished or self.closed

    def _time_up(self) -> None:
        self._timer = None
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()
