# The commands on a Host database: ``runs`` lists its Runs, ``events`` prints what a Run's clients were sent,
# ``export`` writes a Run's source items as wire JSON lines (which ``replay`` and ``check`` read); ``inspect``
# (``_serving``) opens it the same way first.
# Each opens the database read-only (a SQLite file, or a postgresql:// URL with the postgres extra) and
# names a Run by the id its clients use or by the Harness's own (``host.bindings``).

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any, TextIO

from ._common import EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE, _Fail, output_text


class Database:
    """A Host database opened read-only: its journal, delivery log and Run bindings (None when the database
    has none: written by an earlier release)."""

    def __init__(self, target: str) -> None:
        from ..host import StorageError
        from ..host.stores import is_postgres_url

        self.name = target
        self.postgres = is_postgres_url(target)
        if not self.postgres:
            if os.path.isdir(target):
                raise _Fail(f"{target}: is a directory, not a database", EXIT_USAGE)
            if not os.path.exists(target):
                raise _Fail(f"{target}: no such file", EXIT_USAGE)
        try:
            if self.postgres:
                try:
                    from ..host.postgres import PostgresDeliveryLog, PostgresSourceJournal
                    from ..host.postgres.bindings import PostgresRunBindings
                except ImportError as e:
                    raise _Fail(str(e), EXIT_USAGE) from None
                self.journal: Any = PostgresSourceJournal(target, read_only=True, pool_size=2)
                self.deliveries: Any = PostgresDeliveryLog(target, read_only=True, pool_size=2)
                self.bindings: Any = self._optional(lambda: PostgresRunBindings(target, read_only=True))
            else:
                from ..host import SqliteDeliveryLog, SqliteSourceJournal
                from ..host.bindings import SqliteRunBindings

                self.journal = SqliteSourceJournal(target, read_only=True)
                self.deliveries = self._optional(lambda: SqliteDeliveryLog(target, read_only=True))
                self.bindings = self._optional(lambda: SqliteRunBindings(target, read_only=True))
        except StorageError as e:
            self.close()
            raise _Fail(str(e), EXIT_BAD_INPUT) from None
        except _Fail:
            self.close()
            raise
        except Exception as e:  # a database that cannot be reached
            self.close()
            raise _Fail(f"{self.shown}: cannot be opened: {type(e).__name__}: {e}", EXIT_USAGE) from None

    @staticmethod
    def _optional(open_store: Callable[[], Any]) -> Any:
        from ..host import StorageError

        try:
            return open_store()
        except StorageError:  # the database has no such table: nothing of that kind was written to it
            return None

    @property
    def shown(self) -> str:
        """The database as a message names it: a URL without its password."""
        from ..host.stores import redacted

        return redacted(self.name)

    def close(self) -> None:
        for name in ("journal", "deliveries", "bindings"):
            store = getattr(self, name, None)
            if store is not None:
                store.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def runs(self) -> tuple[str, ...]:
        runs: tuple[str, ...] = self.journal.runs()
        return runs

    def run_id(self, given: str | None) -> str:
        """The Harness's run id of the Run ``given`` names (the client's id or its own); the only Run
        when ``given`` is None."""
        runs = self.runs()
        if given is None:
            if len(runs) != 1:
                listed = ", ".join(runs[:10]) + (", ..." if len(runs) > 10 else "")
                raise _Fail(f"{self.shown}: holds {len(runs)} runs ({listed}), choose one with --run (see "
                            f"harness-agui runs {self.shown})" if runs else
                            f"{self.shown}: holds no runs", EXIT_USAGE)
            return runs[0]
        bound = None if self.bindings is None else self.bindings.source_of(given)
        return given if bound is None else str(bound.source_run_id)


def export(args: argparse.Namespace, out: TextIO) -> int:
    from ..host import StorageError
    from ..wire.codec import encode

    with Database(args.database) as db:
        try:
            run_id = db.run_id(args.run)
            try:
                cursor = db.journal.cursor(run_id)
            except StorageError:
                raise
            except ValueError:  # the id of a child Run: its items are in its root's stream
                cursor = None
            if cursor is None:
                raise _Fail(f"{db.shown}: holds no run {run_id!r}", EXIT_USAGE)
            import asyncio

            lines = asyncio.run(_collect_lines(db.journal, run_id, cursor, encode))
        except StorageError as e:
            raise _Fail(str(e), EXIT_BAD_INPUT) from None
    if args.output is None:
        shown = output_text(out)
        out.write(shown("".join(lines)))
        out.flush()
    else:
        with open(args.output, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(lines)
    return EXIT_OK


async def _collect_lines(journal: Any, run_id: str, cursor: int, encode: Callable[[Any], str]) -> list[str]:
    return [encode(item) + "\n" async for item in journal.read_prefix(run_id, through=cursor)]


def runs(args: argparse.Namespace, out: TextIO) -> int:
    from ..debug.text import escape_terminal
    from ..host import StorageError

    rows: list[tuple[str, ...]] = [("RUN", "THREAD", "CLIENT RUN", "CLIENT THREAD", "ITEMS", "EVENTS", "STATE")]
    with Database(args.database) as db:
        try:
            for run_id in db.journal.runs(args.thread):
                rows.append(_run_row(db, run_id))
            if db.bindings is not None:  # bound by a server that died before the Run's first item
                for wire in db.bindings.unjournaled():
                    if args.thread in (None, wire.source_thread_id):
                        rows.append((wire.source_run_id, wire.source_thread_id, wire.wire_run_id,
                                     wire.wire_thread_id, "0", "0", "not started"))
        except StorageError as e:
            raise _Fail(str(e), EXIT_BAD_INPUT) from None
    widths = [max(len(escape_terminal(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(escape_terminal(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")
    out.flush()
    return EXIT_OK


def _run_row(db: Database, run_id: str) -> tuple[str, ...]:
    thread_id = db.journal.thread_of(run_id) or ""
    cursor = db.journal.cursor(run_id)
    ended = db.journal.finished(run_id)
    events = 0 if db.deliveries is None else db.deliveries.last_event_id(run_id)
    delivered = db.deliveries is not None and db.deliveries.finished(run_id)
    state = ("finished" if ended and delivered else "failed" if delivered else
             "journaled, not all recorded" if ended else "unfinished")
    wire = None if db.bindings is None else db.bindings.wire_of(run_id)
    client_run, client_thread = ("", "") if wire is None else (wire.wire_run_id, wire.wire_thread_id)
    items = 0 if cursor is None else cursor + 1
    return (run_id, thread_id, client_run, client_thread, str(items), str(events), state)


def events(args: argparse.Namespace, out: TextIO) -> int:
    from ..host import StorageError, UnknownEventIdError

    with Database(args.database) as db:
        if db.deliveries is None:
            raise _Fail(f"{db.shown}: holds no delivery log", EXIT_USAGE)
        try:
            run_id = db.run_id(args.run)
            if not db.deliveries.last_event_id(run_id) and not db.deliveries.finished(run_id):
                raise _Fail(f"{db.shown}: has no events of run {run_id!r}", EXIT_USAGE)
            after = args.after if args.after is None or not args.after.isdigit() else int(args.after)
            try:
                deliveries = db.deliveries.replay(run_id, after=after)
            except UnknownEventIdError as e:
                raise _Fail(str(e), EXIT_USAGE) from None
        except StorageError as e:
            raise _Fail(str(e), EXIT_BAD_INPUT) from None
    shown = output_text(out)
    for delivery in deliveries:
        out.write(shown(delivery.sse() if args.format == "sse" else delivery.data + "\n"))
    out.flush()
    return EXIT_OK
