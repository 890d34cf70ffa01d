# The followers of Runs in this process: what ``RunSupervisor.follow`` gives
# a client (see ``host.feed`` for why a follower never costs its Run a read).
#
# ``follow`` gives a client the Run's SSE frames after its ``Last-Event-ID``:
# pages of the delivery log while it is behind the Run's feed, then the
# feed's frames as they are committed. A Run driven here has its driver's
# feed (``host.driver`` publishes each commit to it); a Run driven elsewhere
# (another server on the same PostgreSQL database, another process on the
# same SQLite file) gets a feed too, fed by one reader per Run and process.
# A late joiner (no Last-Event-ID) of a long Run driven here gets the
# projection's ``catch_up()`` instead of every delta: computed in a worker
# thread while the driver holds still (the observer must not move under it),
# kept for every joiner while the frames after it are still in the feed, and
# sent once everything it covers is committed.

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from ..core.observer import HarnessAguiObserver
from ..wire.agui import SSE_KEEPALIVE, sse_frame
from .delivery import Page
from .driver import DrivenRun
from .errors import FollowerLimitError
from .feed import RunFeed
from .options import SupervisorOptions
from .protocols import Stores
from .retry import READ_AGAIN

__all__ = ["RunFollowers", "KEEPALIVE"]

log = logging.getLogger("harness_agui.host.supervisor")

KEEPALIVE = SSE_KEEPALIVE.encode()

KEEPALIVE = SSE_KEEPALIVE.encode()

FANOUT_FREE = 8
FANOUT_PAUSE = 0.0002
FANOUT_LONGEST = 0.1
"""The fan-out policy. A Run with at most ``FANOUT_FREE`` followers here sends each of them every commit
as it lands. With more, a follower that was sent frames pauses ``FANOUT_PAUSE`` seconds per follower of
the Run (at most ``FANOUT_LONGEST``) before it takes the next ones, all that gathered meanwhile in one
write: the sends per second of a Run stay about 5,000 whatever the number of its followers, so they
cannot take the event loop from the Run itself (100 ms between writes at 500 followers)."""


class RunFollowers:
    """The feeds of the Runs followed in this process and their followers (see the module comment), for
    the supervisor: ``runs`` are the Runs it drives (by source run id), ``spawn`` starts a task it
    stops; ``options`` are the supervisor's (``wait_remote``: how long a follower of a Run driven
    elsewhere waits before it reads the log again). Once ``stopped``, no reader is started."""

    def __init__(self, stores: Stores, runs: Mapping[str, DrivenRun], *, options: SupervisorOptions,
                 wait_remote: float, spawn: Callable[[Awaitable[Any], str], object]) -> None:
        self.stores = stores
        self.deliveries = stores.deliveries
        self.max_followers = options.max_followers
        self.catch_up_after = options.catch_up_after
        self.feeds: dict[str, RunFeed] = {}
        self._runs = runs
        self._window = options.window
        self._page = options.page
        self._keepalive = float(options.keepalive)
        self._wait_remote = wait_remote
        self._spawn = spawn
        self.stopped = False

    def driven_here(self, run_id: str) -> RunFeed:
        """The feed this process's driver of ``run_id`` publishes to: the one its followers hold already,
        unless it is closed."""
        feed = self.feeds.get(run_id)
        if feed is None or feed.closed:
            feed = self.feeds[run_id] = RunFeed(run_id, window=self._window)
        feed.local = True
        return feed

    def released(self, feed: RunFeed) -> None:
        """The Run's driver here is done: what follows is read from the delivery log."""
        if self.feeds.get(feed.run_id) is not feed:
            return
        feed.local = False
        if feed.finished:
            if not feed.followers:
                del self.feeds[feed.run_id]
        else:  # given up here (another projector, or stopped): its followers read the log again
            del self.feeds[feed.run_id]
            feed.close()

    def close(self) -> None:
        """Close every feed (its followers end) and start no reader after."""
        self.stopped = True
        for feed in list(self.feeds.values()):
            feed.close()

    def follow(self, run_id: str, *, after: int = 0, late_joiner: bool = False) -> AsyncIterator[bytes]:
        """The Run's SSE frames after event ``after`` (as byte chunks, several frames each when several
        are ready), to its last event; a keep-alive comment after ``keepalive`` seconds of silence. A
        ``late_joiner`` (no Last-Event-ID) of a long Run driven here is sent ``catch_up()`` first (see
        the module comment). Raises ``FollowerLimitError`` at once when the Run already has
        ``max_followers`` followers here. ``after`` must be known to be at most the Run's last id."""
        feed = self.feeds.get(run_id)
        if feed is not None and feed.followers >= self.max_followers:
            raise FollowerLimitError(run_id=run_id, limit=self.max_followers)
        return self._follow(run_id, after, late_joiner)

    async def _follow(self, run_id: str, after: int, late_joiner: bool) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        feed = await self._attach(run_id)
        try:
            if late_joiner and self.catch_up_after is not None:
                run = self._runs.get(run_id)
                if run is not None and run.feed is feed and feed.last > self.catch_up_after:
                    caught = await self._catch_up(run)
                    if caught is not None:
                        covers, frames = caught
                        while feed.last < covers and not (feed.finished or feed.closed):
                            await feed.wait(feed.last, self._keepalive)
                        if feed.last >= covers:  # everything it covers is committed
                            yield frames
                            after = covers
            quiet_since = loop.time()
            while True:
                if feed.closed:
                    self._detach(feed)
                    feed = await self._attach(run_id)
                chunk = feed.after(after)
                if chunk is None:  # behind the feed's window: a page of the log
                    page = await self._page_after(run_id, after)
                    if page.deliveries:
                        yield b"".join(feed.frame(d.event_id, d.data) for d in page.deliveries)
                        after = page.deliveries[-1].event_id
                        quiet_since = loop.time()
                        continue
                    if page.finished and after >= page.last_event_id:
                        return
                    await asyncio.sleep(self._wait_remote)  # the log lags the feed (a replica): read again
                    continue
                if chunk:
                    after = feed.last
                    yield chunk
                    quiet_since = loop.time()
                    if feed.followers > FANOUT_FREE:  # many followers: each takes what a pause gathered
                        await asyncio.sleep(min(FANOUT_LONGEST, feed.followers * FANOUT_PAUSE))
                    continue
                if feed.finished:
                    return
                silent = loop.time() - quiet_since
                if silent >= self._keepalive:
                    yield KEEPALIVE
                    quiet_since = loop.time()
                    continue
                # Nothing after ``after`` in the feed: the follower has all it holds (or more: pages of the log
                # may run ahead of a reader's feed), so wait for the feed to move past its own last event.
                await feed.wait(feed.last, self._keepalive - silent)
        finally:
            self._detach(feed)

    async def _attach(self, run_id: str) -> RunFeed:
        # The Run's feed here: its driver's, a reader's shared with other followers, or a new reader's.
        feed = self.feeds.get(run_id)
        if feed is None or feed.closed:
            page = await self._page_after(run_id, 0, limit=1)  # the Run's last id and end, in one snapshot
            feed = self.feeds.get(run_id)
            if feed is None or feed.closed:
                feed = RunFeed(run_id, last_event_id=page.last_event_id, finished=page.finished, window=self._window)
                if not page.finished and not self.stopped:
                    self.feeds[run_id] = feed
                    self._spawn(self._read_for(feed), f"harness-agui reader {run_id}")
        feed.followers += 1
        return feed

    def _detach(self, feed: RunFeed) -> None:
        feed.followers -= 1
        if not feed.followers and not feed.local and self.feeds.get(feed.run_id) is feed and feed.finished:
            del self.feeds[feed.run_id]

    async def _read_for(self, feed: RunFeed) -> None:
        # One reader per Run driven elsewhere: a page after each wake-up, fanned out to the followers here.
        run_id = feed.run_id
        try:
            async with self.stores.changes(run_id) as changed:
                while feed.followers and not (feed.local or feed.closed or feed.finished):
                    page = await self._page_after(run_id, feed.last)
                    if feed.local or feed.closed:
                        return
                    done = page.finished and (not page.deliveries or page.deliveries[-1].event_id >= page.last_event_id)
                    feed.publish(((d.event_id, d.data) for d in page.deliveries), finished=done)
                    if len(page.deliveries) == self._page:
                        continue
                    if not done:
                        await changed(self._wait_remote)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("run %r: reading the delivery log for this process's followers failed", run_id)
            feed.close()
        finally:
            if self.feeds.get(run_id) is feed and not feed.local:
                del self.feeds[run_id]
                if not feed.finished:
                    feed.close()

    async def _page_after(self, run_id: str, after: int, *, limit: int | None = None) -> Page:
        page_size = self._page if limit is None else limit

        async def read() -> Page:
            page: Page = await asyncio.to_thread(self.deliveries.page, run_id, after=after, limit=page_size)
            return page

        return await READ_AGAIN.call_async(read, self.stores.lost)


    async def _catch_up(self, run: DrivenRun) -> tuple[int, bytes] | None:
        """The catch-up frames of a Run driven here and the last event id they cover, shared by every
        joiner while the frames after it are still in the feed; None when it cannot be taken."""
        caught, feed = run.caught, run.feed
        assert feed is not None  # a Run the supervisor drives
        if caught is not None and caught[0] >= feed.base:
            return caught
        if run.catching is None or run.catching.done():
            observer, tag = run.observer, feed.tag
            if observer is None or not observer.tracks_messages:
                return None
            run.catching = asyncio.get_running_loop().run_in_executor(None, _take_catch_up, observer, tag)
        catching = run.catching
        try:
            caught = await asyncio.shield(catching)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("run %r: the catch-up could not be taken; the joiner is sent the log", run.run_id)
            return None
        run.caught = caught
        return caught


def _take_catch_up(observer: HarnessAguiObserver, tag: str) -> tuple[int, bytes]:
    # In a worker thread, while the driver holds still: the catch-up of the observer's state and the last
    # event id it covers, as frames (the last one carries that id, so a reconnect continues after it).
    count = observer.event_count
    events = observer.catch_up()
    frames = [sse_frame(e) for e in events]
    if frames:
        frames[-1] = sse_frame(events[-1], event_id=f"{count}.{tag}")
    return count, "".join(frames).encode("utf-8", "surrogatepass")
