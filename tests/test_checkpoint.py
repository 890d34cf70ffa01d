# Checkpoints: restore(checkpoint at k) then observe the rest is the same as
# never stopping, at every cut of any generated history (plain, delegating,
# processed); resume(rest, checkpoint=...) is the same with resume()'s gate
# and atomicity; a checkpoint that is damaged, foreign, of another version or
# processor, or unsafe to decode is refused with CheckpointError and nothing
# changes; and no checkpoint, whatever its bytes, runs code when restored.

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import pickle
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core import checkpoint as cp
from harness_agui.core.errors import AguiObservationError, CheckpointError, SequenceGapError
from harness_agui.testing import SourceBuilder, complete_histories, live_histories, simulated_delegation
from harness_agui.testing.delegation import delegating_runs
from harness_agui.testing.strategies import ReplayStableProcessor, replay_stable_processors

ANY_HISTORY = st.one_of(complete_histories(), live_histories())


def _observed(items: list[Any], **kwargs: Any) -> HarnessAguiObserver:
    observer = HarnessAguiObserver(**kwargs)
    for item in items:
        observer.observe(item)
    return observer


def _check_continues_alike(items: list[Any], cut: int, **kwargs: Any) -> None:
    processor = kwargs.get("processor")
    identity = None if processor is None else repr(processor)
    original = _observed(items[:cut], **kwargs)
    data = original.checkpoint(processor_identity=identity)
    restored = HarnessAguiObserver.restore(data, processor=processor, processor_identity=identity)
    assert not restored.is_fresh
    assert restored.state == original.state
    assert (restored.run_id, restored.event_count) == (original.run_id, original.event_count)
    for item in items[cut:]:
        assert restored.observe(item) == original.observe(item)
    assert restored.snapshot() == original.snapshot()
    assert restored.state == original.state


@given(ANY_HISTORY.filter(bool), st.data())
def test_restoring_a_checkpoint_at_any_cut_then_observing_the_rest_is_the_same_as_never_stopping(
        items: list[Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(items)))
    _check_continues_alike(items, cut)


@given(delegating_runs().filter(lambda r: bool(r.items)), st.data())
def test_a_delegating_stream_restored_at_any_cut_continues_alike(run: Any, data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(run.items)))
    _check_continues_alike(list(run.items), cut)


@given(complete_histories(), replay_stable_processors(), st.data())
def test_a_processed_run_restored_under_the_same_processor_continues_alike(
        items: list[Any], processor: ReplayStableProcessor, data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(items)))
    _check_continues_alike(items, cut, processor=processor)


@given(st.one_of(ANY_HISTORY.filter(bool), delegating_runs().map(lambda r: list(r.items)).filter(bool)), st.data())
def test_resume_from_a_checkpoint_and_the_items_after_it_equals_a_full_resume(
        items: list[Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(items)))
    tail = data.draw(st.integers(cut, len(items)))
    full = HarnessAguiObserver()
    asyncio.run(full.resume(items[:tail]))
    fast = HarnessAguiObserver()
    asyncio.run(fast.resume(items[cut:tail], checkpoint=_observed(items[:cut]).checkpoint()))
    assert fast.state == full.state
    assert fast.snapshot() == full.snapshot()
    for item in items[tail:]:
        assert fast.observe(item) == full.observe(item)


@given(st.one_of(ANY_HISTORY.filter(bool), delegating_runs().map(lambda r: list(r.items)).filter(bool)), st.data())
def test_a_live_only_observer_resumes_from_a_retained_checkpoint_and_emits_the_same_events(
        items: list[Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(items)))
    original = _observed(items[:cut])
    live = HarnessAguiObserver(retain_events=False, track_messages=True)
    asyncio.run(live.resume([], checkpoint=original.checkpoint()))
    again = HarnessAguiObserver.restore(live.checkpoint())
    assert not again.retains_events and again.tracks_messages
    for item in items[cut:]:
        events = original.observe(item)
        assert live.observe(item) == events
        assert again.observe(item) == events
    assert live.event_count == again.event_count == original.event_count
    assert live.messages() == again.messages() == original.messages()


# -- what a checkpoint says ---------------------------------------------------------------------

def test_a_checkpoint_says_what_it_is_without_being_decoded() -> None:
    items = list(simulated_delegation())
    observer = _observed(items[:9], processor=lambda item, event: event)
    data = observer.checkpoint(processor_identity="redact-v2")
    info = cp.inspect(data)
    assert data.startswith(cp.MAGIC)
    assert (info.format, info.library) == (cp.FORMAT, cp.library_version())
    assert (info.thread_id, info.run_id) == (observer.thread_id, observer.run_id)
    assert info.last_sequence == observer.state.last_sequence
    assert info.position == 8  # the 9th item of the stream, child items included
    assert info.event_count == observer.event_count
    assert info.retained and not info.finished and info.digest == "crc32"
    assert info.processor == hashlib.sha256(b"harness-agui processor\0redact-v2").hexdigest()


@given(st.one_of(ANY_HISTORY.filter(bool), delegating_runs().map(lambda r: list(r.items)).filter(bool)), st.data())
def test_a_checkpoint_records_the_stream_position_of_its_last_item(items: list[Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(items)))
    assert cp.inspect(_observed(items[:cut]).checkpoint()).position == cut - 1


def test_the_library_version_a_checkpoint_records_is_the_package_version() -> None:
    import harness_agui

    assert cp.library_version() == harness_agui.__version__


def test_a_restored_observer_checkpoints_to_an_equal_checkpoint() -> None:
    items = list(simulated_delegation())
    original = _observed(items[:12])
    again = HarnessAguiObserver.restore(HarnessAguiObserver.restore(original.checkpoint()).checkpoint())
    assert again.state == original.state
    assert cp.inspect(again.checkpoint()) == cp.inspect(original.checkpoint())


def _long_run(words: int = 9000) -> list[Any]:
    builder = SourceBuilder("thread-long", "run-long").user("go").request()
    return builder.text(0, [f"w{i} " for i in range(words)]).completed("done").items


def test_a_large_log_restored_from_a_keyed_checkpoint_is_decoded_only_when_read() -> None:
    items = _long_run()
    original = _observed(items[:-1])
    assert original.event_count > 2 * 4096  # at least two sealed blocks
    restored = HarnessAguiObserver.restore(original.checkpoint(key=KEY), key=KEY)
    assert "0 of 2" in repr(restored.state.events.sealed_blocks())
    assert restored.observe(items[-1]) == original.observe(items[-1])
    assert "0 of 2" in repr(restored.state.events.sealed_blocks())
    assert restored.snapshot() == original.snapshot()
    assert restored.state.events == original.state.events
    again = HarnessAguiObserver.restore(restored.checkpoint(key=KEY), key=KEY)
    assert again.snapshot() == original.snapshot()


def test_a_large_log_restored_from_an_unkeyed_checkpoint_is_decoded_and_checked_only_when_read() -> None:
    items = _long_run()
    original = _observed(items[:-1])
    restored = HarnessAguiObserver.restore(original.checkpoint())
    assert "0 of 2" in repr(restored.state.events.sealed_blocks())
    assert restored.observe(items[-1]) == original.observe(items[-1])
    assert "0 of 2" in repr(restored.state.events.sealed_blocks())
    assert restored.snapshot() == original.snapshot()
    assert "2 of 2" in repr(restored.state.events.sealed_blocks())
    assert restored.state == original.state


def test_a_live_only_observer_restored_from_a_retained_checkpoint_reads_none_of_its_blocks() -> None:
    items = _long_run()
    original = _observed(items[:-1])
    header, sections = _sections(original.checkpoint())
    damaged = _forged(header, [*sections[:2], _flip(sections[2]), sections[3]], digests=header["blocks"])
    live = HarnessAguiObserver.restore(damaged, retain_events=False)  # only the number of events is needed
    assert live.event_count == original.event_count
    assert live.observe(items[-1]) == original.observe(items[-1])
    with pytest.raises(CheckpointError) as error:  # the message list folds every event: read now
        HarnessAguiObserver.restore(damaged, retain_events=False, track_messages=True)
    assert error.value.problem == "corrupt"
# -- refused checkpoints ---------------------------------------------------------------------

def _checkpoint(**kwargs: Any) -> tuple[list[Any], bytes]:
    items = list(simulated_delegation())
    identity = kwargs.pop("processor_identity", None)
    key = kwargs.pop("key", None)
    return items, _observed(items[:10], **kwargs).checkpoint(processor_identity=identity, key=key)


def _assert_refused(data: Any, problem: str | None = None, **kwargs: Any) -> CheckpointError:
    with pytest.raises(CheckpointError) as restore_error:
        HarnessAguiObserver.restore(data, **kwargs)
    observer = HarnessAguiObserver(processor=kwargs.get("processor"))
    with pytest.raises(CheckpointError) as resume_error:
        asyncio.run(observer.resume([], checkpoint=data, **{k: v for k, v in kwargs.items() if k != "processor"}))
    assert observer.is_fresh and observer.event_count == 0 and observer.run_id is None
    assert restore_error.value.problem == resume_error.value.problem
    if problem is not None:
        assert restore_error.value.problem == problem, restore_error.value
    assert isinstance(restore_error.value, AguiObservationError)
    return restore_error.value


@given(st.data())
def test_a_checkpoint_with_any_byte_changed_is_refused_and_nothing_changes(data: st.DataObject) -> None:
    _, good = _checkpoint()
    at = data.draw(st.integers(0, len(good) - 1))
    flip = data.draw(st.integers(1, 255))
    bad = bytearray(good)
    bad[at] ^= flip
    _assert_refused(bytes(bad))


@given(st.data())
def test_a_truncated_or_extended_checkpoint_is_refused(data: st.DataObject) -> None:
    _, good = _checkpoint()
    cut = data.draw(st.integers(0, len(good) - 1))
    _assert_refused(good[:cut])
    _assert_refused(good + data.draw(st.binary(min_size=1, max_size=40)))


def test_a_checkpoint_of_another_run_is_refused() -> None:
    _, data = _checkpoint()
    error = _assert_refused(data, "foreign", run_id="run-other")
    assert "run-other" in str(error)


def test_a_checkpoint_written_under_another_processor_is_refused() -> None:
    def keep(item: Any, event: Any) -> Any:
        return event

    _, data = _checkpoint(processor=keep, processor_identity="v1")
    _assert_refused(data, "processor", processor=keep, processor_identity="v2")
    _assert_refused(data, "processor")  # no processor now
    _, plain = _checkpoint()
    _assert_refused(plain, "processor", processor=keep, processor_identity="v1")
    assert HarnessAguiObserver.restore(data, processor=keep, processor_identity="v1").run_id == "run-root"


def test_a_processor_without_an_identity_can_neither_write_nor_read_a_checkpoint() -> None:
    items, data = _checkpoint()
    observer = _observed(items[:3], processor=lambda item, event: event)
    with pytest.raises(ValueError, match="processor_identity"):
        observer.checkpoint()
    with pytest.raises(ValueError, match="processor_identity"):
        HarnessAguiObserver.restore(data, processor=lambda item, event: event)
    fresh = HarnessAguiObserver(processor=lambda item, event: event)
    with pytest.raises(ValueError):
        asyncio.run(fresh.resume([], checkpoint=data))
    assert fresh.is_fresh


def test_a_keyed_checkpoint_needs_its_key() -> None:
    _, data = _checkpoint(key=b"host secret")
    assert cp.inspect(data).digest == "hmac-sha256"
    _assert_refused(data, "corrupt")
    _assert_refused(data, "corrupt", key=b"other secret")
    assert HarnessAguiObserver.restore(data, key=b"host secret").run_id == "run-root"
    _, plain = _checkpoint()
    _assert_refused(plain, "corrupt", key=b"host secret")


def _resealed(data: bytes, change: Any) -> bytes:
    """``data`` with its header changed by ``change`` and a valid checksum."""
    header, sections = _sections(data)
    change(header)
    return _forged(header, sections, digests=header.get("blocks"))


def test_a_checkpoint_of_another_format_library_or_python_version_is_refused() -> None:
    _, data = _checkpoint()
    _assert_refused(_resealed(data, lambda h: h.update(format=cp.FORMAT + 1)), "version")
    _assert_refused(_resealed(data, lambda h: h.update(library="0.0.1")), "version")
    _assert_refused(_resealed(data, lambda h: h.update(last_sequence=99)), "corrupt")
    assert HarnessAguiObserver.restore(_resealed(data, lambda h: None)).state is not None


KEY = b"host secret, 32 bytes of it!...."


def _sections(data: bytes) -> tuple[dict[str, Any], list[bytes]]:
    at = len(cp.MAGIC)
    n = int.from_bytes(data[at:at + 4], "big")
    header = json.loads(data[at + 4:at + 4 + n])
    sections, at = [], at + 4 + n
    for length in header["sections"]:
        sections.append(data[at:at + length])
        at += length
    return header, sections


def _forged(header: dict[str, Any], sections: list[bytes], key: bytes | None = None, *,
            digests: list[str] | None = None) -> bytes:
    """A checkpoint of these sections, its header's lengths and digests made to fit (what anyone who can
    write a checkpoint can do without the Host's key): the seal covers the magic, the header and the
    sections before the sealed blocks, each of which has its digest in the header (CRC-32 beside a
    CRC-32, SHA-256 under an HMAC). ``digests`` keeps the blocks' digests as given instead."""
    eager = 2 if header.get("retained") else 1
    if digests is None:
        digests = [zlib.crc32(s).to_bytes(4, "big").hex() if key is None else hashlib.sha256(s).hexdigest()
                   for s in sections[eager:]]
    header = dict(header, sections=[len(s) for s in sections], blocks=digests)
    head = json.dumps(header, separators=(",", ":")).encode()
    sealed = cp.MAGIC + len(head).to_bytes(4, "big") + head + b"".join(sections[:eager])
    rest = b"".join(sections[eager:])
    if key is None:
        return sealed + rest + zlib.crc32(sealed).to_bytes(4, "big")
    return sealed + rest + hmac.new(key, sealed, hashlib.sha256).digest()


def _flip(section: bytes) -> bytes:
    """``section`` with one byte in its middle changed (its framing kept)."""
    at = len(section) // 2
    return section[:at] + bytes([section[at] ^ 0x01]) + section[at + 1:]


def _assert_refused_when_read(data: bytes, **kwargs: Any) -> None:
    """Refused when restored, or, for a block the restore does not read, when its events are first read."""
    try:
        restored = HarnessAguiObserver.restore(data, **kwargs)
    except CheckpointError as e:
        assert e.problem == "corrupt", e
        return
    for _ in range(2):  # and on every read after, not only the first
        with pytest.raises(CheckpointError) as error:
            list(restored.snapshot())
        assert error.value.problem == "corrupt"
    with pytest.raises(CheckpointError):  # never sealed again
        restored.checkpoint(**kwargs)


class _Exploit:
    """Unpickled, it writes a file: what a checkpoint must never be able to do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.marker, "pwned"))


def _code_running_state(marker: Path) -> bytes:
    # The pickle reaches its callable through a dotted name inside a module a checkpoint reader once
    # trusted (protocol 4 resolves "pickle.loads" in harness_agui.core.checkpoint's namespace).
    inner = pickle.dumps(_Exploit(marker), protocol=4)
    return (b"\x80\x04\x8c\x1bharness_agui.core.checkpoint\x8c\x0cpickle.loads\x93C"
            + bytes([len(inner)]) + inner + b"\x85R.")


@pytest.mark.parametrize("keyed", [False, True])
def test_a_checkpoint_holding_a_pickle_that_runs_code_is_refused_without_running_it(
        tmp_path: Path, keyed: bool) -> None:
    marker = tmp_path / "pwned"
    key = KEY if keyed else None
    _, data = _checkpoint(key=key)
    header, sections = _sections(data)
    evil = _forged(header, [_code_running_state(marker), *sections[1:]], key)
    error = _assert_refused(evil, "corrupt", key=key)
    assert "does not decode" in str(error)
    assert not marker.exists()


@pytest.mark.parametrize("state", [
    '["builtins.eval","print(1)"]', '["harness_agui.core.checkpoint.pickle.loads"]', '["os.system","true"]',
    '{"__class__":"ProjectionState"}', '["ProjectionState"]', '["HistoryCursor","r","t",0,false,1]',
    '["t"', '[]', '"a string"', '[1,2]', '["m","k"]', '["is",1]', '["ProjectionState",' * 5000,
])
def test_a_state_that_is_not_one_of_the_library_s_values_is_refused(state: str) -> None:
    _, data = _checkpoint()
    header, sections = _sections(data)
    _assert_refused(_forged(header, [state.encode(), *sections[1:]]), "corrupt")


def test_records_that_are_not_records_of_a_known_kind_are_refused() -> None:
    _, data = _checkpoint()
    header, sections = _sections(data)
    for records in ('[["NOT_A_KIND",1,"x"]]', '[["TEXT_MESSAGE_END",1]]', '[["TEXT_MESSAGE_END","1","m"]]',
                    '[["TEXT_MESSAGE_END",1,2]]', '{"a":1}', '[[]]', '[["TEXT_MESSAGE_END",true,"m"]]'):
        _assert_refused(_forged(header, [sections[0], records.encode(), *sections[2:]]), "corrupt")


def test_a_forged_checkpoint_with_two_sealed_blocks_swapped_is_refused_when_restored_or_read() -> None:
    items = _long_run()
    original = _observed(items[:-1])
    header, sections = _sections(original.checkpoint())
    assert len(sections) == 4  # state, the unsealed records, two sealed blocks
    # The blocks swapped with the header's lengths and digests kept (the sections no longer fall on
    # records) ...
    body = b"".join(sections[:2] + [sections[3], sections[2]])
    kept = cp.MAGIC + len(json.dumps(header, separators=(",", ":")).encode()).to_bytes(4, "big") + json.dumps(
        header, separators=(",", ":")).encode()
    n = len(kept) + len(sections[0]) + len(sections[1])
    _assert_refused_when_read(kept + body + zlib.crc32((kept + body)[:n]).to_bytes(4, "big"))
    # ... or a block that does not hold a whole block of records, its digest made to fit.
    _assert_refused_when_read(_forged(header, sections[:3] + [sections[3][:len(sections[3]) // 2] + b"]"]))
    # Swapped whole with their digests, the blocks still decode, but a keyed checkpoint's HMAC no longer
    # matches.
    header, sections = _sections(original.checkpoint(key=KEY))
    swapped = _forged(header, sections[:2] + [sections[3], sections[2]], b"another key entirely, 32 bytes.")
    _assert_refused(swapped, "corrupt", key=KEY)


@pytest.mark.parametrize("keyed", [False, True])
def test_a_damaged_sealed_block_is_refused_when_first_read_and_never_sealed_again(keyed: bool) -> None:
    key = KEY if keyed else None
    original = _observed(_long_run()[:-1])
    data = original.checkpoint(key=key)
    header, sections = _sections(data)
    damaged = _forged(header, [*sections[:2], sections[2], _flip(sections[3])], key, digests=header["blocks"])
    _assert_refused_when_read(damaged, key=key)
    with pytest.raises(CheckpointError) as error:  # what the Host kit's store checks before it keeps one
        cp.verify_seal(damaged, key)
    assert error.value.problem == "corrupt"
    cp.verify_seal(data, key)


def test_a_forged_record_in_a_sealed_block_with_a_matching_crc_is_refused_when_first_read() -> None:
    original = _observed(_long_run()[:-1])
    header, sections = _sections(original.checkpoint())
    records = json.loads(sections[2])
    records[7] = ["CUSTOM", 1, "name", "not JSON"]
    forged = _forged(header, [*sections[:2], json.dumps(records).encode(), sections[3]])
    cp.verify_seal(forged, None)  # the CRC is right: only decoding the block finds the forgery
    _assert_refused_when_read(forged)


def test_a_checkpoint_whose_block_digests_are_not_digests_is_refused() -> None:
    original = _observed(_long_run()[:-1])
    header, sections = _sections(original.checkpoint())
    for digests in ([], ["00"] * 2, ["é" * 8] * 2, [1, 2], "0" * 16):
        _assert_refused(_forged(header, sections, digests=digests), "corrupt")  # type: ignore[arg-type]


def test_something_that_is_not_a_checkpoint_is_refused() -> None:
    _assert_refused(b"", "format")
    _assert_refused(b'{"v":1,"kind":"event"}\n', "format")
    with pytest.raises(TypeError):
        HarnessAguiObserver.restore("a string")  # type: ignore[arg-type]


def test_a_live_only_checkpoint_cannot_restore_an_observer_that_retains_events() -> None:
    items = list(simulated_delegation())
    live = _observed(items[:10], retain_events=False)
    data = live.checkpoint()
    assert not cp.inspect(data).retained
    with pytest.raises(CheckpointError) as error:
        HarnessAguiObserver.restore(data, retain_events=True)
    assert error.value.problem == "mode"
    retained = HarnessAguiObserver()
    with pytest.raises(CheckpointError):
        asyncio.run(retained.resume([], checkpoint=data))
    assert retained.is_fresh
    untracked = HarnessAguiObserver.restore(data)
    assert not untracked.tracks_messages
    with pytest.raises(CheckpointError):
        HarnessAguiObserver.restore(data, track_messages=True)


# -- the resume gate ---------------------------------------------------------------------

def test_resume_from_a_checkpoint_needs_a_fresh_observer() -> None:
    items, data = _checkpoint()
    observer = _observed(items[:1])
    before = observer.state
    with pytest.raises(AguiObservationError, match="fresh"):
        asyncio.run(observer.resume(items[10:], checkpoint=data))
    assert observer.state is before
    restored = HarnessAguiObserver.restore(data)
    with pytest.raises(AguiObservationError, match="fresh"):
        asyncio.run(restored.resume([], checkpoint=data))


def test_a_gap_after_the_checkpoint_fails_the_resume_and_leaves_the_observer_fresh() -> None:
    items, data = _checkpoint()
    observer = HarnessAguiObserver()
    with pytest.raises(SequenceGapError):
        asyncio.run(observer.resume(items[11:], checkpoint=data))
    assert observer.is_fresh
    asyncio.run(observer.resume(items[10:], checkpoint=data))  # the Host retries with the right tail
    assert observer.state == _observed(items).state


def test_a_failing_history_after_a_checkpoint_leaves_the_observer_fresh() -> None:
    items, data = _checkpoint()

    def broken() -> Any:
        yield from items[10:12]
        raise OSError("journal gone")

    observer = HarnessAguiObserver()
    with pytest.raises(OSError):
        asyncio.run(observer.resume(broken(), checkpoint=data))
    assert observer.is_fresh and observer.event_count == 0


def test_a_fresh_observer_has_nothing_to_checkpoint() -> None:
    with pytest.raises(ValueError):
        HarnessAguiObserver().checkpoint()


# -- the Host kit's checkpoint store ---------------------------------------------------------------

def _journal_with(path: Any, items: list[Any]) -> Any:
    from harness_agui.host import SqliteSourceJournal

    journal = SqliteSourceJournal(path, synchronous="OFF")
    for item in items:
        journal.append(item, root_run_id=items[0].run_id)
    return journal


def test_the_store_keeps_the_latest_checkpoints_of_each_run(tmp_path: Any) -> None:
    from harness_agui.host.checkpoints import SqliteCheckpointStore

    items = list(simulated_delegation())
    with SqliteCheckpointStore(tmp_path / "run.db", every=4, keep=2) as store:
        observer = HarnessAguiObserver()
        written = []
        for item in items:
            observer.observe(item)
            stored = store.offer("run-root", observer)
            if stored is not None:
                written.append(stored.position)
        assert written == list(range(3, len(items), 4))
        assert store.positions("run-root") == written[::-1][:2]
        latest = store.latest("run-root")
        assert latest is not None and latest.position == written[-1]
        assert HarnessAguiObserver.restore(latest.data, key=store.key).event_count == latest.event_count
        assert store.latest("run-root", through=written[-1] - 1) is not None
        assert store.latest("run-other") is None
        with pytest.raises(CheckpointError):
            store.save("run-other", latest.data)
        store.discard("run-root")
        assert store.positions("run-root") == []


@given(st.data())
def test_resume_from_the_latest_checkpoint_equals_a_full_resume(tmp_path_factory: Any, data: st.DataObject) -> None:
    from harness_agui.host.checkpoints import SqliteCheckpointStore, resume_from_checkpoint

    items = list(simulated_delegation())
    path = tmp_path_factory.mktemp("cp") / "run.db"
    journal = _journal_with(path, items)
    every = data.draw(st.integers(1, 10))
    through = data.draw(st.integers(0, len(items) - 1))
    with SqliteCheckpointStore(path, every=every) as store:
        writer = HarnessAguiObserver()
        for item in items[:through + 1]:
            writer.observe(item)
            store.offer("run-root", writer)
        observer = HarnessAguiObserver()
        used = asyncio.run(resume_from_checkpoint(observer, store, journal, "run-root", through=through))
        newest = max(store.positions("run-root"), default=None)
        assert (used and used.position) == newest
        if used is not None:
            assert observer.snapshot()[:used.event_count] == HarnessAguiObserver.restore(
                used.data, key=store.key).snapshot()
        assert observer.state == writer.state
    journal.close()


def test_a_damaged_or_unusable_checkpoint_falls_back_to_an_older_one_then_to_the_journal(tmp_path: Any) -> None:
    import sqlite3

    from harness_agui.host.checkpoints import CHECKPOINTS, SqliteCheckpointStore, resume_from_checkpoint

    items = list(simulated_delegation())
    path = tmp_path / "run.db"
    journal = _journal_with(path, items)
    through = len(items) - 1
    full = _observed(items)
    with SqliteCheckpointStore(path, every=5, keep=3) as store:
        writer = HarnessAguiObserver()
        for item in items:
            writer.observe(item)
            store.offer("run-root", writer)
        newest, older, *_ = store.positions("run-root")
        conn = sqlite3.connect(path)
        conn.execute(f"UPDATE {CHECKPOINTS.name} SET data = 'AAAA' WHERE position = ?", (newest,))
        conn.commit()
        observer = HarnessAguiObserver()
        used = asyncio.run(resume_from_checkpoint(observer, store, journal, "run-root", through=through))
        assert used is not None and used.position == older
        assert observer.state == full.state
        # A processor identity none of them was written under: the full history.
        keep = HarnessAguiObserver(processor=lambda item, event: event)
        used = asyncio.run(resume_from_checkpoint(keep, store, journal, "run-root", through=through,
                                                  processor_identity="v9"))
        assert used is None and keep.event_count == full.event_count
        conn.close()
    journal.close()


def test_the_store_seals_checkpoints_with_a_key_of_its_own_kept_beside_the_database(tmp_path: Any) -> None:
    from harness_agui.host.checkpoints import SqliteCheckpointStore

    items = list(simulated_delegation())
    with SqliteCheckpointStore(tmp_path / "run.db", every=1) as store:
        stored = store.offer("run-root", _observed(items[:5]))
        assert stored is not None and cp.inspect(stored.data).digest == "hmac-sha256"
        assert store.key_path == str(tmp_path / "run.db") + ".checkpoint-key"
        assert os.stat(store.key_path).st_mode & 0o777 == 0o600 and len(store.key) == 32
        _assert_refused(stored.data, "corrupt")  # not without the key
        first_key = store.key
    with SqliteCheckpointStore(tmp_path / "run.db", read_only=True) as again:
        assert again.key == first_key  # the same key on every later open
    with SqliteCheckpointStore(tmp_path / "run.db", key=b"the Host's own key: 16+ bytes") as own:
        assert own.key_path is None and own.key == b"the Host's own key: 16+ bytes"
    from harness_agui.host.errors import StorageError

    SqliteCheckpointStore(tmp_path / "other.db", key=b"the Host's own key: 16+ bytes").close()  # makes no key file
    with pytest.raises(StorageError, match="no checkpoint key file"):
        SqliteCheckpointStore(tmp_path / "other.db", read_only=True)
    with pytest.raises(ValueError, match="16 bytes"):
        SqliteCheckpointStore(tmp_path / "run.db", key=b"short")


def test_a_checkpoint_row_forged_without_the_store_s_key_is_passed_over_and_runs_no_code(tmp_path: Path) -> None:
    import base64
    import sqlite3

    from harness_agui.host import SqliteDeliveryLog, project_run
    from harness_agui.host.checkpoints import CHECKPOINTS, SqliteCheckpointStore

    items = list(simulated_delegation())
    path = tmp_path / "run.db"
    journal = _journal_with(path, items)
    marker = tmp_path / "pwned"
    with SqliteDeliveryLog(path, synchronous="OFF") as deliveries, SqliteCheckpointStore(path, every=4) as store:
        done = asyncio.run(project_run("run-root", journal, deliveries, checkpoints=store))
        good = store.load("run-root", store.positions("run-root")[0])
        assert good is not None
        header, sections = _sections(good.data)
        # Written into the table by someone who cannot read the key file: a well-formed checkpoint with a
        # valid CRC, one whose state is a code-running pickle, and that one under a guessed key.
        forgeries = [_forged({**header, "digest": "crc32"}, sections),
                     _forged({**header, "digest": "crc32"}, [_code_running_state(marker), *sections[1:]]),
                     _forged(header, [_code_running_state(marker), *sections[1:]], b"a guessed key, 32 bytes long...")]
        for forged in forgeries:
            with pytest.raises(CheckpointError):
                store.save("run-root", forged)  # the store itself refuses it: written into the table directly
            info = cp.inspect(forged)
            row = ("run-root", info.position, info.last_sequence, info.event_count, info.library,
                   info.processor or "", base64.b64encode(forged).decode())
            conn = sqlite3.connect(path)
            conn.execute(f"DELETE FROM {CHECKPOINTS.name}")
            conn.execute(CHECKPOINTS.insert, CHECKPOINTS.sealed(row))
            conn.commit()
            conn.close()
            assert store.load("run-root", info.position) is not None
            # A restart: the delivery cursor is at the end, so the projection is rebuilt from the newest
            # checkpoint that verifies, here none: the whole journal.
            again = asyncio.run(project_run("run-root", journal, deliveries, checkpoints=store))
            assert again.state == done.state
        assert not marker.exists()
    journal.close()


def test_a_state_holding_a_value_of_the_wrong_type_anywhere_is_refused() -> None:
    items = list(simulated_delegation())

    def change(value: Any, tag: str, at: int, new: Any) -> bool:
        if isinstance(value, list):
            if value and value[0] == tag:
                value[at] = new
                return True
            return any(change(v, tag, at, new) for v in value)
        return False

    tried = set()
    for cut in (10, 20):
        header, sections = _sections(_observed(items[:cut]).checkpoint())
        for tag, at, new in (("HistoryCursor", 3, "3"), ("HistoryCursor", 4, 1), ("OpenPart", 2, "picture"),
                             ("RunLedger", 1, "7"), ("SubagentState", 3, "sleeping"), ("ProjectionState", 5, "seven")):
            forged_state = json.loads(sections[0])
            if not change(forged_state, tag, at, new):
                continue
            tried.add(tag)
            error = _assert_refused(_forged(header, [json.dumps(forged_state).encode(), *sections[1:]]), "corrupt")
            assert tag in str(error)
    assert tried == {"HistoryCursor", "OpenPart", "RunLedger", "SubagentState", "ProjectionState"}
