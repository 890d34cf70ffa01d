# Which Run a client means: the ids a client names a Run by (the *wire* ids,
# an AG-UI request's threadId and runId) bound to the ids the Harness gave it
# (the *source* ids the journal, the delivery log, the leases and the SSE ids
# use). A Harness such as a13n-harness makes its own run id, so the two
# differ; a plain runner's Run is bound to the request's own ids.
#
#     harness_wire_runs(wire_run_id, wire_thread_id, source_run_id, source_thread_id, crc)
#     primary key wire_run_id; unique source_run_id; indexed wire_thread_id, source_thread_id
#
# A binding is written once, before the Run's first item is journaled, and
# never changed or deleted: so a client's id always leads to the same Run,
# and the primary key reserves a wire run id atomically, across processes and
# servers: of two requests naming one run id at once (under two Threads, or
# twice), the first ``bind`` wins and the second gets the winner's binding
# back. Rows are sealed (CRC-32, see ``_sqlite``) and checked as they are read.
#
# ``unjournaled()`` lists the bindings whose Run has nothing in the journal
# or the delivery log of the same file: Runs bound by a server that died
# before their first item, which start-up recovery ends for their clients.

from __future__ import annotations

import os
from typing import Any, Protocol, runtime_checkable

import attrs

from ..core.errors import HarnessAguiError
from ._sqlite import TEXT, Column, Database, Table
from ._store import Store

__all__ = ["WireRun", "RunBindings", "SqliteRunBindings", "ThreadBindingError", "check_binding"]


def _id(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{attribute.name} must be a non-blank str, not {value!r}")


@attrs.frozen
class WireRun:
    """One Run as its clients name it (``wire_thread_id``, ``wire_run_id``: an AG-UI request's ids) and
    as the Harness does (``source_thread_id``, ``source_run_id``: what the journal holds)."""

    wire_thread_id: str = attrs.field(validator=_id)
    wire_run_id: str = attrs.field(validator=_id)
    source_thread_id: str = attrs.field(validator=_id)
    source_run_id: str = attrs.field(validator=_id)

    @classmethod
    def same(cls, thread_id: str, run_id: str) -> WireRun:
        """A Run its clients name by the Harness's own ids."""
        return cls(thread_id, run_id, thread_id, run_id)


@runtime_checkable
class RunBindings(Protocol):
    """The bindings of one database (``SqliteRunBindings``, ``PostgresRunBindings``); see
    ``SqliteRunBindings`` for the contract of every method."""

    @property
    def path(self) -> str: ...

    def bind(self, binding: WireRun) -> WireRun: ...

    def source_of(self, wire_run_id: str) -> WireRun | None: ...

    def wire_of(self, source_run_id: str) -> WireRun | None: ...

    def runs_of(self, wire_thread_id: str) -> tuple[WireRun, ...]: ...

    def unjournaled(self) -> tuple[WireRun, ...]: ...

    def close(self) -> None: ...


BINDINGS = Table(
    "harness_wire_runs",
    (Column("wire_run_id", TEXT), Column("wire_thread_id", TEXT), Column("source_run_id", TEXT),
     Column("source_thread_id", TEXT)),
    key=("wire_run_id",),
    indexes=(("harness_wire_runs_wire_thread", "wire_thread_id"),
             ("harness_wire_runs_source_thread", "source_thread_id")),
    unique=(("harness_wire_runs_source", "source_run_id"),),
)

# Where a Run's first item or its delivery row would be (host.journal, host.delivery): the tables
# ``unjournaled`` looks in, when the file has them.
_JOURNAL_HEADS = "harness_source_runs"
_DELIVERY_RUNS = "harness_agui_delivery_runs"


def check_binding(binding: Any) -> WireRun:
    """``binding`` when it is a ``WireRun``; TypeError otherwise."""
    if not isinstance(binding, WireRun):
        raise TypeError(f"bind() takes a WireRun, not {type(binding).__name__}")
    return binding


class ThreadBindingError(HarnessAguiError, ValueError):
    """A binding that would bind one client Thread to two Harness Threads, or two client Threads to one
    Harness Thread. ``binding`` is the one refused, ``other`` the stored binding it disagrees with."""

    def __init__(self, binding: WireRun, other: WireRun) -> None:
        self.binding = binding
        self.other = other
        if other.wire_thread_id == binding.wire_thread_id:
            what = (f"the client's thread {binding.wire_thread_id!r} is bound to the Harness thread "
                    f"{other.source_thread_id!r} already, not {binding.source_thread_id!r}")
        else:
            what = (f"the Harness thread {binding.source_thread_id!r} belongs to another client thread "
                    f"already, not {binding.wire_thread_id!r}")
        super().__init__(f"run {binding.wire_run_id!r} cannot be bound: {what}")


def thread_conflict(binding: WireRun, stored: tuple[WireRun | None, WireRun | None]) -> None:
    """Raise ``ThreadBindingError`` when ``binding`` disagrees with a stored binding of its client Thread
    or of its Harness Thread (``stored``: one of each, or None)."""
    of_wire, of_source = stored
    if of_wire is not None and of_wire.source_thread_id != binding.source_thread_id:
        raise ThreadBindingError(binding, of_wire)
    if of_source is not None and of_source.wire_thread_id != binding.wire_thread_id:
        raise ThreadBindingError(binding, of_source)


def conflict(binding: WireRun, other: WireRun) -> ValueError:
    """The error of a source Run bound to another wire Run already."""
    return ValueError(f"run {binding.source_run_id!r} of the Harness is bound to the client's run "
                      f"{other.wire_run_id!r} already: a runner gave one Harness run id to two requests")


class SqliteRunBindings(Store):
    """The wire <-> source bindings of the Runs of one SQLite file (see the module comment).

    ``path`` is the database file (usually the journal's); ``synchronous``, ``timeout`` and
    ``read_only`` are as for ``SqliteSourceJournal``. One object may be used from several threads,
    and several processes may open the same file. Raises as the journal's constructor does.
    """

    _repr_read_only = False

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL", timeout: float = 30.0,
                 read_only: bool = False) -> None:
        self._db = Database(path, synchronous=synchronous, timeout=timeout, tables=(BINDINGS,), read_only=read_only)

    def bind(self, binding: WireRun) -> WireRun:
        """Bind ``binding.wire_run_id`` to the Harness's Run, durably, unless it is bound already;
        returns the binding the wire run id has now: ``binding`` when this call made it (or the same
        one was stored), the other one when the id was taken first (another Thread's, or the same
        request started twice). Raises TypeError for something that is not a ``WireRun``, ValueError
        when the source Run is bound to another wire run id, ``ThreadBindingError`` (a ValueError) when
        its client Thread is bound to another Harness Thread or its Harness Thread to another client
        Thread, ``ReadOnlyStoreError`` on a read-only store, ``DamagedStoreError`` for a damaged row;
        nothing is written on error."""
        binding = check_binding(binding)
        with self._db.write("bind", BINDINGS) as conn:
            stored = self._one(conn, "wire_run_id", binding.wire_run_id)
            if stored is not None:
                return stored
            other = self._one(conn, "source_run_id", binding.source_run_id)
            if other is not None:
                raise conflict(binding, other)
            thread_conflict(binding, (self._first(conn, "wire_thread_id", binding.wire_thread_id),
                                      self._first(conn, "source_thread_id", binding.source_thread_id)))
            conn.execute(BINDINGS.insert, BINDINGS.sealed((binding.wire_run_id, binding.wire_thread_id,
                                                           binding.source_run_id, binding.source_thread_id)))
        return binding

    def source_of(self, wire_run_id: str) -> WireRun | None:
        """The binding of the client's run id ``wire_run_id``, None if it has none."""
        with self._db.read(BINDINGS, f"the binding of run {wire_run_id!r}") as conn:
            return self._one(conn, "wire_run_id", wire_run_id)

    def wire_of(self, source_run_id: str) -> WireRun | None:
        """The binding of the Harness's run id ``source_run_id``, None if it has none."""
        with self._db.read(BINDINGS, f"the binding of run {source_run_id!r}") as conn:
            return self._one(conn, "source_run_id", source_run_id)

    def runs_of(self, wire_thread_id: str) -> tuple[WireRun, ...]:
        """The bindings of the client's Thread ``wire_thread_id``, in the order they were made (empty for
        a Thread no Run was bound in); all of them name the same Harness Thread."""
        with self._db.read(BINDINGS, f"the bindings of thread {wire_thread_id!r}") as conn:
            rows = conn.execute(f"SELECT {BINDINGS.select} FROM {BINDINGS.name} WHERE wire_thread_id = ? "
                                "ORDER BY rowid", (wire_thread_id,)).fetchall()
        found = tuple(self._binding(row) for row in rows)
        for wire, row in zip(found, rows, strict=True):
            if wire.wire_thread_id != wire_thread_id:
                raise BINDINGS.damaged(self.path, None, f"the index gave the row of another thread for "
                                       f"{wire_thread_id!r:.80}", row[0], wire_run_id=wire.wire_run_id)
        return found

    def unjournaled(self) -> tuple[WireRun, ...]:
        """The bindings whose Run has neither an item in the journal nor a row in the delivery log of
        this file (a Run bound by a server that died before its first item), in the order they were
        made."""
        with self._db.read(BINDINGS, "the bindings without items") as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            sql = f"SELECT {BINDINGS.select} FROM {BINDINGS.name} w WHERE 1 = 1"
            for table in (_JOURNAL_HEADS, _DELIVERY_RUNS):
                if table in tables:
                    sql += f" AND NOT EXISTS (SELECT 1 FROM {table} x WHERE x.run_id = w.source_run_id)"
            rows = conn.execute(sql + " ORDER BY w.rowid").fetchall()
        return tuple(self._binding(row) for row in rows)

    def _one(self, conn: Any, column: str, value: str) -> WireRun | None:
        row = conn.execute(f"SELECT {BINDINGS.select} FROM {BINDINGS.name} WHERE {column} = ?", (value,)).fetchone()
        if row is None:
            return None
        found = self._binding(row)
        if getattr(found, column) != value:
            raise BINDINGS.damaged(self.path, None, f"the index gave the row of another run for {value!r:.80}",
                                   row[0], **{column: value})
        return found

    def _first(self, conn: Any, column: str, value: str) -> WireRun | None:
        row = conn.execute(f"SELECT {BINDINGS.select} FROM {BINDINGS.name} WHERE {column} = ? LIMIT 1",
                           (value,)).fetchone()
        return None if row is None else self._binding(row)

    def _binding(self, row: Any) -> WireRun:
        wire_run, wire_thread, source_run, source_thread = BINDINGS.checked(self.path, row)
        try:
            return WireRun(wire_thread, wire_run, source_thread, source_run)
        except ValueError as e:
            raise BINDINGS.damaged(self.path, None, str(e), row[0], wire_run_id=wire_run) from None
