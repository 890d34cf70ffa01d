# One order for what an item emits: the processor, then the vocabulary's framing of large events, then the
# size limit, whether the stream has a child Run yet or not. The a13n-stream-protocol vocabulary frames a
# CUSTOM event over 48 KiB in its own fragments; cut first to a 64 KiB limit, the pieces were framed again.

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

import harness_agui.compat.a13n_stream_protocol.vocabulary  # noqa: E402, F401 (registers the vocabulary)
from harness_agui import HarnessAguiObserver  # noqa: E402
from harness_agui.testing.delegation import RunWriter  # noqa: E402

BIG = {"blob": "z" * 100_000}


def root_items(with_child: bool) -> list[Any]:
    root = RunWriter("thread-root", "run-root")
    root.run_started().request().user("go").tool_call(0, "delegate", "call-0", ['{"task": "x"}'])
    root.model_request_completed()
    items = list(root.items)
    if with_child:
        child = RunWriter("thread-child", "run-child")
        child.run_started().delegation("started", child_run_id="run-child", subagent="w", parent_run_id="run-root",
                                       parent_tool_call_id="call-0", status="running")
        items.extend(child.items)
    before = len(root.items)
    root.observation("big", BIG)
    items.append(root.items[before])
    return items


def last_item_events(with_child: bool, limit: int | None) -> list[str]:
    observer = HarnessAguiObserver(vocabulary="a13n-stream-protocol/0.21", max_event_bytes=limit)
    out: list[Any] = []
    for item in root_items(with_child):
        out = list(observer.observe(item))
    return [e.model_dump_json(by_alias=True, exclude_none=True) for e in out]


@pytest.mark.parametrize("limit", [None, 65_536])
def test_a_root_items_events_are_the_same_before_and_after_a_child_run_appears(limit: int | None) -> None:
    alone, beside = last_item_events(False, limit), last_item_events(True, limit)
    assert alone == beside
    assert len(alone) > 1 and all(len(e.encode()) <= 65_536 for e in alone)  # framed, each within the limit
    names = {json.loads(e).get("name") for e in alone}
    assert names == {"a13n.stream.fragment"}, names  # the vocabulary's frames, not cut again

