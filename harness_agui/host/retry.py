# How the kit tries again: one named policy per kind of trouble, instead of
# loops that count to a magic number.
#
# A ``RetryPolicy`` is a schedule of pauses: the first pause, doubled after
# each failure up to a longest pause, until a total time has passed; then the
# last error is raised. It is only ever applied to errors that pass by
# themselves (a database connection lost, a server restarting, a pool with no
# free connection for a moment): an error that says the request itself is
# wrong is raised at once, whatever the policy.

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import attrs

__all__ = ["RetryPolicy", "RECONNECT", "READ_AGAIN"]

T = TypeVar("T")


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{attribute.name} must be a number of seconds > 0, not {value!r}")


@attrs.frozen
class RetryPolicy:
    """Pauses between attempts: ``first`` seconds, doubled after each failure up to ``longest``, for
    at most ``give_up_after`` seconds in all (the attempt that runs past it is the last)."""

    first: float = attrs.field(default=0.05, validator=_positive)
    longest: float = attrs.field(default=1.0, validator=_positive)
    give_up_after: float = attrs.field(default=30.0, validator=_positive)

    def pauses(self) -> Iterator[float]:
        """The pause before each next attempt; ends when the policy gives up."""
        deadline = time.monotonic() + self.give_up_after
        pause = self.first
        while time.monotonic() + pause <= deadline:
            yield pause
            pause = min(pause * 2, self.longest)

    def call(self, attempt: Callable[[], T], passing: Callable[[BaseException], bool]) -> T:
        """``attempt()`` until it returns, sleeping between attempts; an error for which ``passing`` is
        false, or any error once the policy gives up, is raised. Blocking: for worker threads."""
        pauses = self.pauses()
        while True:
            try:
                return attempt()
            except BaseException as e:
                if not passing(e):
                    raise
                pause = next(pauses, None)
                if pause is None:
                    raise
            time.sleep(pause)

    async def call_async(self, attempt: Callable[[], Awaitable[T]], passing: Callable[[BaseException], bool]) -> T:
        """``call`` for a coroutine function, sleeping on the event loop."""
        pauses = self.pauses()
        while True:
            try:
                return await attempt()
            except Exception as e:
                if not passing(e):
                    raise
                pause = next(pauses, None)
                if pause is None:
                    raise
            await asyncio.sleep(pause)


RECONNECT = RetryPolicy(first=0.05, longest=1.0, give_up_after=30.0)
"""A database connection lost (a server restarted, sessions terminated, a network blip): the writer
reconnects and writes again for up to 30 s before the Run is given up as unable to store."""

READ_AGAIN = RetryPolicy(first=0.05, longest=1.0, give_up_after=30.0)
"""A read that lost its connection (a follower's page, a catch-up's count): read again for up to 30 s
before the client's stream ends with the error."""
