# Run-long persistent maps and sets of ids (tool call ids, message ids)
# whose cost per item stays flat over a long Run.
#
# Why not pyrsistent's PMap here: a PMap keeps its entries in buckets held by
# one pvector, and an update makes a new pvector. The garbage collector's
# young collections, which run every few hundred allocations, traverse every
# young container in full, and a pvector's traversal visits every bucket: so
# with a new PMap per tool call or message, each young collection cost in
# proportion to the Run's whole history of ids, and a 10^6-item Run spent
# its last tenth 1.25x as long as its first (none of it without the
# collector; bench/pipeline.py).
#
# Here an id map is a hash trie made of plain tuples and dicts: a node is a
# tuple of 32 slots (None, a child node, or a leaf), a leaf is a dict of at
# most LEAF entries whose keys share the hash bits above it. An update copies
# the one path from the root to its leaf (a few 32-slot tuples and a dict of
# a few entries); everything else is shared. Keys and values are str (or
# True for a set), so leaves are dicts the collector never tracks; nodes are
# tuples of 32 slots (the collector keeps tracking a tuple that holds a
# dict, but an old node sits in an old generation, which only full
# collections visit, and those visit everything anyway). So an update gives
# the young collections a few small new objects whatever the size of the
# map. Lookups walk at most a handful of tuples. Hashes are the
# process's str hashes, so a map pickles as its items and is rebuilt on
# load. Nothing is ever mutated after it is made.

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

__all__ = ["IdMap", "IdSet"]

_BITS = 5
_WIDTH = 1 << _BITS
_MASK = _WIDTH - 1
LEAF = 8
"""Entries a leaf holds before it splits into a node."""
_MAX_SHIFT = 64 - _BITS  # below this, keys with equal 64-bit hashes share a leaf whatever its size

_EMPTY_NODE: tuple[Any, ...] = (None,) * _WIDTH

V = TypeVar("V")


def _get(node: tuple[Any, ...], key: str, h: int, default: Any) -> Any:
    shift = 0
    while True:
        slot = node[(h >> shift) & _MASK]
        if slot is None:
            return default
        if type(slot) is dict:
            return slot.get(key, default)
        node = slot
        shift += _BITS


def _set(node: tuple[Any, ...], key: str, h: int, value: Any, shift: int) -> tuple[tuple[Any, ...], bool] | None:
    """The node with ``key`` set, and whether the key is new; None if ``key``
    already maps to ``value`` (an equal one)."""
    i = (h >> shift) & _MASK
    slot = node[i]
    if slot is None:
        new: Any = {key: value}
        added = True
    elif type(slot) is dict:
        added = key not in slot
        if not added:
            old = slot[key]
            if old is value or old == value:
                return None
        if not added or len(slot) < LEAF or shift >= _MAX_SHIFT:
            new = slot.copy()
            new[key] = value
        else:  # split the full leaf into a node one level down
            new = _EMPTY_NODE
            deeper = shift + _BITS
            for k, v in slot.items():
                new = _set_new(new, k, hash(k), v, deeper)
            new = _set_new(new, key, h, value, deeper)
    else:
        below = _set(slot, key, h, value, shift + _BITS)
        if below is None:
            return None
        new, added = below
    copy = list(node)  # a list and back: cheaper than slicing a 32-slot tuple around the slot
    copy[i] = new
    return tuple(copy), added


def _set_new(node: tuple[Any, ...], key: str, h: int, value: Any, shift: int) -> tuple[Any, ...]:
    """``_set`` of a key that is not in ``node``."""
    done = _set(node, key, h, value, shift)
    assert done is not None
    return done[0]


def _build(entries: list[tuple[int, str, Any]], shift: int) -> tuple[Any, ...]:
    """The node at ``shift`` holding ``entries`` ((hash, key, value), keys
    distinct), laid out as a ``_set`` of each in turn lays it out: a slot of
    at most LEAF entries (or any number at _MAX_SHIFT) is a leaf, a fuller
    one a node. Linear in the entries, where one ``_set`` each copies a path
    each (a map restored from a checkpoint, say)."""
    groups: dict[int, list[tuple[int, str, Any]]] = {}
    for entry in entries:
        i = (entry[0] >> shift) & _MASK
        group = groups.get(i)
        if group is None:
            groups[i] = [entry]
        else:
            group.append(entry)
    slots = list(_EMPTY_NODE)
    for i, group in groups.items():
        if len(group) <= LEAF or shift >= _MAX_SHIFT:
            slots[i] = {k: v for _, k, v in group}
        else:
            slots[i] = _build(group, shift + _BITS)
    return tuple(slots)


def _built(pairs: Iterable[tuple[str, Any]]) -> tuple[tuple[Any, ...], int]:
    """The root and length of a map of ``pairs`` (the last value of a key repeated wins)."""
    items = dict(pairs)
    return _build([(hash(k), k, v) for k, v in items.items()], 0), len(items)


def _discard(node: tuple[Any, ...], key: str, h: int, shift: int) -> tuple[Any, ...] | None:
    """The node without ``key`` (``_EMPTY_NODE`` when nothing is left in
    it); None if ``key`` is not in ``node``."""
    i = (h >> shift) & _MASK
    slot = node[i]
    if slot is None:
        return None
    if type(slot) is dict:
        if key not in slot:
            return None
        new: Any = None
        if len(slot) > 1:
            new = slot.copy()
            del new[key]
    else:
        new = _discard(slot, key, h, shift + _BITS)
        if new is None:
            return None
        if new is _EMPTY_NODE:
            new = None
    copy = list(node)
    copy[i] = new
    return _EMPTY_NODE if copy.count(None) == _WIDTH else tuple(copy)


def _items(node: tuple[Any, ...]) -> Iterator[tuple[str, Any]]:
    for slot in node:
        if slot is None:
            continue
        if type(slot) is dict:
            yield from slot.items()
        else:
            yield from _items(slot)


class IdMap(Mapping[str, V]):
    """An immutable map from str ids to values (str or other atomic values,
    or frozen values such as the conversation's open entries). ``set`` and
    ``discard`` return a new map sharing all but one path with this one
    (this map when nothing changes). Equal to another IdMap, or any
    Mapping, with the same items; pickles as its items."""

    __slots__ = ("_root", "_len")

    _root: tuple[Any, ...]
    _len: int

    def __init__(self, items: Mapping[str, V] | Iterable[tuple[str, V]] = ()) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        self._root, self._len = _built(pairs)

    def set(self, key: str, value: V) -> IdMap[V]:
        done = _set(self._root, key, hash(key), value, 0)
        if done is None:
            return self
        new = object.__new__(IdMap)
        new._root = done[0]
        new._len = self._len + done[1]
        return new

    def discard(self, key: str) -> IdMap[V]:
        """This map without ``key`` (this map when it is not in it)."""
        done = _discard(self._root, key, hash(key), 0)
        if done is None:
            return self
        new = object.__new__(IdMap)
        new._root = done
        new._len = self._len - 1
        return new

    def __getitem__(self, key: str) -> V:
        value = _get(self._root, key, hash(key), _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def get(self, key: str, default: Any = None) -> Any:
        return _get(self._root, key, hash(key), default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _get(self._root, key, hash(key), _MISSING) is not _MISSING

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in _items(self._root))

    def items(self) -> Any:
        return dict(_items(self._root)).items()

    def values(self) -> Any:
        return dict(_items(self._root)).values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdMap):
            return self._len == other._len and (self._root is other._root or dict(_items(self._root)) == dict(
                _items(other._root)))
        if isinstance(other, Mapping):
            return self._len == len(other) and dict(_items(self._root)) == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(_items(self._root)))

    def __reduce__(self) -> tuple[Any, ...]:
        return IdMap, (dict(_items(self._root)),)

    def __repr__(self) -> str:
        return f"IdMap({len(self)} ids)"


class IdSet:
    """An immutable set of str ids: ``add`` returns a new set sharing all but
    one path with this one (this set when the id is already in it). Equal
    to another IdSet, or any set, with the same ids; pickles as its ids."""

    __slots__ = ("_root", "_len")

    _root: tuple[Any, ...]
    _len: int

    def __init__(self, ids: Iterable[str] = ()) -> None:
        self._root, self._len = _built((key, True) for key in ids)

    def add(self, key: str) -> IdSet:
        done = _set(self._root, key, hash(key), True, 0)
        if done is None:
            return self
        new = object.__new__(IdSet)
        new._root = done[0]
        new._len = self._len + 1
        return new

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _get(self._root, key, hash(key), None) is not None

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in _items(self._root))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdSet):
            return self._len == other._len and (self._root is other._root or set(self) == set(other))
        if isinstance(other, (set, frozenset)):
            return self._len == len(other) and set(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return IdSet, (tuple(self),)

    def __repr__(self) -> str:
        return f"IdSet({len(self)} ids)"


_MISSING: Any = object()
