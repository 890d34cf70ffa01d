"""Read-only stores: a replica (or a backup) of a journal and a delivery log opened for reading only.

Issue 13, item 13: a journal on a read-only file could not be opened even for reading, because the
constructor always wrote the schema. ``read_only=True`` opens with SQLite's ``mode=ro``: every read works,
every write raises ``ReadOnlyStoreError``, and the file is never written. The suite runs as root, which
file modes do not stop, so the read-only file and directory cases run in a child process that drops to
an unprivileged user, or on a read-only bind mount in a user namespace (each skipped where the system
does not allow it).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_agui import HarnessAguiObserver
from harness_agui.host import (
    ReadOnlyStoreError,
    SqliteDeliveryLog,
    SqliteSourceJournal,
    StorageError,
    project_run,
)
from harness_agui.testing import SourceBuilder, simulated_run

RUN = "run-demo"
ITEMS = simulated_run(run_id=RUN)


def write_host_db(path: Path, items: list[Any] = ITEMS) -> None:
    with SqliteSourceJournal(path, synchronous="OFF") as journal, SqliteDeliveryLog(path, synchronous="OFF") as log:
        for item in items:
            journal.append(item)
        asyncio.run(project_run(RUN, journal, log))


async def _collect(iterator: Any) -> list[Any]:
    return [x async for x in iterator]


def read_everything(path: Path) -> dict[str, Any]:
    """Every read of both stores, opened read-only, as plain data."""
    with SqliteSourceJournal(path, read_only=True, poll_interval=0.01) as journal, \
            SqliteDeliveryLog(path, read_only=True, poll_interval=0.01) as log:
        assert journal.read_only and log.read_only and "read-only" in repr(journal)
        last = journal.cursor(RUN)
        return {
            "cursor": last,
            "finished": journal.finished(RUN),
            "runs": list(journal.runs()),
            "prefix": len(asyncio.run(_collect(journal.read_prefix(RUN, through=last)))),
            "tail": len(asyncio.run(_collect(journal.tail(RUN, after=None)))),
            "delivery cursor": log.cursor(RUN),
            "events": log.last_event_id(RUN),
            "replay": [d.data for d in log.replay(RUN)],
            "sse": asyncio.run(_collect(log.sse(RUN))),
        }


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())}


@pytest.fixture
def host_db(tmp_path: Path) -> Path:
    path = tmp_path / "replica" / "host.db"
    path.parent.mkdir()
    write_host_db(path)
    return path


def test_a_read_only_session_reads_everything_and_leaves_the_file_as_it_was(host_db):
    before = snapshot(host_db.parent)
    time.sleep(0.01)  # so that a write would change the mtime
    found = read_everything(host_db)
    with SqliteSourceJournal(host_db, synchronous="OFF") as journal, SqliteDeliveryLog(host_db) as log:
        assert found["cursor"] == journal.cursor(RUN) == len(ITEMS) - 1 and found["finished"]
        assert found["replay"] == [d.data for d in log.replay(RUN)]
    after = snapshot(host_db.parent)
    assert after["host.db"] == before["host.db"]
    # SQLite may leave the empty companions any reader of a WAL file creates; never any content.
    assert set(after) - set(before) <= {"host.db-wal", "host.db-shm"}
    assert after.get("host.db-wal", (b"", 0))[0] == b""


def test_every_write_to_a_read_only_store_is_refused_and_writes_nothing(host_db, tmp_path):
    more = SourceBuilder("t", "run-more").observation("x", 1).items
    with SqliteSourceJournal(host_db, read_only=True) as journal, SqliteDeliveryLog(host_db, read_only=True) as log:
        with pytest.raises(ReadOnlyStoreError, match="read-only: append") as info:
            journal.append(more[0])
        assert isinstance(info.value, StorageError) and info.value.path == str(host_db)
        with pytest.raises(ReadOnlyStoreError, match="read-only: record"):
            log.record(more[0], ())
        assert journal.cursor("run-more") is None and log.cursor("run-more") is None
    # An unfinished Run cannot be projected from a read-only log; a finished one needs no write.
    partial = tmp_path / "partial.db"
    with SqliteSourceJournal(partial, synchronous="OFF") as journal, SqliteDeliveryLog(partial) as log:
        observer = HarnessAguiObserver()
        for item in ITEMS[:30]:
            journal.append(item)
        for item in ITEMS[:20]:
            log.record(item, observer.observe(item))
    with SqliteSourceJournal(partial, read_only=True) as journal, SqliteDeliveryLog(partial, read_only=True) as log:
        cursor = log.cursor(RUN)
        with pytest.raises(ReadOnlyStoreError):
            asyncio.run(asyncio.wait_for(project_run(RUN, journal, log, poll_interval=0.01), 5))
        assert log.cursor(RUN) == cursor


def test_a_read_only_open_creates_nothing_and_needs_the_stores_tables(tmp_path):
    missing = tmp_path / "missing.db"
    with pytest.raises(FileNotFoundError):
        SqliteSourceJournal(missing, read_only=True)
    assert not missing.exists()
    journal_only = tmp_path / "journal-only.db"
    with SqliteSourceJournal(journal_only) as journal:
        journal.append(ITEMS[0])
    with pytest.raises(StorageError, match="harness_agui_delivery_runs"):
        SqliteDeliveryLog(journal_only, read_only=True)
    with SqliteSourceJournal(journal_only, read_only=True) as journal:
        assert journal.cursor(RUN) == 0


def test_a_read_only_replica_follows_what_a_writer_appends_meanwhile(tmp_path):
    path = tmp_path / "live.db"
    writer = SqliteSourceJournal(path, synchronous="OFF")
    writer.append(ITEMS[0])

    def harness() -> None:
        for item in ITEMS[1:]:
            writer.append(item)
            time.sleep(0.0005)

    thread = threading.Thread(target=harness)
    with SqliteSourceJournal(path, read_only=True, poll_interval=0.002) as replica:
        thread.start()
        seen = asyncio.run(asyncio.wait_for(_collect(replica.tail(RUN, after=None)), 20))
    thread.join()
    writer.close()
    assert seen == ITEMS


# -- a read-only file and directory, for a user that file modes apply to ----------------------------------

CHILD = """
import json, sys
from pathlib import Path
sys.path[:0] = json.loads(sys.argv[2])
import test_host_read_only as t
path = Path(sys.argv[1])
try:
    found = t.read_everything(path)
    print(json.dumps({"found": found}))
except Exception as e:
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
"""


def run_child(path: Path, *, wrap: list[str] | None = None) -> dict[str, Any]:
    here = str(Path(__file__).resolve().parent)
    command = [*(wrap or []), sys.executable, "-c", CHILD, str(path), json.dumps([here, *sys.path])]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    # Under /tmp, outside pytest's private (0700) base, so that an unprivileged user can reach it.
    directory = Path(tempfile.mkdtemp(prefix="harness-ro-"))
    directory.chmod(0o755)
    yield directory
    for p in [directory, *directory.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    shutil.rmtree(directory)


# root without its capabilities (CAP_DAC_OVERRIDE above all) is held to file modes like any user
NO_CAPABILITIES = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None, reason="root, and no setpriv to drop "
                    "the capabilities that ignore file modes")
def test_a_0444_file_in_a_0555_directory_is_read_by_a_user_who_may_not_write_them(shared_dir):
    path = shared_dir / "replica" / "host.db"
    path.parent.mkdir()
    write_host_db(path)
    expected = read_everything(path)
    for p in path.parent.iterdir():
        if p.name != "host.db":
            p.unlink()  # a copied replica: the database file alone
    path.chmod(0o444)
    path.parent.chmod(0o555)
    before = snapshot(path.parent)
    answer = run_child(path, wrap=NO_CAPABILITIES if os.geteuid() == 0 else None)
    assert answer == {"found": json.loads(json.dumps(expected))}
    assert snapshot(path.parent) == before


def _read_only_mount_available() -> bool:
    if shutil.which("unshare") is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount --bind -o ro / /mnt 2>/dev/null || "
                            "mount --bind -o ro /tmp /tmp"], capture_output=True, timeout=20)
    return probe.returncode == 0


@pytest.mark.skipif(not _read_only_mount_available(), reason="no user namespaces with bind mounts here")
@pytest.mark.parametrize("companions", [False, True], ids=["file-alone", "with-wal-and-shm"])
def test_a_store_on_a_read_only_file_system_is_read(shared_dir, companions):
    path = shared_dir / "host.db"
    write_host_db(path)
    expected = read_everything(path)
    keeper = None
    if companions:  # a writer elsewhere keeps the file open: the -wal and -shm files exist
        keeper = SqliteSourceJournal(path, synchronous="OFF")
        keeper.cursor(RUN)
    else:
        for p in shared_dir.iterdir():
            if p.name != "host.db":
                p.unlink()
    try:
        before = snapshot(shared_dir)
        mount = ["unshare", "-rm", "sh", "-c", f'mount --bind -o ro "{shared_dir}" "{shared_dir}" && exec "$@"', "-"]
        answer = run_child(path, wrap=mount)
        assert answer == {"found": json.loads(json.dumps(expected))}
        assert snapshot(shared_dir)["host.db"] == before["host.db"]
    finally:
        if keeper is not None:
            keeper.close()
