"""The run inspector: a Host database's Threads and Runs in the browser (the ``inspect`` extra).

``harness-agui inspect DB`` serves it on its own over a database opened read-only
(``open_inspector``); ``AguiServer(..., inspector=True)`` mounts the same pages under
``/inspect`` of a served app, behind the server's ``authorize`` hook, where a running Run's page
follows the server's own events route. See ``docs/inspector.md``.
"""

from __future__ import annotations

import os
from typing import Any

from .app import CUT, LAST_ENTRIES, STEP_ENTRIES, Inspector

__all__ = ["Inspector", "open_inspector", "CUT", "LAST_ENTRIES", "STEP_ENTRIES"]


def open_inspector(target: str | os.PathLike[str], **options: Any) -> tuple[Inspector, Any]:
    """The inspector of a Host database (a SQLite file or a ``postgresql://`` URL), its stores opened
    read-only, and a function that closes them. ``options`` are ``Inspector``'s. Raises what the
    stores raise for a file that is missing, damaged or not a Host database (``StorageError``), and
    ImportError for a PostgreSQL URL without the ``postgres`` extra."""
    from ..host.stores import is_postgres_url

    stores: list[Any] = []

    def close() -> None:
        for store in stores:
            store.close()

    try:
        if is_postgres_url(target):
            from ..host.postgres import PostgresDeliveryLog, PostgresSourceJournal
            from ..host.postgres.bindings import PostgresRunBindings

            url = os.fspath(target)
            stores.append(PostgresSourceJournal(url, read_only=True, pool_size=2))
            stores.append(PostgresDeliveryLog(url, read_only=True, pool_size=2))
            stores.append(_optional(lambda: PostgresRunBindings(url, read_only=True)))
        else:
            from ..host import SqliteDeliveryLog, SqliteSourceJournal
            from ..host.bindings import SqliteRunBindings

            stores.append(SqliteSourceJournal(target, read_only=True))
            stores.append(SqliteDeliveryLog(target, read_only=True))
            stores.append(_optional(lambda: SqliteRunBindings(target, read_only=True)))
    except BaseException:
        close()
        raise
    journal, deliveries, bindings = stores
    stores[:] = [s for s in stores if s is not None]
    options.setdefault("database", os.fspath(target) if not is_postgres_url(target) else None)
    return Inspector(journal, deliveries, bindings, **options), close


def _optional(open_store: Any) -> Any:
    from ..host import StorageError

    try:
        return open_store()
    except StorageError:  # the database has no such table: nothing of that kind was written to it
        return None
