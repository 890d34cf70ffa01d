# A Host that keeps a13n-stream-protocol's vocabulary and takes the Host kit: the Run's items go to a source
# journal, project_run projects them in that vocabulary into a delivery log (crash-safe: a projector that
# starts again resumes from the journal and checks what was delivered), and the events clients receive are
# the ones a13n-stream-protocol publishes for the same Run.

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness_agui import HarnessAguiObserver
from harness_agui.a13n import to_a13n
from harness_agui.core.source import HarnessRunResultEvent
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.wire.codec import decode

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")
upstream = pytest.importorskip("a13n_stream_protocol", reason="needs a13n-stream-protocol 0.21.0: make test-a13n")

VOCABULARY = "a13n-stream-protocol/0.21"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "a13n" / "subagent.jsonl"


def theirs(items: list[Any]) -> list[dict[str, Any]]:
    observer = upstream.HarnessAguiStreamObserver()
    return [event.model_dump(mode="json", by_alias=True) for item in items for event in
            observer.observe(to_a13n(item))]


def test_the_host_kit_delivers_upstreams_events_from_a_journal_and_again_after_a_restart(tmp_path: Path) -> None:
    import harness_agui.compat.a13n_stream_protocol.vocabulary  # noqa: F401 (registers the vocabulary)

    items = [decode(line) for line in FIXTURE.read_text().splitlines()]
    assert isinstance(items[-1], HarnessRunResultEvent)
    root = items[0].run_id
    journal, deliveries = SqliteSourceJournal(tmp_path / "host.db"), SqliteDeliveryLog(tmp_path / "host.db")
    half = len(items) // 2
    for item in items[:half]:
        journal.append(item, root_run_id=root)

    async def project(log: SqliteDeliveryLog, **options: Any) -> None:
        observer = HarnessAguiObserver(vocabulary=VOCABULARY, order="unchecked", max_event_bytes=None, **options)
        await asyncio.wait_for(project_run(root, journal, log, observer=observer, poll_interval=0.01), timeout=0.5)

    # Upstream publishes the Harness's context inputs too (marked display: false, for the client to hide):
    # a Host that serves exactly what upstream served asks for them.
    with pytest.raises(TimeoutError):  # the Run has not ended: the projector follows the journal's tail
        asyncio.run(project(deliveries, show_hidden=True))
    for item in items[half:]:
        journal.append(item, root_run_id=root)
    asyncio.run(project(deliveries, show_hidden=True))  # starts again: resumes, checks the delivered, goes on
    delivered = [json.loads(delivery.data) for delivery in deliveries.replay(root)]
    assert delivered == theirs(items)
    # By default what is for the model only stays in the journal.
    hidden = SqliteDeliveryLog(tmp_path / "hidden.db")
    asyncio.run(project(hidden))
    assert [json.loads(d.data) for d in hidden.replay(root)] == [
        e for e in theirs(items) if e.get("metadata", {}).get("display", True)]


def test_a_checkpoint_keeps_the_vocabulary_and_the_restored_observer_continues_in_it() -> None:
    import harness_agui.compat.a13n_stream_protocol.vocabulary  # noqa: F401 (registers the vocabulary)

    items = [decode(line) for line in FIXTURE.read_text().splitlines()]
    observer = HarnessAguiObserver(vocabulary=VOCABULARY, order="unchecked", max_event_bytes=None, show_hidden=True)
    cut = len(items) // 2
    before = [event for item in items[:cut] for event in observer.observe(item)]
    restored = HarnessAguiObserver.restore(observer.checkpoint())
    assert (restored.options.vocabulary, restored.options.order) == (VOCABULARY, "unchecked")
    after = [event for item in items[cut:] for event in restored.observe(item)]
    assert [event.model_dump(mode="json", by_alias=True) for event in (*before, *after)] == theirs(items)


@pytest.mark.parametrize("order", ["strict", "tap", "unchecked"])
def test_this_librarys_observer_in_upstreams_vocabulary_publishes_upstreams_events_under_every_order(
        order: str) -> None:
    import harness_agui.compat.a13n_stream_protocol.vocabulary  # noqa: F401 (registers the vocabulary)

    for path in sorted(FIXTURE.parent.glob("*.jsonl")):
        runs: list[list[Any]] = [[]]
        for line in path.read_text().splitlines():
            runs[-1].append(decode(line))
            if isinstance(runs[-1][-1], HarnessRunResultEvent):
                runs.append([])
        for items in runs[:-1]:
            observer = HarnessAguiObserver(vocabulary=VOCABULARY, order=order,  # type: ignore[arg-type]
                                           max_event_bytes=None, show_hidden=True)
            ours = [event.model_dump(mode="json", by_alias=True) for item in items for event in observer.observe(item)]
            assert ours == theirs(items), path.stem
