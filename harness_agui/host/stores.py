# One entry point for a Host's stores, whichever database holds them: a SQLite
# file for one machine, PostgreSQL for several workers. The PostgreSQL classes
# are imported only for a postgresql:// URL, so the SQLite kit keeps needing
# nothing but the standard library. The Protocols both backends satisfy are in
# ``host.protocols`` (re-exported here).
#
# ``stores_of`` makes the ``Stores`` the run supervisor drives: a journal and a
# delivery log on ONE database, so that an item and its events commit in one
# transaction, and the batched writer of that database (``host.batch``).

from __future__ import annotations

import os
from typing import Any

from .protocols import CheckpointStore, DeliveryLog, SourceJournal, Stores

__all__ = ["open_stores", "is_postgres_url", "redacted", "SourceJournal", "DeliveryLog", "CheckpointStore", "Stores",
           "stores_of"]

_SQLITE_ONLY = ("synchronous", "poll_interval")
_POSTGRES_ONLY = ("pool_size", "recheck")


def is_postgres_url(target: object) -> bool:
    """Whether ``target`` is a ``postgresql://`` (or ``postgres://``) URL rather than a file path."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def redacted(target: str) -> str:
    """``target`` as a message names it: a PostgreSQL URL without its password (``user:***@host``), anything
    else as it is."""
    if is_postgres_url(target):
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(target)
        if parts.password is not None:
            netloc = parts.netloc.rsplit("@", 1)[1]
            return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{netloc}"))
    return target


def open_stores(target: str | os.PathLike[str], **options: Any) -> tuple[Any, Any]:
    """The source journal and the delivery log of one database: ``(journal, deliveries)``.

    ``target`` is a SQLite file path (``SqliteSourceJournal`` and
    ``SqliteDeliveryLog`` on that one file) or a ``postgresql://`` URL
    (``PostgresSourceJournal`` and ``PostgresDeliveryLog``, which need the
    ``postgres`` extra). ``options`` go to both constructors (for example
    ``read_only=True``); an option the chosen backend does not have is
    ignored, so one call serves both: ``synchronous``, ``poll_interval``
    are SQLite's (PostgreSQL followers are woken by NOTIFY), ``pool_size``
    and ``recheck`` PostgreSQL's. Raises what the constructors raise;
    ImportError naming the extra when a URL is given without psycopg
    installed. Close both when done.
    """
    postgres = is_postgres_url(target)
    for name in (_SQLITE_ONLY if postgres else _POSTGRES_ONLY):
        options.pop(name, None)
    if postgres:
        try:
            from .postgres import PostgresDeliveryLog, PostgresSourceJournal
        except ImportError as e:  # pragma: no cover - depends on the installation
            raise ImportError(f"a postgresql:// database needs the postgres extra: pip install "
                              f"'harness-agui[postgres]' ({e})") from e
        journal_pg = PostgresSourceJournal(str(target), **options)
        try:
            return journal_pg, PostgresDeliveryLog(str(target), **options)
        except BaseException:
            journal_pg.close()
            raise
    from .delivery import SqliteDeliveryLog
    from .journal import SqliteSourceJournal

    journal = SqliteSourceJournal(target, **options)
    try:
        return journal, SqliteDeliveryLog(target, **options)
    except BaseException:
        journal.close()
        raise


def stores_of(journal: SourceJournal, deliveries: DeliveryLog) -> Stores:
    """The ``Stores`` of a journal and a delivery log of ONE database (the same SQLite file, or the same
    PostgreSQL database), which the supervisor writes an item and its events to in one transaction.

    Raises TypeError for stores of another kind, ValueError for stores of two databases or of two
    backends, or read-only ones."""
    from .delivery import SqliteDeliveryLog
    from .journal import SqliteSourceJournal

    if journal.read_only or deliveries.read_only:
        raise ValueError("the stores a supervisor drives must be writable (read_only=False)")
    if isinstance(journal, SqliteSourceJournal) and isinstance(deliveries, SqliteDeliveryLog):
        if os.path.realpath(journal.path) != os.path.realpath(deliveries.path):
            raise ValueError(f"the journal ({journal.path}) and the delivery log ({deliveries.path}) must share one "
                             "database: an item and its events are committed in one transaction")
        from .batch import SqliteStores

        return SqliteStores(journal, deliveries)
    try:
        from .postgres import PostgresDeliveryLog, PostgresSourceJournal
        from .postgres.batch import PostgresStores
    except ImportError:  # pragma: no cover - depends on the installation
        PostgresSourceJournal = PostgresDeliveryLog = None  # type: ignore[assignment,misc]
    if PostgresSourceJournal is not None and isinstance(journal, PostgresSourceJournal) \
            and isinstance(deliveries, PostgresDeliveryLog):
        if journal.url != deliveries.url:
            raise ValueError(f"the journal ({journal.path}) and the delivery log ({deliveries.path}) must share one "
                             "database: an item and its events are committed in one transaction")
        return PostgresStores(journal, deliveries)
    raise TypeError(f"no supervisor backend for a {type(journal).__name__} and a {type(deliveries).__name__}: "
                    "give the SQLite or the PostgreSQL stores of one database")
