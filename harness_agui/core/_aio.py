# One adapter from "an async or a plain iterable" to an async iterable, for
# every API that accepts either (resume(), the Host kit's checks, the
# step-through replay). A str or bytes is refused: iterating one item per
# character is never what a caller meant by a history.

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import TypeVar

__all__ = ["as_async_iterable"]

T = TypeVar("T")


def as_async_iterable(source: AsyncIterable[T] | Iterable[T], what: str) -> AsyncIterable[T]:
    """``source`` itself when it is async iterable, else an async iterable
    over it. Raises TypeError, naming ``what`` the caller expected, for
    anything else (a str or bytes included)."""
    if isinstance(source, AsyncIterable):
        return source
    if isinstance(source, Iterable) and not isinstance(source, (str, bytes)):
        return _over(source)
    raise TypeError(f"{what} must be an async or plain iterable of items, not {type(source).__name__}")


async def _over(items: Iterable[T]) -> AsyncIterator[T]:
    for item in items:
        yield item
