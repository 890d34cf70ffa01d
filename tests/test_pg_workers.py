"""Many workers on one PostgreSQL database: leases with fencing tokens, takeover, and the fault test.

The fault test starts 3 worker processes (tests/pg_worker.py) on a throwaway server, journals 50
concurrent Runs of about 200 items each while SIGKILLing a random worker every 0.5 to 2 seconds (at
least four times while the Runs stream: the Harness waits for a kill at four points) and starting a new
one in its place, and has one client per Run follow it over HTTP (SSE), reconnecting
to a random live worker with its Last-Event-ID whenever its worker dies (and sometimes for no
reason). Every client must see every event of its Run exactly once, in order, to the terminal event:
0 lost, 0 duplicated, 0 reordered.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from pg_server import fresh_database, fresh_url

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.host import parse_last_event_id, project_run
from harness_agui.host.postgres import (
    LeaseLostError,
    PostgresDeliveryLog,
    PostgresLeases,
    PostgresSourceJournal,
    Worker,
)
from harness_agui.testing import SourceBuilder, simulated_run
from harness_agui.testing import projection_json as uninterrupted
from harness_agui.wire.agui import agui_to_json

WORKER = Path(__file__).with_name("pg_worker.py")




def a_run(run_id: str, rounds: int = 6) -> list[HarnessStreamEvent]:
    """A Run of about 35 items per round: reasoning, streamed text, a streamed tool call and its result."""
    b = SourceBuilder(f"thread-{run_id}", run_id)
    b.user("Plan a walking tour, one stop per round.")
    for r in range(rounds):
        b.request()
        b.thinking(0, [f"Round {r}: ", "choose ", "the ", "next ", "stop ", "near ", "the ", "last ", "one."])
        b.text(1, [f"Stop {r + 1} ", "is ", "a ", "short ", "walk ", "away; ", "let ", "me ", "check ", "hours."])
        b.tool_call(2, "opening_hours", f"call-{r}", ['{"place": ', f'"stop-{r + 1}", ', '"day": ', '"sunday"}'])
        b.tool_result(f"call-{r}", "opening_hours", {"open": "09:00", "stop": r + 1},
                      outcome="failed" if r % 5 == 4 else "success")
        b.observation("progress", {"round": r})
    b.request()
    b.text(0, ["Here ", "is ", "your ", "tour."])
    b.completed({"stops": rounds}, input_tokens=4000, output_tokens=900)
    return b.items


# -- the throwaway server ----------------------------------------------------------------------

def test_without_the_postgresql_binaries_the_server_fails_saying_where_it_looked(monkeypatch, tmp_path):
    from harness_agui.testing import postgres as module
    from harness_agui.testing.postgres import PostgresNotFoundError, TemporaryPostgres

    monkeypatch.setenv("HARNESS_AGUI_PG_BIN", str(tmp_path))
    monkeypatch.setattr(module.shutil, "which", lambda name: None)
    monkeypatch.setattr(module.glob, "glob", lambda pattern: [])
    with pytest.raises(PostgresNotFoundError, match="initdb, pg_ctl, postgres.*HARNESS_AGUI_PG_BIN"):
        TemporaryPostgres().start()


# -- wake-ups: LISTEN/NOTIFY, not polling ------------------------------------------------------

@pytest.fixture
def url() -> str:
    return fresh_url("workers")


def test_a_waiting_tail_and_a_waiting_follower_are_woken_by_notify_not_by_polling(url):
    items = simulated_run()
    observer = HarnessAguiObserver()
    pairs = [(item, observer.observe(item)) for item in items]
    # recheck=60: a store that polled would leave these waiting for a minute
    journal, log = PostgresSourceJournal(url, recheck=60), PostgresDeliveryLog(url, recheck=60)
    writer_journal, writer_log = PostgresSourceJournal(url), PostgresDeliveryLog(url)
    writer_journal.append(items[0])
    writer_log.record(*pairs[0])

    async def scenario() -> float:
        tail = asyncio.create_task(anext(aiter(journal.tail("run-demo", after=0))))
        follower = log.follow("run-demo", after=log.last_event_id("run-demo"))
        followed = asyncio.create_task(anext(aiter(follower)))
        await asyncio.sleep(0.3)  # both are waiting now
        started = time.monotonic()
        await asyncio.to_thread(writer_journal.append, items[1])
        await asyncio.to_thread(writer_log.record, *pairs[1])
        assert (await asyncio.wait_for(tail, 10)) == items[1]
        assert (await asyncio.wait_for(followed, 10)).source_position == 1
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 5
    for store in (journal, log, writer_journal, writer_log):
        store.close()


def test_a_follower_still_sees_every_event_when_its_listening_connection_is_lost(url):
    import psycopg

    items = simulated_run()
    observer = HarnessAguiObserver()
    pairs = [(item, observer.observe(item)) for item in items]
    log, writer = PostgresDeliveryLog(url, recheck=60), PostgresDeliveryLog(url)

    async def scenario() -> list[str]:
        follower = asyncio.create_task(_collect(log.follow("run-demo")))
        for n, (item, events) in enumerate(pairs):
            if n == len(pairs) // 2:
                with psycopg.connect(url, autocommit=True) as admin:  # the server drops the LISTEN connections
                    killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                           "WHERE query LIKE 'LISTEN%%' AND pid <> pg_backend_pid()").fetchall()
                assert killed
            await asyncio.to_thread(writer.record, item, events)
            await asyncio.sleep(0.002)
        return [d.data for d in await asyncio.wait_for(follower, 20)]

    assert asyncio.run(scenario()) == uninterrupted(items)
    log.close()
    writer.close()


async def _collect(iterator: Any) -> list[Any]:
    return [x async for x in iterator]


# -- leases and fencing ----------------------------------------------------------------------

def test_a_live_holder_keeps_its_run_and_a_released_lease_is_taken_with_a_higher_token(url):
    with PostgresLeases(url, ttl=30) as first, PostgresLeases(url, ttl=30) as second:
        lease = first.acquire("run-1")
        assert lease is not None and lease.token == 1
        assert second.acquire("run-1") is None
        assert first.acquire("run-1") is None  # not twice in one worker either
        first.renew(lease)
        first.release(lease)
        taken = second.acquire("run-1")
        assert taken is not None and taken.token == 2 and taken.holder == second.holder
        with pytest.raises(LeaseLostError):
            first.renew(lease)


def test_the_leases_of_a_worker_whose_connection_died_are_taken_over_at_once(url):
    second = PostgresLeases(url, ttl=30)
    first = PostgresLeases(url, ttl=30)
    lease = first.acquire("run-1")
    assert lease is not None and second.acquire("run-1") is None
    first.close()  # what the server sees when a worker process dies: its connections close
    deadline = time.monotonic() + 5
    taken = None
    while taken is None and time.monotonic() < deadline:
        taken = second.acquire("run-1")
    assert taken is not None and taken.token == 2
    second.close()


def end_sessions(url: str, *pids: int) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_workers_whose_liveness_sessions_ended_take_their_locks_again_and_take_no_live_run_meanwhile(url):
    with PostgresLeases(url, ttl=30, rejoin_grace=0.5) as a, PostgresLeases(url, ttl=30, rejoin_grace=0.5) as b:
        lease = b.acquire("run-b")
        assert lease is not None
        end_sessions(url, a._alive.info.backend_pid, b._alive.info.backend_pid)  # as a server restart does
        assert a.alive() and a.rejoins == 1  # its connection was found lost, opened again, its lock taken again
        assert a.acquire("run-b") is None  # b's lock is free for now, but a has only just rejoined
        time.sleep(0.6)
        assert b.alive() and b.rejoins == 1
        assert a.acquire("run-b") is None  # b holds its lock again: its live Run stays its own
        assert b.holder_of("run-b") == (b.holder, lease.token, True)
        assert a.alive() and a.rejoins == 1  # a held connection is only checked


def test_a_worker_that_cannot_take_its_liveness_lock_again_takes_no_run(url):
    import psycopg

    from harness_agui.host.postgres._pg import LOCK_WORKER

    with PostgresLeases(url, ttl=30) as a, psycopg.connect(url, autocommit=True) as squatter:
        end_sessions(url, a._alive.info.backend_pid)
        squatter.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_WORKER, a.holder))  # its holder's lock
        assert not a.alive()
        assert a.acquire("run-new") is None
        squatter.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_WORKER, a.holder))
        assert a.alive() and a.acquire("run-new") is not None


def test_a_paused_holder_cannot_record_after_its_lease_expired_and_another_worker_took_over(url):
    items = simulated_run()
    observer = HarnessAguiObserver()
    pairs = [(item, observer.observe(item)) for item in items]
    log = PostgresDeliveryLog(url)
    with PostgresLeases(url, ttl=0.3) as slow, PostgresLeases(url, ttl=30) as fast:
        old = slow.acquire("run-demo")
        assert old is not None
        paused = log.fenced(old)
        paused.record(*pairs[0])
        time.sleep(0.4)  # a long pause: the lease expires, nobody renewed it
        with pytest.raises(LeaseLostError):
            paused.record(*pairs[1])  # even before anyone took over, an expired lease writes nothing
        new = fast.acquire("run-demo")
        assert new is not None and new.token == old.token + 1
        taker = log.fenced(new)
        taker.record(*pairs[1])
        with pytest.raises(LeaseLostError, match="took the run over"):
            paused.record(*pairs[2])
        taker.record(*pairs[2])
    assert [d.data for d in log.replay("run-demo")] == [agui_to_json(e) for _, es in pairs[:3] for e in es]
    log.close()


def test_project_run_with_a_fenced_log_stops_when_the_lease_is_lost(url):
    items = simulated_run()
    journal, log = PostgresSourceJournal(url), PostgresDeliveryLog(url)
    for item in items[:30]:
        journal.append(item)
    with PostgresLeases(url, ttl=30) as first, PostgresLeases(url, ttl=30) as second:
        old = first.acquire("run-demo")
        assert old is not None

        async def scenario() -> None:
            task = asyncio.create_task(project_run("run-demo", journal, log.fenced(old)))
            while log.cursor("run-demo") != 29:
                await asyncio.sleep(0.01)
            first.release(old)
            new = second.acquire("run-demo")  # taken over while the first projector waits for items
            assert new is not None
            await asyncio.to_thread(journal.append, items[30])
            with pytest.raises(LeaseLostError):
                await task

        asyncio.run(scenario())
    assert log.cursor("run-demo") == 29
    journal.close()
    log.close()


def test_a_worker_projects_new_runs_and_takes_over_a_dead_workers_runs(url):
    runs = {f"run-{n}": a_run(f"run-{n}", rounds=2) for n in range(4)}
    journal, log = PostgresSourceJournal(url), PostgresDeliveryLog(url)
    dead = PostgresLeases(url, ttl=30)
    for run_id in ("run-0", "run-1"):
        assert dead.acquire(run_id) is not None
    for items in runs.values():
        for item in items:
            journal.append(item)

    async def scenario() -> Worker:
        leases = PostgresLeases(url, ttl=5)
        worker = Worker(journal, log, leases, scan_interval=0.05)
        task = asyncio.create_task(worker.run())
        while worker.completed < 2:
            await asyncio.sleep(0.02)
        assert not any(log.finished(r) for r in ("run-0", "run-1"))  # a live worker holds them
        dead.close()  # it dies
        while worker.completed < 4:
            await asyncio.sleep(0.02)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        leases.close()
        return worker

    asyncio.run(asyncio.wait_for(scenario(), 30))
    for run_id, items in runs.items():
        assert [d.data for d in log.replay(run_id)] == uninterrupted(items)
    journal.close()
    log.close()


def test_a_projection_that_fails_for_good_ends_its_run_with_one_run_error(url):
    items = simulated_run()
    journal, log = PostgresSourceJournal(url), PostgresDeliveryLog(url)
    for item in items:
        journal.append(item)

    def broken(item: HarnessStreamEvent, event: Any) -> Any:
        if item.sequence == 5:
            raise RuntimeError("the processor broke")
        return event

    async def scenario() -> Worker:
        leases = PostgresLeases(url, ttl=5)
        worker = Worker(journal, log, leases, processor=broken, scan_interval=0.05)
        task = asyncio.create_task(worker.run())
        while not log.finished("run-demo"):
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # it is not taken again
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        leases.close()
        return worker

    worker = asyncio.run(asyncio.wait_for(scenario(), 30))
    delivered = log.replay("run-demo")
    assert delivered[-1].event_type == "RUN_ERROR" and "the processor broke" in delivered[-1].data
    assert [d.event_type for d in delivered].count("RUN_ERROR") == 1 and worker.completed == 0
    assert log.cursor("run-demo") == 4
    journal.close()
    log.close()


# -- the fault test --------------------------------------------------------------------------

RUNS = 50
ROUNDS = 6  # about 200 items per Run
WORKERS = 3


class WorkerProcess:
    def __init__(self, url: str, port: int) -> None:
        self.url = url
        self.port = port
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), self.url, str(self.port), "--max-runs", str(RUNS // 2 + 1),
             "--ttl", "5", "--scan", "0.2"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            raise AssertionError(f"worker on port {self.port} did not start (exit code {self.process.poll()})")

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()


@attrs.define
class Stats:
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    reconnects: int = 0
    kills: int = 0
    refused: int = 0


async def follow(run_id: str, workers: list[WorkerProcess], stats: Stats, rng: random.Random) -> list[str]:
    """A UI client: follows the Run's events from random workers, reconnecting with its Last-Event-ID."""
    received: list[str] = []
    last_id: str | None = None
    last = 0
    while True:
        port = rng.choice([w.port for w in workers])
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            stats.refused += 1
            await asyncio.sleep(0.05)
            continue
        stats.reconnects += 1
        header = f"Last-Event-ID: {last_id}\r\n" if last_id else ""
        writer.write(f"GET /runs/{run_id}/events HTTP/1.1\r\nHost: worker\r\n{header}\r\n".encode())
        finished = False
        try:
            status = await reader.readline()
            if not status:
                continue
            assert status.startswith(b"HTTP/1.1 200"), status
            while (await reader.readline()).strip():
                pass
            leave_after = rng.randrange(5, 400)  # sometimes a client goes away for no reason
            while True:
                id_line = await reader.readline()
                if not id_line:
                    break
                data_line, _ = await reader.readline(), await reader.readline()
                sse_id = id_line.decode().removeprefix("id: ").strip()
                n = parse_last_event_id(sse_id, run_id=run_id)
                if n < last + 1:
                    stats.duplicated += 1
                    stats.reordered += n < last
                    continue
                if n > last + 1:
                    stats.lost += n - last - 1
                received.append(data_line.decode().removeprefix("data: ").rstrip("\n"))
                last, last_id = n, sse_id
                if '"type":"RUN_FINISHED"' in received[-1] or '"type":"RUN_ERROR"' in received[-1]:
                    finished = True
                    break
                leave_after -= 1
                if leave_after == 0:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
        if finished:
            return received


def test_three_workers_killed_at_random_deliver_every_event_of_50_runs_once_in_order():
    rng = random.Random(15)
    url = fresh_database("workers")
    runs = {f"run-{n:02d}": a_run(f"run-{n:02d}", ROUNDS) for n in range(RUNS)}
    expected = {run_id: uninterrupted(items) for run_id, items in runs.items()}
    workers = []
    for _ in range(WORKERS):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        workers.append(WorkerProcess(url, port))
    journal = PostgresSourceJournal(url, pool_size=4)
    stats = Stats()
    started = time.monotonic()
    try:
        for w in workers:
            w.start()

        def harness(run_ids: list[str]) -> None:
            # The Harness side: every Run streams at once, item by item, now and then delivering
            # an item twice (a duplicate delivery is a no-op).
            cursors = {run_id: 0 for run_id in run_ids}
            local = random.Random(run_ids[0])
            step = 0
            while cursors:
                step += 1
                if step % (ROUNDS * 8) == 0:  # a few times per Run: go on once a worker died since the last time
                    deadline = time.monotonic() + 30
                    while stats.kills < step // (ROUNDS * 8) and time.monotonic() < deadline:
                        time.sleep(0.01)
                for run_id in list(cursors):
                    n = cursors[run_id]
                    journal.append(runs[run_id][n])
                    if local.random() < 0.01:
                        assert journal.append(runs[run_id][n]) is False
                    cursors[run_id] = n + 1
                    if n + 1 == len(runs[run_id]):
                        del cursors[run_id]
                time.sleep(0.005)

        ids = sorted(runs)
        feeders = [threading.Thread(target=harness, args=(ids[k::2],)) for k in range(2)]
        for f in feeders:
            f.start()

        async def scenario() -> dict[str, list[str]]:
            clients = {run_id: asyncio.create_task(follow(run_id, workers, stats, random.Random(run_id)))
                       for run_id in runs}

            async def killer() -> None:
                while True:
                    await asyncio.sleep(rng.uniform(0.5, 2.0))
                    victim = rng.choice(workers)
                    victim.kill()
                    stats.kills += 1
                    await asyncio.sleep(rng.uniform(0.0, 0.5))
                    await asyncio.to_thread(victim.start)

            chaos = asyncio.create_task(killer())
            try:
                done = await asyncio.wait_for(asyncio.gather(*clients.values()), 100)
            finally:
                chaos.cancel()
                await asyncio.gather(chaos, return_exceptions=True)
            return dict(zip(clients, done, strict=True))

        received = asyncio.run(scenario())
        for f in feeders:
            f.join()
    finally:
        for w in workers:
            w.kill()
        journal.close()
    elapsed = time.monotonic() - started
    print(f"\n{RUNS} runs, {sum(len(r) for r in runs.values())} items, "
          f"{sum(len(e) for e in expected.values())} events, {stats.kills} SIGKILLs, "
          f"{stats.reconnects} connections: {stats.lost} lost, {stats.duplicated} duplicated, "
          f"{stats.reordered} reordered, {elapsed:.1f} s")
    assert (stats.lost, stats.duplicated, stats.reordered) == (0, 0, 0)
    assert stats.kills >= 3
    for run_id in runs:
        assert received[run_id] == expected[run_id], run_id
    with PostgresDeliveryLog(url) as log:
        for run_id in runs:
            assert log.finished(run_id)
            assert [d.data for d in log.replay(run_id)] == expected[run_id]
