# The compat DisplayFold against a13n-stream-protocol 0.21.0's own: both fold the event JSON upstream's observer
# publishes for every committed real a13n-harness Run (with each native item as the fold's source, so that
# non-success tool results fail their items), and must hold the same items and the same checkpoint JSON
# after every item. Item timestamps come from the events, so nothing is compared by shape.

from __future__ import annotations

from pathlib import Path

import pytest

from harness_agui.compat.a13n_stream_protocol import display as compat

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")
upstream_stream = pytest.importorskip("a13n_stream_protocol", reason="needs a13n-stream-protocol 0.21.0")
upstream = pytest.importorskip("a13n_stream_protocol.display")

from test_compat_events import FIXTURES, runs  # noqa: E402 (after the skips; the fixture Runs, as native items)


@pytest.mark.parametrize("retain_content", [False, True])
@pytest.mark.parametrize("path", FIXTURES, ids=[path.stem for path in FIXTURES])
def test_the_compat_fold_equals_upstreams_fold_after_every_item_of_every_committed_run(
        path: Path, retain_content: bool) -> None:
    for items in runs(path):
        observer = upstream_stream.HarnessAguiStreamObserver(retain_events=False)
        theirs = upstream.DisplayFold(items[0].run_id, attempt=1, retain_content=retain_content)
        ours = compat.DisplayFold(items[0].run_id, attempt=1, retain_content=retain_content)
        for item in items:
            events = [event.model_dump(mode="json", by_alias=True) for event in observer.observe(item)]
            their_observed = theirs.fold([dict(event) for event in events], item)
            our_observed = ours.fold([dict(event) for event in events], item)
            assert [o.model_dump(mode="json") for o in our_observed] == [
                o.model_dump(mode="json") for o in their_observed]
            assert ours.export().model_dump(mode="json") == theirs.export().model_dump(mode="json")


def test_a_restored_compat_fold_continues_like_upstreams_from_every_cut() -> None:
    items = runs(FIXTURES[0])[0]
    observer = upstream_stream.HarnessAguiStreamObserver(retain_events=False)
    batches = [[e.model_dump(mode="json", by_alias=True) for e in observer.observe(item)] for item in items]
    theirs = upstream.DisplayFold(items[0].run_id)
    for batch in batches:
        theirs.fold([dict(event) for event in batch])
    for cut in range(len(batches) + 1):
        first = compat.DisplayFold(items[0].run_id)
        for batch in batches[:cut]:
            first.fold([dict(event) for event in batch])
        restored = compat.DisplayFold.restore(
            compat.DisplaySnapshot.model_validate_json(first.export().model_dump_json()))
        for batch in batches[cut:]:
            restored.fold([dict(event) for event in batch])
        assert restored.export().model_dump(mode="json") == theirs.export().model_dump(mode="json")


@pytest.mark.parametrize("path", FIXTURES, ids=[path.stem for path in FIXTURES])
def test_the_compat_fold_on_its_own_observer_equals_upstreams_fold_on_upstreams(path: Path) -> None:
    for items in runs(path):
        theirs = upstream.DisplayFold(items[0].run_id, attempt=1, full_content=True)
        ours = compat.DisplayFold(items[0].run_id, attempt=1, full_content=True)
        for item in items:
            their_observed = theirs.fold(theirs.events(item), item)
            our_observed = ours.fold(ours.events(item), item)
            assert [o.model_dump(mode="json") for o in our_observed] == [
                o.model_dump(mode="json") for o in their_observed]
            # The checkpoint holds the observer's continuation too: a Host persists it byte for byte.
            assert ours.capture_delta().model_dump_json() == theirs.capture_delta().model_dump_json()
