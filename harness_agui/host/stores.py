# One entry point for a Host's two stores, whichever database holds them: a
# SQLite file for one machine, PostgreSQL for several workers. The PostgreSQL
# classes are imported only for a postgresql:// URL, so the SQLite kit keeps
# needing nothing but the standard library.

from __future__ import annotations

import os
from typing import Any

__all__ = ["open_stores", "is_postgres_url"]

_SQLITE_ONLY = ("synchronous", "poll_interval")
_POSTGRES_ONLY = ("pool_size", "recheck")


def is_postgres_url(target: object) -> bool:
    """Whether ``target`` is a ``postgresql://`` (or ``postgres://``) URL rather than a file path."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


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
