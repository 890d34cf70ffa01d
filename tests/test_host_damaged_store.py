"""A damaged database file: every read path either gives what was written or raises DamagedStoreError.

Issue 13, item 8: a flipped byte gave UnicodeDecodeError (or, worse, a different event), text in an
integer column a TypeError, missing delivery rows a bare ``ValueError: zip() argument 2 is longer``.
A damaged store raises the library's storage error naming the table and the row, and never serves a
wrong event. Each case damages a real file with a raw ``sqlite3`` connection (or by flipping bits), then
runs every read path of both stores against it, each from a fresh open.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness_agui.host import (
    DamagedStoreError,
    HistoryError,
    SqliteDeliveryLog,
    SqliteSourceJournal,
    StorageError,
    project_run,
)
from harness_agui.testing import simulated_run

RUN = "run-demo"
ITEMS = simulated_run(run_id=RUN)
LAST = ITEMS[-1].sequence
SECONDS = 3.0  # a read that would wait longer is a hang: a terminal result that went missing


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pristine") / "host.db"
    with SqliteSourceJournal(path, synchronous="OFF") as journal, SqliteDeliveryLog(path, synchronous="OFF") as log:
        for item in ITEMS:
            journal.append(item)
        asyncio.run(project_run(RUN, journal, log))
    assert not Path(f"{path}-wal").exists()  # every page is in the file itself
    return path


async def _collect(iterator: Any) -> list[Any]:
    return [x async for x in iterator]


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, SECONDS))


def _journal(path: Path, read: Callable[[SqliteSourceJournal], Any]) -> Callable[[], Any]:
    def call() -> Any:
        with SqliteSourceJournal(path, poll_interval=0.01, synchronous="OFF") as journal:
            return read(journal)
    return call


def _log(path: Path, read: Callable[[SqliteDeliveryLog], Any]) -> Callable[[], Any]:
    def call() -> Any:
        with SqliteDeliveryLog(path, poll_interval=0.01, synchronous="OFF") as log:
            return read(log)
    return call


def _restart(path: Path) -> Any:
    with SqliteSourceJournal(path, poll_interval=0.01, synchronous="OFF") as journal, \
            SqliteDeliveryLog(path, poll_interval=0.01, synchronous="OFF") as log:
        observer = _run(project_run(RUN, journal, log))
        return observer.snapshot(), log.replay(RUN)


def _open(path: Path) -> None:
    SqliteSourceJournal(path).close()
    SqliteDeliveryLog(path).close()


def read_paths(path: Path) -> dict[str, Callable[[], Any]]:
    """Every way a Host reads the stores; project_run last, as it is the one that may write."""
    return {
        "open": lambda: _open(path),
        "journal.cursor": _journal(path, lambda j: j.cursor(RUN)),
        "journal.finished": _journal(path, lambda j: j.finished(RUN)),
        "journal.runs": _journal(path, lambda j: j.runs()),
        "journal.read_prefix": _journal(path, lambda j: _run(_collect(j.read_prefix(RUN, through=LAST)))),
        "journal.read_prefix(10)": _journal(path, lambda j: _run(_collect(j.read_prefix(RUN, through=10)))),
        "journal.tail": _journal(path, lambda j: _run(_collect(j.tail(RUN, after=None)))),
        "journal.tail(after=LAST-5)": _journal(path, lambda j: _run(_collect(j.tail(RUN, after=LAST - 5)))),
        "log.cursor": _log(path, lambda d: d.cursor(RUN)),
        "log.last_event_id": _log(path, lambda d: d.last_event_id(RUN)),
        "log.finished": _log(path, lambda d: d.finished(RUN)),
        "log.replay": _log(path, lambda d: d.replay(RUN)),
        "log.replay(after=10)": _log(path, lambda d: d.replay(RUN, after=10)),
        "log.follow": _log(path, lambda d: _run(_collect(d.follow(RUN)))),
        "log.sse(after=10)": _log(path, lambda d: _run(_collect(d.sse(RUN, last_event_id=10)))),
        "project_run restart": lambda: _restart(path),
    }


def outcomes(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, read in read_paths(path).items():
        try:
            out[name] = read()
        except Exception as e:  # noqa: BLE001 (every outcome is judged by the caller)
            out[name] = e
    return out


@pytest.fixture(scope="module")
def expected(pristine: Path) -> dict[str, Any]:
    good = outcomes(pristine)
    assert not [v for v in good.values() if isinstance(v, Exception)], good
    return good


def damaged_copy(pristine: Path, tmp_path: Path) -> Path:
    path = tmp_path / "damaged.db"
    shutil.copyfile(pristine, path)
    return path


def judge(found: dict[str, Any], expected: dict[str, Any], *, allowed: tuple[type[Exception], ...] = ()
          ) -> dict[str, Exception]:
    """Each path gave exactly the pristine answer or raised DamagedStoreError (or one of ``allowed``).
    Returns the errors raised."""
    wrong = {name: value for name, value in found.items()
             if not isinstance(value, (DamagedStoreError, *allowed)) and value != expected[name]}
    assert not wrong, "served something else than what was written: " + "; ".join(
        f"{name} -> {type(v).__name__}: {str(v)[:160]}" if isinstance(v, Exception) else f"{name} -> a wrong value"
        for name, v in wrong.items())
    return {name: v for name, v in found.items() if isinstance(v, Exception)}


# -- text in an integer column --------------------------------------------------------------

INTEGER_COLUMNS = [
    ("harness_source_items", "sequence", "sequence = 5", "sequence='oops'"),
    ("harness_source_items", "position", "sequence = 5", "position='oops'"),
    ("harness_source_items", "terminal", f"sequence = {LAST}", f"position={LAST}"),
    ("harness_source_runs", "last_sequence", "1 = 1", "run_id='run-demo'"),
    ("harness_source_runs", "last_position", "1 = 1", "run_id='run-demo'"),
    ("harness_source_runs", "terminal", "1 = 1", "run_id='run-demo'"),
    ("harness_agui_deliveries", "event_id", "event_id = 7", "event_id='oops'"),
    ("harness_agui_deliveries", "source_position", "event_id = 7", "event_id=7"),
    ("harness_agui_delivery_runs", "source_cursor", "1 = 1", "run_id='run-demo'"),
    ("harness_agui_delivery_runs", "last_event_id", "1 = 1", "run_id='run-demo'"),
    ("harness_agui_delivery_runs", "finished", "1 = 1", "run_id='run-demo'"),
]


@pytest.mark.parametrize(("table", "column", "where", "row"), INTEGER_COLUMNS,
                         ids=[f"{t}.{c}" for t, c, _, _ in INTEGER_COLUMNS])
def test_text_in_an_integer_column_is_damage_naming_the_table_and_row(pristine, expected, tmp_path, table, column,
                                                                      where, row):
    path = damaged_copy(pristine, tmp_path)
    with sqlite3.connect(path) as conn:
        assert conn.execute(f"UPDATE {table} SET {column} = 'oops' WHERE run_id = ? AND {where}", (RUN,)).rowcount == 1
    errors = judge(outcomes(path), expected)
    assert errors, "no read path noticed the damage"
    for name, error in errors.items():
        assert isinstance(error, DamagedStoreError) and isinstance(error, StorageError), name
        assert (error.path, error.table) == (str(path), table), (name, str(error))
        assert error.row is not None and row in error.row, (name, str(error))


# -- missing rows ----------------------------------------------------------------------------

LOG_READS = ("log.cursor", "log.replay", "log.follow", "project_run restart")
JOURNAL_READS = ("journal.cursor", "journal.finished", "journal.read_prefix", "journal.tail", "project_run restart")
DELETIONS = [
    ("an event in the middle", "DELETE FROM harness_agui_deliveries WHERE event_id = 40",
     "harness_agui_deliveries", "event_id=40", LOG_READS[1:]),
    ("the last events", "DELETE FROM harness_agui_deliveries WHERE event_id > 70",
     "harness_agui_deliveries", "event_id=71", LOG_READS),
    ("the run's delivery row", "DELETE FROM harness_agui_delivery_runs",
     "harness_agui_delivery_runs", "run_id='run-demo'", LOG_READS),
    ("the last items", f"DELETE FROM harness_source_items WHERE sequence > {LAST - 3}",
     "harness_source_items", f"sequence={LAST}", JOURNAL_READS),
    ("the run's journal head", "DELETE FROM harness_source_runs",
     "harness_source_runs", "run_id='run-demo'", JOURNAL_READS),
]


@pytest.mark.parametrize(("what", "sql", "table", "row", "reads"), DELETIONS, ids=[d[0] for d in DELETIONS])
def test_missing_rows_are_damage_not_a_mismatch_and_never_a_gap_served(pristine, expected, tmp_path, what, sql,
                                                                       table, row, reads):
    path = damaged_copy(pristine, tmp_path)
    with sqlite3.connect(path) as conn:
        assert conn.execute(sql).rowcount > 0
    found = outcomes(path)
    errors = judge(found, expected)
    for name in reads:
        assert isinstance(found[name], DamagedStoreError), (name, found[name])
    for error in errors.values():
        assert error.table == table and row in error.row, str(error)


def test_a_restart_on_a_log_that_lost_its_run_row_writes_nothing(pristine, tmp_path):
    path = damaged_copy(pristine, tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM harness_agui_delivery_runs")
        before = conn.execute("SELECT * FROM harness_agui_deliveries ORDER BY event_id").fetchall()
    with pytest.raises(DamagedStoreError, match="harness_agui_delivery_runs"):
        _restart(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT * FROM harness_agui_deliveries ORDER BY event_id").fetchall() == before
        assert conn.execute("SELECT COUNT(*) FROM harness_agui_delivery_runs").fetchone() == (0,)


# -- bytes flipped in the file's pages -----------------------------------------------------------

def test_a_file_that_is_not_a_database_at_all_is_damage(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(b"not a database, but long enough to have a header: " * 100)
    for store in (SqliteSourceJournal, SqliteDeliveryLog):
        with pytest.raises(DamagedStoreError) as info:
            store(path)
        assert info.value.path == str(path) and info.value.table is None


def test_a_flipped_bit_anywhere_in_the_file_never_serves_a_wrong_event(pristine, expected, tmp_path):
    size = pristine.stat().st_size
    rng = random.Random(13)
    flips = [rng.randrange(size * 8) for _ in range(60)]
    noticed = 0
    for bit in flips:
        path = damaged_copy(pristine, tmp_path)
        with open(path, "r+b") as f:
            f.seek(bit // 8)
            byte = f.read(1)[0]
            f.seek(bit // 8)
            f.write(bytes([byte ^ (1 << bit % 8)]))
        try:
            # A flip in an index can hide a row from the query that looks for it: that reads as a row
            # that is not there, which the history checks report (a gap, a short prefix).
            errors = judge(outcomes(path), expected, allowed=(HistoryError,))
        except AssertionError as e:
            raise AssertionError(f"bit {bit} (byte {bit // 8}, page {bit // 8 // 4096}): {e}") from None
        noticed += bool(errors)
        path.unlink()
    assert noticed > len(flips) // 4


def test_a_flipped_byte_in_the_schema_text_is_damage_not_a_unicode_error(pristine, expected, tmp_path):
    # sqlite3 raised UnicodeDecodeError for every call, open included: SQLite's error message quotes
    # the table's name from sqlite_master, and the message is decoded as UTF-8. (A record stores its
    # columns back to back: type "table", then the name.)
    path = damaged_copy(pristine, tmp_path)
    data = bytearray(path.read_bytes())
    at = data.index(b"tableharness_source_items", 0, 4096) + len("tableharness_")
    data[at] ^= 0x80  # "s" becomes a byte that starts no UTF-8 sequence here
    path.write_bytes(bytes(data))
    found = outcomes(path)
    judge(found, expected)
    assert all(isinstance(v, DamagedStoreError) for v in found.values()), found
    assert "not UTF-8" in str(found["open"])


# -- the row checksum: the same CRC for every row an earlier release stored ----------------------------

def _checksum_as_defined(values: tuple[Any, ...]) -> int:
    import zlib

    pieces = []
    for value in values:
        data = (value if type(value) is str else str(value)).encode("utf-8", "surrogatepass")
        pieces.append(str(len(data)).encode() + b":" + data)
    return zlib.crc32(b"".join(pieces))


def test_the_row_checksum_is_the_crc_of_each_values_byte_length_and_utf8_text_as_files_store_it() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from harness_agui.host._sqlite import checksum

    # Known values (an earlier release wrote these CRCs into files that must still verify).
    assert checksum(("run-1", 0, "run-1", 3, "thread-1", 1, '{"a":"é \ud800"}')) == 3669103987
    assert checksum(("", None, True, -7, "日本", 2.5)) == 50256164

    characters = st.one_of(st.characters(max_codepoint=127), st.characters(min_codepoint=128),
                           st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=()))
    text = st.lists(characters).map("".join)  # ASCII, other text and lone surrogates, mixed
    values = st.one_of(text, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))

    @given(st.lists(values, max_size=8).map(tuple))
    def same(row: tuple[Any, ...]) -> None:
        assert checksum(row) == _checksum_as_defined(row)

    same()
