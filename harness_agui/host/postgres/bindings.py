# The wire <-> source bindings of Runs in PostgreSQL: the contract of
# ``host.bindings.SqliteRunBindings`` for servers that share one database.
#
#     harness_wire_runs(wire_run_id, wire_thread_id, source_run_id, source_thread_id, ord)
#     primary key wire_run_id; unique source_run_id; ord (an identity) gives the order of the bindings;
#     indexed (wire_thread_id, ord) and source_thread_id
#
# ``bind`` is one INSERT ... ON CONFLICT DO NOTHING: of two servers binding
# one wire run id at once, PostgreSQL lets one insert and the other finds its
# row, so the id is reserved atomically across servers. The table
# (``tables.py``) is created with the delivery log's too, so a Worker's query
# for Runs bound by a server that died before their first item can rely on it.

from __future__ import annotations

from typing import Any

from .._store import Store
from ..bindings import WireRun, check_binding, conflict, thread_conflict
from ._pg import Database
from .tables import BINDINGS, BINDINGS_COLUMNS, BINDINGS_SCHEMA, DELIVERY_RUNS, JOURNAL_RUNS

__all__ = ["PostgresRunBindings"]

_SELECT = f"SELECT wire_thread_id, wire_run_id, source_thread_id, source_run_id FROM {BINDINGS}"


class PostgresRunBindings(Store):
    """The bindings of the Runs of one PostgreSQL database (the contract of ``SqliteRunBindings``).

    ``url``, ``read_only``, ``pool_size`` and ``timeout`` are as for ``PostgresSourceJournal``."""

    _repr_read_only = False

    def __init__(self, url: str, *, read_only: bool = False, pool_size: int = 2, timeout: float = 30.0) -> None:
        self._db = Database(url, schema=BINDINGS_SCHEMA, tables=BINDINGS_COLUMNS, read_only=read_only, min_size=1,
                            max_size=pool_size, timeout=timeout, recheck=30.0)

    def bind(self, binding: WireRun) -> WireRun:
        """As ``SqliteRunBindings.bind``: the binding the wire run id has now (this one, or the one that
        took it first); ValueError when the source Run is bound to another wire run id,
        ``ThreadBindingError`` when the binding would share or split a Thread."""
        binding = check_binding(binding)
        with self._db.write("bind") as conn:
            if self._one(conn, "wire_run_id", binding.wire_run_id) is None:
                thread_conflict(binding, (self._one(conn, "wire_thread_id", binding.wire_thread_id),
                                          self._one(conn, "source_thread_id", binding.source_thread_id)))
            row = conn.execute(
                f"INSERT INTO {BINDINGS} (wire_run_id, wire_thread_id, source_run_id, source_thread_id) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING wire_run_id",
                (binding.wire_run_id, binding.wire_thread_id, binding.source_run_id,
                 binding.source_thread_id)).fetchone()
            if row is not None:
                return binding
            stored = self._one(conn, "wire_run_id", binding.wire_run_id)
            if stored is not None:
                return stored
            other = self._one(conn, "source_run_id", binding.source_run_id)
            assert other is not None  # the insert conflicted on one of the two keys
            raise conflict(binding, other)

    def source_of(self, wire_run_id: str) -> WireRun | None:
        """The binding of the client's run id ``wire_run_id``, None if it has none."""
        with self._db.connection() as conn:  # one statement: no transaction needed
            return self._one(conn, "wire_run_id", wire_run_id)

    def wire_of(self, source_run_id: str) -> WireRun | None:
        """The binding of the Harness's run id ``source_run_id``, None if it has none."""
        with self._db.connection() as conn:  # one statement: no transaction needed
            return self._one(conn, "source_run_id", source_run_id)

    def runs_of(self, wire_thread_id: str) -> tuple[WireRun, ...]:
        """As ``SqliteRunBindings.runs_of``: the client Thread's bindings, oldest first."""
        with self._db.connection() as conn:  # one statement: no transaction needed
            rows = conn.execute(f"{_SELECT} WHERE wire_thread_id = %s ORDER BY ord", (wire_thread_id,)).fetchall()
        return tuple(WireRun(*row) for row in rows)

    def unjournaled(self) -> tuple[WireRun, ...]:
        """The bindings whose Run has neither an item in the journal nor a delivery row, oldest first."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"{_SELECT} w WHERE NOT EXISTS (SELECT 1 FROM {JOURNAL_RUNS} r WHERE r.run_id = w.source_run_id) "
                f"AND NOT EXISTS (SELECT 1 FROM {DELIVERY_RUNS} d WHERE d.run_id = w.source_run_id) "
                "ORDER BY w.ord").fetchall()
        return tuple(WireRun(*row) for row in rows)

    @staticmethod
    def _one(conn: Any, column: str, value: str) -> WireRun | None:
        row = conn.execute(f"{_SELECT} WHERE {column} = %s LIMIT 1", (value,)).fetchone()
        return None if row is None else WireRun(*row)
