"""The persistent vector of the conversation fold (core.vector) behaves as an
immutable sequence, and an update copies one path of small tuples, so a long
Run's updates give the garbage collector no more work at its end than at its
start (no timing here: bench/conversation.py measures that)."""

from __future__ import annotations

import gc
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from harness_agui.core.vector import EMPTY_VECTOR, Vector


class VectorAgainstList(RuleBasedStateMachine):
    """The same operations on a Vector and on a list; earlier versions stay as they were."""

    def __init__(self) -> None:
        super().__init__()
        self.model: list[int] = []
        self.vector: Vector[int] = EMPTY_VECTOR
        self.history: list[tuple[Vector[int], list[int]]] = []

    @rule(count=st.integers(1, 70), value=st.integers())
    def append_some(self, count: int, value: int) -> None:
        for i in range(count):
            self.vector = self.vector.append(value + i)
            self.model.append(value + i)
        self.history.append((self.vector, list(self.model)))

    @precondition(lambda self: self.model)
    @rule(data=st.data(), value=st.integers())
    def set_one(self, data: st.DataObject, value: int) -> None:
        i = data.draw(st.integers(-len(self.model), len(self.model) - 1))
        before = self.vector
        self.vector = self.vector.set(i, value)
        self.model[i] = value
        assert self.vector[i] == value
        assert before.set(i, before[i]) is before  # setting what is there changes nothing
        self.history.append((self.vector, list(self.model)))

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def read_one(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(-len(self.model), len(self.model) - 1))
        assert self.vector[i] == self.model[i]

    @rule(start=st.integers(-80, 80), stop=st.integers(-80, 80))
    def slice_it(self, start: int, stop: int) -> None:
        assert list(self.vector[start:stop]) == self.model[start:stop]

    @invariant()
    def same_contents(self) -> None:
        assert len(self.vector) == len(self.model)
        assert list(self.vector) == self.model
        assert self.vector == Vector(self.model)

    @invariant()
    def earlier_versions_are_unchanged(self) -> None:
        for old, contents in self.history[-4:]:
            assert list(old) == contents


TestVectorAgainstList = VectorAgainstList.TestCase


@given(st.lists(st.integers(), max_size=1200))
def test_a_vector_pickles_equal_and_hashes_as_the_tuple_of_its_items(items: list[int]) -> None:
    vector = Vector(items)
    assert pickle.loads(pickle.dumps(vector)) == vector
    assert hash(vector) == hash(Vector(list(items))) and list(vector) == items


def test_reading_or_setting_outside_a_vector_is_an_index_error() -> None:
    vector = Vector(range(40))
    for bad in (40, -41):
        with pytest.raises(IndexError):
            vector[bad]
        with pytest.raises(IndexError):
            vector.set(bad, 0)
    with pytest.raises(IndexError):
        EMPTY_VECTOR[0]


def test_a_long_vector_is_small_tuples_and_an_update_copies_one_path() -> None:
    vector: Vector[str] = Vector(f"entry-{i}" for i in range(40_010))
    depth = 0

    def walk(node: tuple[Any, ...], level: int) -> None:
        nonlocal depth
        depth = max(depth, level)
        assert type(node) is tuple and len(node) <= 32
        for child in node:
            if type(child) is tuple:
                walk(child, level + 1)

    walk(vector._root, 1)
    assert depth <= 4
    updated = vector.set(123, "changed")
    fresh = [a is not b for a, b in zip(updated._root, vector._root, strict=True)]
    assert sum(fresh) == 1 and updated._tail is vector._tail
    appended = vector.append("one more")
    assert appended._root is vector._root and len(appended._tail) == 11
    full = Vector(f"entry-{i}" for i in range(40_000))  # its tail is full: an append moves it into the trie
    pushed = full.append("one more")
    assert pushed._tail == ("one more",) and sum(a is not b for a, b in zip(pushed._root, full._root, strict=True)) == 1
    gc.collect()
    assert not gc.is_tracked(vector._tail)  # a tuple of strings: the collector stops tracking it
