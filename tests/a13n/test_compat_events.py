# The compat observer against a13n-stream-protocol 0.21.0 itself: for every committed real a13n-harness Run
# (tests/fixtures/a13n), both stream observers get the same native items (rebuilt with to_a13n) and must
# publish the same events, compared as the JSON a Host sends (model_dump(mode="json", by_alias=True)).
# Upstream's observer reads no clock and no random source: every field is compared exactly. A Host may also
# dump an event with exclude_unset=True: upstream validates every event it publishes from its own dump (a
# fragment frame excepted), so which fields count as set is compared too; and an extension's event, of a class
# outside pydantic-ai's union, publishes upstream's CUSTOM event without a warning upstream does not give.

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from harness_agui.a13n import to_a13n
from harness_agui.core.source import HarnessRunResultEvent
from harness_agui.wire.codec import decode

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")
upstream = pytest.importorskip("a13n_stream_protocol", reason="needs a13n-stream-protocol 0.21.0: make test-a13n")
upstream_observer = pytest.importorskip("a13n_stream_protocol.observer")

from a13n_harness import HarnessEvent  # noqa: E402 (after the skips)
from a13n_harness.capabilities import CompactionSummaryEvent  # noqa: E402

from harness_agui.a13n import from_a13n  # noqa: E402
from harness_agui.compat.a13n_stream_protocol.observer import (  # noqa: E402
    HarnessAguiObserver,
    HarnessAguiStreamObserver,
    ObserverContinuation,
)

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "a13n").glob("*.jsonl"))
FIXTURES_BY_NAME = {path.stem: path for path in FIXTURES}
AT = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def runs(path: Path) -> list[list[Any]]:
    """The Runs of one fixture journal (a resumed Run follows its suspended one), as native items."""
    found: list[list[Any]] = [[]]
    for line in path.read_text().splitlines():
        item = decode(line)
        found[-1].append(to_a13n(item))
        if isinstance(item, HarnessRunResultEvent):
            found.append([])
    return [run for run in found if run]


def published(observer: Any, items: list[Any]) -> list[str]:
    """What a Host sends for each event: its JSON, keys in the event's own order."""
    return [json.dumps(event.model_dump(mode="json", by_alias=True)) for item in items
            for event in observer.observe(item)]


@pytest.mark.parametrize("path", FIXTURES, ids=[path.stem for path in FIXTURES])
def test_the_compat_observer_publishes_upstreams_events_for_every_committed_run(path: Path) -> None:
    for index, items in enumerate(runs(path)):
        theirs = published(upstream.HarnessAguiStreamObserver(), items)
        ours = published(HarnessAguiStreamObserver(), items)
        assert ours == theirs, f"{path.stem}, Run {index}"


def test_the_compat_observer_publishes_upstreams_events_for_every_fresh_run(scenarios: list[Any]) -> None:
    for scenario in scenarios:
        for index, items in enumerate(scenario.runs):
            theirs = published(upstream.HarnessAguiStreamObserver(), items)
            assert published(HarnessAguiStreamObserver(), items) == theirs, f"{scenario.name}, Run {index}"


def dumped_unset(events: Any) -> list[str]:
    """What a Host that logs events with exclude_unset=True writes for each."""
    return [json.dumps(event.model_dump(mode="json", by_alias=True, exclude_unset=True)) for event in events]


@pytest.mark.parametrize("path", FIXTURES, ids=[path.stem for path in FIXTURES])
def test_every_event_dumped_without_its_unset_fields_equals_upstreams_for_every_committed_run(path: Path) -> None:
    for index, items in enumerate(runs(path)):
        theirs, ours = upstream.HarnessAguiStreamObserver(), HarnessAguiStreamObserver()
        for cut, item in enumerate(items):
            assert dumped_unset(ours.observe(item)) == dumped_unset(theirs.observe(item)), f"{path.stem} {index}:{cut}"
        assert dumped_unset(ours.snapshot()) == dumped_unset(theirs.snapshot()), f"{path.stem}, Run {index}"


def test_a_processed_event_and_a_large_events_frames_dumped_without_their_unset_fields_equal_upstreams() -> None:
    items = runs(FIXTURES_BY_NAME["tools_and_reasoning"])[0]

    def shout(source: Any, event: Any) -> Any:
        if event.type == "TEXT_MESSAGE_CONTENT":
            return event.model_copy(update={"delta": event.delta.upper()})
        return event

    theirs = upstream.HarnessAguiStreamObserver(processor=shout)
    ours = HarnessAguiStreamObserver(processor=shout)
    assert [dumped_unset(ours.observe(i)) for i in items] == [dumped_unset(theirs.observe(i)) for i in items]
    summary = HarnessEvent(thread_id="thread-1", run_id="run-1", sequence=0, occurred_at=AT,
                           event=CompactionSummaryEvent(operation_id="compaction-1", summary="a line\n" * 20_000))
    frames = dumped_unset(upstream.HarnessAguiObserver().observe(summary))
    assert len(frames) > 1 and '"type"' not in frames[0]  # upstream constructs its frames: their type is unset
    assert dumped_unset(HarnessAguiObserver().observe(summary)) == frames


@dataclass(frozen=True)
class ProgressDataclass:
    """An extension's event: a class of its own, outside pydantic-ai's AgentStreamEvent union."""

    event_kind: str = "capability"
    kind: str = "user.demo.progress"
    value: Annotated[int, Field(serialization_alias="progressValue")] = 1


class ProgressModel(BaseModel):
    event_kind: str = "external"
    value: int = Field(default=1, serialization_alias="progressValue")


@pytest.mark.parametrize("event", [ProgressDataclass(), ProgressModel()], ids=["dataclass", "model"])
def test_an_extensions_event_publishes_upstreams_custom_event_without_a_warning(event: Any) -> None:
    item = HarnessEvent(thread_id="thread-1", run_id="run-1", sequence=0, occurred_at=AT, event=event)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # upstream gives none: a Host's log would show what we added
        theirs = published(upstream.HarnessAguiStreamObserver(), [item])
        assert published(HarnessAguiStreamObserver(), [item]) == theirs
        assert published(HarnessAguiObserver(), [item]) == theirs
        kept = from_a13n(item).event
    assert json.loads(theirs[0])["value"]["event"]["progressValue"] == 1
    assert (kept.event_kind, kept.data) == (event.event_kind, {k: v for k, v in vars(event).items()
                                                               if k != "event_kind"})


@pytest.mark.parametrize("path", FIXTURES, ids=[path.stem for path in FIXTURES])
def test_the_continuation_equals_upstreams_after_every_item_and_restores_to_the_same_events(path: Path) -> None:
    for items in runs(path):
        theirs, ours = upstream.HarnessAguiStreamObserver(), HarnessAguiStreamObserver()
        for cut, item in enumerate(items):
            exported = ours.export().model_dump_json()
            assert exported == theirs.export().model_dump_json(), f"{path.stem} before item {cut}"
            restored = HarnessAguiStreamObserver.restore(ObserverContinuation.model_validate_json(exported))
            their_events = published(theirs, [item])
            assert published(ours, [item]) == their_events
            assert published(restored, [item]) == their_events
        assert ours.export().model_dump_json() == theirs.export().model_dump_json()


def cuts(items: list[Any]) -> list[int]:
    """Five cut points of a Run: its start, three inside and the last item."""
    return sorted({0, len(items) // 4, len(items) // 2, 3 * len(items) // 4, len(items) - 1})


def restored(exported: str) -> HarnessAguiStreamObserver:
    return HarnessAguiStreamObserver.restore(ObserverContinuation.model_validate_json(exported))


def assert_restores_continue_upstreams_exports(items: list[Any], cut: int, what: str) -> None:
    """Cut ``items`` before ``cut``; restore our observer from our JSON and from upstream's, and each of those
    again twice from the restored observer's JSON: every export, then and after each later item, must be
    upstream's (restored from its own JSON) byte for byte, and the events its events."""
    theirs, ours = upstream.HarnessAguiStreamObserver(), HarnessAguiStreamObserver()
    published(theirs, items[:cut])
    published(ours, items[:cut])
    saved = theirs.export().model_dump_json()
    assert ours.export().model_dump_json() == saved, f"{what}: before item {cut}"
    chains = {"own JSON": restored(ours.export().model_dump_json()), "upstream's JSON": restored(saved)}
    for name in list(chains):
        again = restored(restored(chains[name].export().model_dump_json()).export().model_dump_json())
        chains[f"{name}, restored twice more"] = again
    continuation = upstream_observer.ObserverContinuation.model_validate_json(saved)
    reference = upstream.HarnessAguiStreamObserver.restore(continuation)
    for at in range(cut, len(items) + 1):
        expected = reference.export().model_dump_json()
        for name, observer in chains.items():
            assert observer.export().model_dump_json() == expected, f"{what}: {name}, cut {cut}, before item {at}"
        if at < len(items):
            events = published(reference, items[at:at + 1])
            assert all(published(observer, items[at:at + 1]) == events for observer in chains.values())


@pytest.mark.parametrize("path", FIXTURES, ids=[path.stem for path in FIXTURES])
def test_every_export_after_chains_of_restores_equals_upstreams(path: Path) -> None:
    for index, items in enumerate(runs(path)):
        for cut in cuts(items):
            assert_restores_continue_upstreams_exports(items, cut, f"{path.stem}, Run {index}")


def sequential_children() -> list[Any]:
    """The committed subagent Run with its child delegated twice in a row: the child's items and its
    completion again, under a new child Run id, after the first child ended."""
    lines = FIXTURES_BY_NAME["subagent"].read_text().splitlines()
    root = json.loads(lines[0])["run_id"]
    first = next(i for i, line in enumerate(lines) if json.loads(line)["run_id"] != root)
    child = json.loads(lines[first])["run_id"]
    end = next(i for i, line in enumerate(lines) if i > first and json.loads(line)["run_id"] == root)  # completion
    again = [line.replace(child, child + "-again") for line in lines[first:end + 1]]
    return [to_a13n(decode(line)) for line in [*lines[:end + 1], *again, *lines[end + 1:]]]


def test_a_restore_after_one_child_ended_and_another_opened_continues_upstreams_exports() -> None:
    items = sequential_children()
    assert len({item.run_id for item in items}) == 3
    for cut in range(len(items)):
        assert_restores_continue_upstreams_exports(items, cut, "sequential children")


def test_resume_rebuilds_the_same_projection_and_the_live_tail_continues_it() -> None:
    items = runs(FIXTURES_BY_NAME["subagent"])[0]
    cut = len(items) // 2

    async def history() -> AsyncIterator[Any]:
        for item in items[:cut]:
            yield item

    direct = HarnessAguiStreamObserver()
    published(direct, items[:cut])
    resumed = HarnessAguiStreamObserver()
    asyncio.run(resumed.resume(history()))
    assert resumed.snapshot() == direct.snapshot()
    assert published(resumed, items[cut:]) == published(direct, items[cut:])


def test_a_processor_sees_the_native_item_and_rewrites_what_upstreams_lets_it() -> None:
    items = runs(FIXTURES_BY_NAME["tools_and_reasoning"])[0]
    seen: list[Any] = []

    def shout(source: Any, event: Any) -> Any:
        seen.append(source)
        if event.type == "TEXT_MESSAGE_CONTENT":
            return event.model_copy(update={"delta": event.delta.upper()})
        return None if event.type == "CUSTOM" else event

    theirs = published(upstream.HarnessAguiStreamObserver(processor=shout), items)
    native = list(seen)
    seen.clear()
    assert published(HarnessAguiStreamObserver(processor=shout), items) == theirs
    assert seen == native and all(type(source).__module__.startswith("a13n_harness") for source in seen)
