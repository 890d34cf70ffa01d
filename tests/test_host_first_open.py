"""Opening a store file that other connections and processes are creating or writing at the same moment.

Issue 13, item 6: ``PRAGMA journal_mode=WAL`` on a new file answered ``database is locked`` at once,
without waiting out the timeout, when another connection held the file's write lock (about 10 of 400
opens with four processes starting together).
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal
from harness_agui.testing import SourceBuilder

STORES = [SqliteSourceJournal, SqliteDeliveryLog]


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.__name__)
def test_a_store_opened_while_another_connection_holds_the_write_lock_waits_for_it(tmp_path, store):
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")                 # a new file, still in rollback mode, write-locked
    holder.execute("CREATE TABLE someone_elses (x)")
    release = threading.Timer(0.3, holder.execute, ("COMMIT",))
    release.start()
    started = time.monotonic()
    try:
        opened = store(path, timeout=10)
    finally:
        release.join()
        holder.close()
    assert time.monotonic() - started >= 0.25        # it waited for the lock instead of failing
    with opened:
        assert opened._db.conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "someone_elses" in tables


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.__name__)
def test_a_store_whose_lock_is_never_released_fails_after_its_timeout_not_before(tmp_path, store):
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("CREATE TABLE someone_elses (x)")
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        store(path, timeout=0.3)
    assert time.monotonic() - started >= 0.25
    holder.close()


def _open_at_once(path: str, kind: int, barrier: Any, results: Any) -> None:
    try:
        barrier.wait(20)
        store = (SqliteSourceJournal if kind == 0 else SqliteDeliveryLog)(path, timeout=20, synchronous="NORMAL")
        if isinstance(store, SqliteSourceJournal):
            store.append(SourceBuilder("t", f"run-{os.getpid()}").observation("x", 1).items[0])
        store.close()
        results.put("opened")
    except BaseException as e:  # reported to the parent, which fails the test with it
        results.put(f"{type(e).__name__}: {e}")


def test_several_processes_opening_one_new_file_at_once_all_succeed(tmp_path):
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    processes, rounds = 4, 20
    deadline = time.monotonic() + 60
    outcomes: list[str] = []
    for n in range(rounds):
        path = str(tmp_path / f"race-{n}.db")
        barrier = ctx.Barrier(processes)
        results = ctx.Queue()
        workers = [ctx.Process(target=_open_at_once, args=(path, i % 2, barrier, results)) for i in range(processes)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(max(1.0, deadline - time.monotonic()))
            if w.is_alive():
                w.kill()
        outcomes.extend(results.get(timeout=5) for w in workers if w.exitcode == 0)
        if time.monotonic() > deadline:
            break
    failures = [o for o in outcomes if o != "opened"]
    assert not failures, f"{len(failures)} of {len(outcomes)} opens failed: {sorted(set(failures))}"
    assert len(outcomes) >= processes * min(rounds, 5)
    with SqliteSourceJournal(Path(tmp_path / "race-0.db")) as journal:
        assert len(journal.runs()) == processes // 2
