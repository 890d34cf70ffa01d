"""The Host kit on PostgreSQL: many workers, one database (extra ``harness-agui[postgres]``).

``PostgresSourceJournal`` and ``PostgresDeliveryLog`` have exactly the
contracts of the SQLite stores (the same methods, values, SSE ids and
errors), shared by every process that opens the same database; their
followers (``tail``, ``follow``, ``sse``) are woken by PostgreSQL's
LISTEN/NOTIFY, not by polling. ``PostgresLeases`` gives each worker leases
on Runs with fencing tokens, checked by ``PostgresDeliveryLog.fenced(lease)``
in the transaction of every record, so a worker that lost a Run cannot write
to it. ``Worker`` projects the Runs no live worker holds and takes over those
of a worker that died. Needs ``psycopg`` 3 and ``psycopg_pool``. (The
throwaway server for tests, ``TemporaryPostgres``, moved to
``harness_agui.testing.postgres``; the old name works for one release, with a
DeprecationWarning.)
"""

try:
    import psycopg  # noqa: F401
    import psycopg_pool  # noqa: F401
except ImportError as e:
    raise ImportError("harness_agui.host.postgres needs psycopg 3 and psycopg_pool: pip install "
                      "'harness-agui[postgres]'") from e

from typing import Any

from .bindings import PostgresRunBindings
from .delivery import FencedDeliveryLog, PostgresDeliveryLog
from .journal import PostgresSourceJournal
from .lease import Lease, LeaseLostError, PostgresLeases
from .worker import Worker

__all__ = [
    "PostgresSourceJournal",
    "PostgresDeliveryLog",
    "FencedDeliveryLog",
    "PostgresRunBindings",
    "PostgresLeases",
    "Lease",
    "LeaseLostError",
    "Worker",
]


def __getattr__(name: str) -> Any:
    # TemporaryPostgres and PostgresNotFoundError moved to harness_agui.testing.postgres (one release).
    from .server import _MOVED, moved

    if name in _MOVED:
        return moved(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
