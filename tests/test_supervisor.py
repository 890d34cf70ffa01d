"""The run supervisor (``host.supervisor``) in process, on SQLite: what it promises about commits, the
in-memory hand-off, followers and a Harness that resends. tests/test_serve*.py drive it over HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harness_agui import HarnessStreamEvent
from harness_agui.host import (
    FollowerLimitError,
    SqliteDeliveryLog,
    SqliteSourceJournal,
    parse_last_event_id,
)
from harness_agui.host.batch import GroupCommit
from harness_agui.host.runner import CallableRun
from harness_agui.host.stores import stores_of
from harness_agui.host.supervisor import RunSupervisor
from harness_agui.testing import SourceBuilder, projection_json, simulated_run


def a_run(run_id: str, deltas: int = 30) -> list[HarnessStreamEvent]:
    b = SourceBuilder("thread-s", run_id)
    b.user("Count.").request().text(0, [f"{n} " for n in range(deltas)]).completed("done")
    return b.items


async def paced(items: list[HarnessStreamEvent], pace: float = 0.002) -> AsyncIterator[HarnessStreamEvent]:
    for item in items:
        await asyncio.sleep(pace)
        yield item


def frames_of(chunks: list[bytes]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for frame in b"".join(chunks).decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
        if "data" in lines:
            number = int(lines["id"].split(".")[0]) if "id" in lines else 0
            out.append((number, json.loads(lines["data"])))
    return out


class Host:
    """A supervisor on a fresh SQLite file, with the stores it drives."""

    def __init__(self, path: Path, **options: Any) -> None:
        self.journal = SqliteSourceJournal(path, synchronous="NORMAL")
        self.deliveries = SqliteDeliveryLog(path, synchronous="NORMAL")
        self.supervisor = RunSupervisor(stores_of(self.journal, self.deliveries), poll_interval=0.01, **options)

    async def close(self) -> None:
        await self.supervisor.stop()
        self.supervisor.stores.close()
        self.journal.close()
        self.deliveries.close()


async def collect(iterator: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in iterator]


def test_every_event_a_follower_is_sent_is_committed_with_its_item_before_it_is_sent(tmp_path: Path) -> None:
    items = a_run("run-durable")

    async def scenario() -> list[tuple[int, dict[str, Any]]]:
        host = Host(tmp_path / "host.db")
        seen: list[bytes] = []
        with SqliteDeliveryLog(tmp_path / "host.db", read_only=True) as log, \
                SqliteSourceJournal(tmp_path / "host.db", read_only=True) as journal:
            host.supervisor.start_run(CallableRun(lambda: paced(items), thread_id="thread-s", run_id="run-durable"))
            async for chunk in host.supervisor.follow("run-durable"):
                seen.append(chunk)
                last = frames_of(seen)[-1][0]
                assert log.last_event_id("run-durable") >= last  # the event is in the database ...
                cursor = journal.cursor("run-durable")
                assert cursor is not None and cursor >= log.page("run-durable", after=last - 1).deliveries[0] \
                    .source_position  # ... and so is the item that produced it
        await host.close()
        return frames_of(seen)

    got = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert [json.dumps(e, separators=(",", ":")) for _, e in got] == projection_json(items)
    assert [n for n, _ in got] == list(range(1, len(got) + 1))


def test_the_writes_of_runs_that_stream_at_once_share_transactions(tmp_path: Path) -> None:
    runs = {f"run-{n}": a_run(f"run-{n}") for n in range(20)}

    async def scenario() -> tuple[int, int]:
        host = Host(tmp_path / "host.db", group_commit=GroupCommit(max_items=512, max_delay=0.005))
        for run_id, items in runs.items():
            host.supervisor.start_run(CallableRun(lambda items=items: paced(items), thread_id="thread-s",
                                                  run_id=run_id))
        for run_id in runs:
            await host.supervisor.wait(run_id)
        writer = host.supervisor.writer
        batches, written = writer.batches, writer.items
        await host.close()
        return batches, written

    batches, written = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert written == sum(len(items) for items in runs.values())
    assert batches * 4 < written  # one fsync per batch of several Runs' items, not one per item
    with SqliteDeliveryLog(tmp_path / "host.db", read_only=True) as log:
        for run_id, items in runs.items():
            assert [d.data for d in log.replay(run_id)] == projection_json(items)


def test_followers_of_a_run_driven_here_are_served_from_memory_without_reading_the_log(tmp_path: Path) -> None:
    items = a_run("run-memory", deltas=60)
    reads: list[int] = []

    async def scenario() -> list[list[bytes]]:
        host = Host(tmp_path / "host.db")
        page = host.deliveries.page

        def counted(run_id: str, **options: Any) -> Any:
            reads.append(options["after"])
            return page(run_id, **options)

        host.deliveries.page = counted  # type: ignore[method-assign]
        host.supervisor.start_run(CallableRun(lambda: paced(items, 0.005), thread_id="thread-s", run_id="run-memory"))
        followers = [asyncio.create_task(collect(host.supervisor.follow("run-memory"))) for _ in range(5)]
        got = await asyncio.gather(*followers)
        await host.close()
        return got

    got = asyncio.run(asyncio.wait_for(scenario(), 30))
    for chunks in got:
        assert [json.dumps(e, separators=(",", ":")) for _, e in frames_of(chunks)] == projection_json(items)
    assert reads == []


def test_a_follower_of_a_run_another_process_drives_on_the_same_file_gets_every_event_once(tmp_path: Path) -> None:
    items = a_run("run-elsewhere", deltas=80)

    async def scenario() -> list[bytes]:
        driver, reader = Host(tmp_path / "host.db"), Host(tmp_path / "host.db")
        driver.supervisor.start_run(CallableRun(lambda: paced(items, 0.003), thread_id="thread-s",
                                                run_id="run-elsewhere"))
        while await reader.supervisor.last_event_id("run-elsewhere") < 5:
            await asyncio.sleep(0.01)
        got = await collect(reader.supervisor.follow("run-elsewhere"))  # pages, then the shared reader
        await driver.close()
        await reader.close()
        return got

    got = frames_of(asyncio.run(asyncio.wait_for(scenario(), 30)))
    assert [json.dumps(e, separators=(",", ":")) for _, e in got] == projection_json(items)
    assert [n for n, _ in got] == list(range(1, len(got) + 1))


def test_a_run_that_has_all_the_followers_it_may_have_turns_the_next_one_away(tmp_path: Path) -> None:
    items = a_run("run-full")

    async def scenario() -> None:
        host = Host(tmp_path / "host.db", max_followers=2)
        host.supervisor.start_run(CallableRun(lambda: paced(items, 0.01), thread_id="thread-s", run_id="run-full"))
        first = [host.supervisor.follow("run-full") for _ in range(2)]
        firsts = [await anext(f) for f in first]  # attached
        assert all(firsts)
        with pytest.raises(FollowerLimitError) as refused:
            host.supervisor.follow("run-full")
        assert refused.value.limit == 2 and refused.value.run_id == "run-full"
        for f in first:
            await f.aclose()  # type: ignore[attr-defined]
        assert await anext(host.supervisor.follow("run-full"))  # room again
        await host.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_reattached_harness_that_resends_stored_items_is_harmless_and_a_different_one_ends_the_run(
        tmp_path: Path) -> None:
    items = simulated_run("thread-s", "run-again")
    database = tmp_path / "host.db"
    with SqliteSourceJournal(database) as journal:  # a crash left 10 items journaled, none recorded
        for item in items[:10]:
            journal.append(item)

    def reattach(thread_id: str, run_id: str, after: int | None) -> AsyncIterator[HarnessStreamEvent]:
        return paced(items[5:], 0)  # resends from earlier than the journal's cursor

    async def recover() -> None:
        host = Host(database, reattach=reattach)
        assert await host.supervisor.start() == ("run-again",)
        await host.supervisor.wait("run-again")
        await host.close()

    asyncio.run(asyncio.wait_for(recover(), 30))
    with SqliteDeliveryLog(database, read_only=True) as log:
        assert [d.data for d in log.replay("run-again")] == projection_json(items)

    other = simulated_run("thread-s", "run-changed")
    with SqliteSourceJournal(database) as journal:
        for item in other[:10]:
            journal.append(item)
    changed = [*other[:6], SourceBuilder("thread-s", "run-changed", first_sequence=6).observation("not", 1).items[0]]

    async def refuse() -> None:
        host = Host(database, reattach=lambda *_: paced(changed, 0))
        await host.supervisor.start()
        await host.supervisor.wait("run-changed")
        await host.close()

    asyncio.run(asyncio.wait_for(refuse(), 30))
    with SqliteDeliveryLog(database, read_only=True) as log:
        last = json.loads(log.replay("run-changed")[-1].data)
    assert last["type"] == "RUN_ERROR" and last["code"] == "harness_agui.source_refused"
    assert "sequence 6 differs from the one stored" in last["message"]


def test_two_supervisors_driving_one_run_record_each_event_once(tmp_path: Path) -> None:
    items = a_run("run-twice", deltas=200)
    database = tmp_path / "host.db"
    with SqliteSourceJournal(database) as journal:  # journaled whole by an ingest, recorded by nobody yet
        for item in items:
            journal.append(item)

    async def scenario() -> None:
        one, two = Host(database), Host(database)
        await asyncio.gather(one.supervisor.start(), two.supervisor.start())
        await asyncio.gather(one.supervisor.wait("run-twice"), two.supervisor.wait("run-twice"))
        await one.close()
        await two.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    with SqliteDeliveryLog(database, read_only=True) as log:
        delivered = log.replay("run-twice")
    assert [d.data for d in delivered] == projection_json(items)
    assert [parse_last_event_id(d.sse_id, run_id="run-twice") for d in delivered] == \
        list(range(1, len(delivered) + 1))


def test_a_run_recovered_at_start_up_reports_its_committed_last_event_id_before_its_driver_resumes_it(
        tmp_path: Path) -> None:
    items = a_run("run-resumed", deltas=60)
    database = tmp_path / "host.db"

    async def interrupted() -> int:
        host = Host(database)
        host.supervisor.start_run(CallableRun(lambda: paced(items, 0.01), thread_id="thread-s",
                                              run_id="run-resumed"))
        while await host.supervisor.last_event_id("run-resumed") < 20:
            await asyncio.sleep(0.01)
        await host.close()  # as a process that stops mid-run: every commit is whole
        with SqliteDeliveryLog(database, read_only=True) as log:
            return log.last_event_id("run-resumed")

    committed = asyncio.run(interrupted())

    async def recovered() -> int:
        host = Host(database, reattach=lambda thread_id, run_id, after: paced(items[after + 1:], 0.01))
        assert await host.supervisor.start() == ("run-resumed",)
        last = await host.supervisor.last_event_id("run-resumed")  # the driver has not run yet
        await host.supervisor.wait("run-resumed")
        await host.close()
        return last

    assert asyncio.run(recovered()) == committed > 0


def test_a_recovered_run_reports_its_committed_last_event_id_while_its_driver_is_still_resuming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The driver sets the observer, then reads the journal's cursors (a thread hop each) before the Run goes
    # on: a client reconnecting in that window with the Last-Event-ID it was sent must not be told "never
    # assigned" (a crash test's reconnect saw 400 there).
    items = a_run("run-window", deltas=60)
    database = tmp_path / "host.db"

    async def interrupted() -> int:
        host = Host(database)
        host.supervisor.start_run(CallableRun(lambda: paced(items, 0.01), thread_id="thread-w", run_id="run-window"))
        while await host.supervisor.last_event_id("run-window") < 20:
            await asyncio.sleep(0.01)
        await host.close()
        with SqliteDeliveryLog(database, read_only=True) as log:
            return log.last_event_id("run-window")

    committed = asyncio.run(interrupted())
    seen: list[int] = []

    async def recovered() -> None:
        host = Host(database, reattach=lambda thread_id, run_id, after: paced(items[after + 1:], 0.01))
        journal_cursor = host.supervisor.journal.stream_cursor
        loop = asyncio.get_running_loop()

        def reading_the_journal(run_id: str, **kwargs: Any) -> Any:  # in the driver's thread hop
            seen.append(asyncio.run_coroutine_threadsafe(host.supervisor.last_event_id(run_id), loop).result(10))
            return journal_cursor(run_id, **kwargs)

        monkeypatch.setattr(host.supervisor.journal, "stream_cursor", reading_the_journal)
        await host.supervisor.start()
        await host.supervisor.wait("run-window")
        await host.close()

    asyncio.run(recovered())
    assert seen and seen[0] == committed > 0


# -- a Run started here: resumed from nothing in one read, or rebuilt when the logs hold some of it ----------

def _counting_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from harness_agui.host import driver

    rebuilt: list[str] = []
    rebuild = driver.rebuild

    async def counted(run_id: str, *args: Any, **kwargs: Any) -> Any:
        rebuilt.append(run_id)
        return await rebuild(run_id, *args, **kwargs)

    monkeypatch.setattr(driver, "rebuild", counted)
    return rebuilt


def _start_and_wait(database: Path, items: list[HarnessStreamEvent]) -> None:
    # Start the Run of ``items`` in a supervisor on ``database`` and wait for its driver to end.
    run_id = items[0].run_id

    async def scenario() -> None:
        host = Host(database)
        host.supervisor.start_run(CallableRun(lambda: paced(items), thread_id="thread-s", run_id=run_id))
        await host.supervisor.wait(run_id)
        await host.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_run_started_here_that_neither_log_holds_is_driven_without_a_rebuild(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = a_run("run-new")
    rebuilt = _counting_rebuilds(monkeypatch)

    async def scenario() -> list[bytes]:
        host = Host(tmp_path / "host.db")
        host.supervisor.start_run(CallableRun(lambda: paced(items), thread_id="thread-s", run_id="run-new"))
        chunks = await collect(host.supervisor.follow("run-new"))
        await host.close()
        return chunks

    chunks = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert [json.dumps(e, separators=(",", ":")) for _, e in frames_of(chunks)] == projection_json(items)
    assert rebuilt == []


def test_a_run_started_here_whose_first_items_are_journaled_already_is_rebuilt_and_continued_after_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The runner gives an id the journal holds items of (an ingest appended them): the driver must start
    # after them, not at position 0; the items the Harness sends again are compared and skipped.
    items = a_run("run-known")
    with SqliteSourceJournal(tmp_path / "host.db") as journal:
        for item in items[:5]:
            journal.append(item)
    rebuilt = _counting_rebuilds(monkeypatch)

    _start_and_wait(tmp_path / "host.db", items)
    with SqliteDeliveryLog(tmp_path / "host.db", read_only=True) as log:
        assert [d.data for d in log.replay("run-known")] == projection_json(items)
    assert rebuilt == ["run-known"]


def test_a_run_started_here_that_the_log_ended_before_its_first_item_stays_ended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ended with a RUN_ERROR while nothing of it was journaled (a Run bound by a server that died, ended at
    # start-up): a runner giving its id again starts nothing after that end.
    from ag_ui.core import RunErrorEvent

    items = a_run("run-ended")
    with SqliteDeliveryLog(tmp_path / "host.db") as log:
        log.fail("run-ended", RunErrorEvent(message="lost", code="harness_agui.harness_lost"), expected_cursor=None,
                 thread_id="thread-s")
    rebuilt = _counting_rebuilds(monkeypatch)

    _start_and_wait(tmp_path / "host.db", items)
    with SqliteDeliveryLog(tmp_path / "host.db", read_only=True) as log, \
            SqliteSourceJournal(tmp_path / "host.db", read_only=True) as journal:
        assert [d.event_type for d in log.replay("run-ended")] == ["RUN_ERROR"]
        assert journal.cursor("run-ended") is None
    assert rebuilt == ["run-ended"]


# -- one owner -------------------------------------------------------------------------------------------------

def test_only_the_supervisors_modules_start_or_drive_a_run() -> None:
    # A reader finds who starts a Run in one place: a runner's start (``.start(run_input, ...)``) and the
    # driving of what it started (``start_run``) are called in host.starts only, a driver made in
    # host.supervisor, the PostgreSQL Worker (its Runs without a ``drive``) and ``project_run`` (the
    # driver's record-by-record mode, for a journal and a delivery log that need not share a database)
    # only, and a Run's items projected and its RUN_ERROR made in host.driver and in the half of it that
    # awaits nothing, host.plan, only.
    import ast

    import harness_agui

    package = Path(harness_agui.__file__).parent
    callers: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if (name == "start" and node.args) or name in ("start_run", "RunDriver", "RunErrorEvent",
                                                            "observe_encoded"):
                callers.setdefault(name, set()).add(path.relative_to(package).as_posix())
    assert callers == {"start": {"host/starts.py"}, "start_run": {"host/starts.py"},
                       "RunDriver": {"host/supervisor.py", "host/postgres/worker.py", "host/driver.py"},
                       "RunErrorEvent": {"host/plan.py"},
                       "observe_encoded": {"host/driver.py", "host/plan.py"}}
