"""The optional Host kit: what a Host must guarantee around ``resume()``, made easy.

Standard library ``sqlite3`` only. ``check_prefix`` / ``check_tail`` enforce the
Harness history contract on any iterable; ``SqliteSourceJournal`` retains source
items; ``SqliteDeliveryLog`` gives published AG-UI events durable ids and serves
reconnecting clients after their ``Last-Event-ID``; ``project_run`` ties them
together with the crash-safe protocol described in ``harness_agui.host.delivery``.
"""

from .checks import Cursor, check_prefix, check_tail
from .delivery import Delivery, SqliteDeliveryLog, parse_last_event_id
from .errors import (
    AfterTerminalError,
    DeliveryError,
    DeliveryMismatchError,
    DeliveryOrderError,
    ForeignRunError,
    HistoryError,
    IncompletePrefixError,
    JournalConflictError,
    SequenceGapError,
    SequenceOrderError,
    StorageError,
    UnknownEventIdError,
)
from .journal import SqliteSourceJournal
from .projector import project_run

__all__ = [
    "Cursor",
    "check_prefix",
    "check_tail",
    "SqliteSourceJournal",
    "SqliteDeliveryLog",
    "Delivery",
    "parse_last_event_id",
    "project_run",
    "HistoryError",
    "ForeignRunError",
    "SequenceOrderError",
    "SequenceGapError",
    "AfterTerminalError",
    "IncompletePrefixError",
    "StorageError",
    "JournalConflictError",
    "DeliveryError",
    "DeliveryOrderError",
    "UnknownEventIdError",
    "DeliveryMismatchError",
]
