# A persistent vector whose updates cost the garbage collector the same
# whatever its length: the Run-long sequences of the conversation fold
# (``core.conversation``: every entry of a Run, the client's message order).
#
# Why not pyrsistent's PVector: a young collection traverses every young
# container in full, and a PVector's traversal visits every item it holds,
# so with a new PVector per record each young collection cost in proportion
# to the whole Run (bench/conversation.py: the live-only observer that
# tracks messages went from 50 to 280 us per item between 5,000 and 40,000
# tool calls, none of it with the collector off). ``core.idmap`` solved the
# same problem for maps.
#
# Here a vector is the classic 32-way trie of a persistent vector, made of
# plain tuples: the items before the last partial run of 32 sit in leaves of
# 32 items under nodes of 32 children, and the last ones in a tail tuple of
# at most 32. An append copies the tail (and, once per 32 appends, one path
# from the root); a set copies the one path to its item, or the tail. So an
# update gives the young collections a few tuples of at most 32 slots,
# whatever the length. Reads walk a path of a few tuples. Nothing is ever
# mutated after it is made; a vector pickles as the tuple of its items.

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

__all__ = ["Vector", "EMPTY_VECTOR"]

_new = object.__new__
_BITS = 5
_WIDTH = 1 << _BITS
_MASK = _WIDTH - 1

T = TypeVar("T")


class Vector(Sequence[T], Generic[T]):
    """An immutable sequence: ``append`` and ``set`` return a new vector
    sharing all but one path with this one (``set`` returns this vector when
    the item is already there). Equal to another vector with equal items in
    the same order; pickles as the tuple of its items."""

    __slots__ = ("_root", "_tail", "_len", "_shift")

    _root: tuple[Any, ...]  # the full leaves, as a trie of depth _shift / _BITS
    _tail: tuple[T, ...]  # the last 1..32 items (none only when empty)
    _len: int
    _shift: int

    def __init__(self, items: Iterable[T] = ()) -> None:
        v: Vector[T] = _EMPTY
        for item in items:
            v = v.append(item)
        self._root, self._tail, self._len, self._shift = v._root, v._tail, v._len, v._shift

    @classmethod
    def _of(cls, root: tuple[Any, ...], tail: tuple[Any, ...], n: int, shift: int) -> Vector[Any]:
        v = object.__new__(cls)
        v._root, v._tail, v._len, v._shift = root, tail, n, shift
        return v

    def __len__(self) -> int:
        return self._len

    def _leaf(self, i: int) -> tuple[Any, ...]:
        """The tuple holding item ``i`` (a leaf, or the tail)."""
        if i >= self._len - len(self._tail):
            return self._tail
        node = self._root
        shift = self._shift
        while shift > 0:
            node = node[(i >> shift) & _MASK]
            shift -= _BITS
        return node

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Vector[T]: ...

    def __getitem__(self, index: int | slice) -> T | Vector[T]:
        if type(index) is not int:
            if isinstance(index, slice):
                return Vector(self._leaf(i)[i & _MASK] for i in range(*index.indices(self._len)))
            index = index.__index__()
        n = self._len
        i = index + n if index < 0 else index
        tailoff = n - len(self._tail)
        if i >= tailoff:
            if i >= n:
                raise IndexError("Vector index out of range")
            return self._tail[i - tailoff]
        if i < 0:
            raise IndexError("Vector index out of range")
        node = self._root
        shift = self._shift
        while shift:
            node = node[(i >> shift) & _MASK]
            shift -= _BITS
        return node[i & _MASK]  # type: ignore[no-any-return]

    def append(self, item: T) -> Vector[T]:
        tail = self._tail
        if len(tail) < _WIDTH:
            v = _new(Vector)
            v._root, v._tail, v._len, v._shift = self._root, tail + (item,), self._len + 1, self._shift
            return v
        # The tail is full: it becomes a leaf of the trie, and a new tail starts.
        leaves = (self._len - _WIDTH) >> _BITS  # leaves in the trie before this one
        root, shift = self._root, self._shift
        if leaves == 1 << shift:  # the trie is full: one level more
            root, shift = (root, _path(tail, shift)), shift + _BITS
        else:
            root = _push(root, shift, leaves, tail)
        return Vector._of(root, (item,), self._len + 1, shift)

    def set(self, index: int, item: T) -> Vector[T]:
        """This vector with item ``index`` replaced; IndexError outside it."""
        n = self._len
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("Vector index out of range")
        tail = self._tail
        tailoff = n - len(tail)
        if i >= tailoff:
            at = i - tailoff
            if tail[at] is item:
                return self
            v = _new(Vector)
            v._root, v._tail, v._len, v._shift = self._root, tail[:at] + (item,) + tail[at + 1:], n, self._shift
            return v
        if self._leaf(i)[i & _MASK] is item:
            return self
        return Vector._of(_set(self._root, self._shift, i, item), self._tail, n, self._shift)

    def __iter__(self) -> Iterator[T]:
        yield from _items(self._root, self._shift)
        yield from self._tail

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Vector):
            return self._len == other._len and (
                self._root is other._root and self._tail == other._tail or all(
                    a == b for a, b in zip(self, other, strict=True)))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return Vector, (tuple(self),)

    def __repr__(self) -> str:
        return f"Vector({len(self)} items)"


def _path(leaf: tuple[Any, ...], shift: int) -> tuple[Any, ...]:
    """``leaf`` under a chain of single-child nodes ``shift`` levels high."""
    while shift > 0:
        leaf = (leaf,)
        shift -= _BITS
    return leaf


def _push(node: tuple[Any, ...], shift: int, index: int, leaf: tuple[Any, ...]) -> tuple[Any, ...]:
    """``node`` (of height ``shift``) with ``leaf`` added as its leaf number ``index``."""
    if shift == _BITS:
        return node + (leaf,)
    slot = (index >> (shift - _BITS)) & _MASK
    if slot < len(node):
        return node[:slot] + (_push(node[slot], shift - _BITS, index, leaf),)
    return node + (_path(leaf, shift - _BITS),)


def _set(node: tuple[Any, ...], shift: int, i: int, item: Any) -> tuple[Any, ...]:
    slot = (i >> shift) & _MASK
    copy = list(node)
    copy[slot] = item if shift == 0 else _set(node[slot], shift - _BITS, i, item)
    return tuple(copy)


def _items(node: tuple[Any, ...], shift: int) -> Iterator[Any]:
    if shift == _BITS:
        for leaf in node:
            yield from leaf
        return
    for child in node:
        yield from _items(child, shift - _BITS)


_EMPTY: Vector[Any] = Vector._of((), (), 0, _BITS)
EMPTY_VECTOR: Vector[Any] = _EMPTY
"""The empty vector."""
