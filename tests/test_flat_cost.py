"""The Run-long id maps (core.idmap) behave as persistent maps and sets,
and are built so that a long Run costs the collector nothing more per item
(no timing here: bench/pipeline.py measures that)."""

from __future__ import annotations

import gc
import pickle
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from harness_agui import HarnessAguiObserver
from harness_agui.core.idmap import IdMap, IdSet
from harness_agui.core.state import INITIAL_STATE
from harness_agui.testing.builder import SourceBuilder

_IDS = st.text(max_size=6) | st.sampled_from([f"call-{i}" for i in range(60)])


class IdMapAgainstDict(RuleBasedStateMachine):
    """The same operations on an IdMap / IdSet and on a dict / set."""

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, str] = {}
        self.ids: set[str] = set()
        self.map: IdMap[str] = IdMap()
        self.set = IdSet()
        self.history: list[tuple[IdMap[str], dict[str, str]]] = []

    @rule(key=_IDS, value=st.sampled_from(["open", "ended", "answered"]))
    def set_a_key(self, key: str, value: str) -> None:
        before = self.map
        self.map = self.map.set(key, value)
        if self.model.get(key) == value:
            assert self.map is before
        self.model[key] = value
        self.history.append((self.map, dict(self.model)))

    @rule(key=_IDS)
    def discard_a_key(self, key: str) -> None:
        before = self.map
        self.map = self.map.discard(key)
        assert (self.map is before) == (key not in self.model)
        self.model.pop(key, None)
        self.history.append((self.map, dict(self.model)))

    @rule(key=_IDS)
    def add_an_id(self, key: str) -> None:
        before = self.set
        self.set = self.set.add(key)
        assert (self.set is before) == (key in self.ids)
        self.ids.add(key)

    @rule(key=_IDS)
    def look_up(self, key: str) -> None:
        assert (key in self.map) == (key in self.model)
        assert self.map.get(key) == self.model.get(key)
        assert (key in self.set) == (key in self.ids)

    @invariant()
    def same_contents(self) -> None:
        assert len(self.map) == len(self.model)
        assert dict(self.map.items()) == self.model
        assert self.map == self.model
        assert len(self.set) == len(self.ids) and set(self.set) == self.ids and self.set == self.ids

    @invariant()
    def earlier_versions_are_unchanged(self) -> None:
        for old, contents in self.history[-5:]:
            assert dict(old.items()) == contents


TestIdMapAgainstDict = IdMapAgainstDict.TestCase


@settings(max_examples=10)
@given(st.integers(0, 2**32))
def test_an_id_map_emptied_key_by_key_in_any_order_is_the_empty_map(seed: int) -> None:
    rng = random.Random(seed)
    keys = [f"id-{n}" for n in range(3000)]  # enough for leaves to split two levels down
    full: IdMap[str] = IdMap()
    for k in keys:
        full = full.set(k, k)
    rng.shuffle(keys)
    m = full
    for n, k in enumerate(keys):
        m = m.discard(k)
        assert m.discard(k) is m
        if n % 500 == 0:
            assert dict(m.items()) == {k: k for k in keys[n + 1:]}
    assert len(m) == 0 and m == IdMap() and list(m) == [] and len(full) == 3000
    assert m.set("again", "x") == {"again": "x"}


@given(st.lists(st.tuples(_IDS, st.sampled_from(["open", "ended"])), max_size=200))
def test_an_id_map_pickles_equal_and_equals_one_built_in_another_order(pairs: list[tuple[str, str]]) -> None:
    forward: IdMap[str] = IdMap()
    for k, v in pairs:
        forward = forward.set(k, v)
    backward = IdMap(reversed(list(dict(pairs).items())))
    assert forward == backward and hash(forward) == hash(backward)
    assert pickle.loads(pickle.dumps(forward)) == forward
    ids = IdSet(k for k, _ in pairs)
    assert pickle.loads(pickle.dumps(ids)) == ids


@given(st.lists(st.tuples(_IDS, st.sampled_from(["open", "ended"])), max_size=600))
def test_an_id_map_built_at_once_is_laid_out_as_one_built_one_id_at_a_time(pairs: list[tuple[str, str]]) -> None:
    # IdMap(pairs) builds the trie in one pass (a restored checkpoint's maps); set() copies a path each.
    one_by_one: IdMap[str] = IdMap()
    ids = IdSet()
    for k, v in pairs:
        one_by_one = one_by_one.set(k, v)
        ids = ids.add(k)
    at_once = IdMap(pairs)
    assert at_once._root == one_by_one._root and len(at_once) == len(one_by_one) == len(dict(pairs))
    assert IdSet(k for k, _ in pairs)._root == ids._root


def test_a_large_id_map_is_small_dicts_the_collector_ignores_and_an_update_copies_one_path() -> None:
    m: IdMap[str] = IdMap()
    for i in range(5000):
        m = m.set(f"call-{i}", "ended")
    leaves: list[dict[str, str]] = []
    depth = 0

    def walk(node: tuple[Any, ...], level: int) -> None:
        nonlocal depth
        depth = max(depth, level)
        assert len(node) == 32
        for slot in node:
            if type(slot) is tuple:
                walk(slot, level + 1)
            elif type(slot) is dict:
                leaves.append(slot)

    walk(m._root, 1)
    assert len(leaves) > 500 and all(len(leaf) <= 8 for leaf in leaves)
    assert not any(gc.is_tracked(leaf) for leaf in leaves)
    assert depth <= 4
    n = m.set("call-new", "open")
    assert sum(a is not b for a, b in zip(n._root, m._root, strict=True)) == 1


def test_a_tool_call_id_used_again_after_its_call_was_answered_is_a_call_of_its_own() -> None:
    b = SourceBuilder().request().tool_call(0, "f", "c-1", ['{"a": 1}']).tool_result("c-1", "f", "ok")
    observer = HarnessAguiObserver()
    for item in b.items:
        observer.observe(item)
    assert observer.state.calls == {"c-1": "answered"}
    assert type(observer.state.calls) is IdMap and type(INITIAL_STATE.message_ids) is IdSet
    again = SourceBuilder().request().tool_call(0, "f", "c-1", ["{}"]).items
    sequence = observer.state.last_sequence + 1
    events = observer.observe(again[1].__class__(thread_id=again[1].thread_id, run_id=again[1].run_id,
                                                 sequence=sequence, occurred_at=again[1].occurred_at,
                                                 event=again[1].event))
    assert [e.tool_call_id for e in events if e.type.value == "TOOL_CALL_START"] == [f"c-1:{sequence}"]
    assert observer.state.calls == {"c-1": "answered", f"c-1:{sequence}": "open"}
