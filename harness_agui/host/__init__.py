"""The optional Host kit: what a Host must guarantee around ``resume()``, made easy.

Standard library ``sqlite3`` only. ``check_prefix`` / ``check_tail`` enforce the
Harness history contract on any iterable; ``SqliteSourceJournal`` retains source
items; ``SqliteDeliveryLog`` gives published AG-UI events durable ids and serves
reconnecting clients after their ``Last-Event-ID`` (ids that name their Run);
``project_run`` ties them together with the crash-safe protocol described in
``harness_agui.host.delivery``. Both stores may be opened by several processes
at once, or read-only (``read_only=True``), and check every row they read: a
damaged file raises ``DamagedStoreError`` instead of serving a wrong event.
"""

from typing import Any

from .checkpoints import SqliteCheckpointStore, StoredCheckpoint, resume_from_checkpoint
from .checks import Cursor, check_prefix, check_tail
from .delivery import Delivery, Page, SqliteDeliveryLog, parse_last_event_id
from .driver import project_run
from .errors import (
    AfterTerminalError,
    DamagedStoreError,
    DeliveryError,
    DeliveryMismatchError,
    FollowerLimitError,
    ForeignEventIdError,
    ForeignRunError,
    HistoryError,
    IncompletePrefixError,
    JournalConflictError,
    ProjectorConflictError,
    ReadOnlyStoreError,
    SequenceGapError,
    SequenceOrderError,
    StorageError,
    UnknownEventIdError,
)
from .journal import SqliteSourceJournal
from .stores import is_postgres_url, open_stores

__all__ = [
    "Cursor",
    "check_prefix",
    "check_tail",
    "SqliteSourceJournal",
    "SqliteDeliveryLog",
    "Delivery",
    "Page",
    "parse_last_event_id",
    "project_run",
    "SqliteCheckpointStore",
    "StoredCheckpoint",
    "resume_from_checkpoint",
    "open_stores",
    "is_postgres_url",
    "HistoryError",
    "ForeignRunError",
    "SequenceOrderError",
    "SequenceGapError",
    "AfterTerminalError",
    "IncompletePrefixError",
    "StorageError",
    "DamagedStoreError",
    "ReadOnlyStoreError",
    "JournalConflictError",
    "DeliveryError",
    "UnknownEventIdError",
    "ForeignEventIdError",
    "DeliveryMismatchError",
    "ProjectorConflictError",
    "FollowerLimitError",
]


def __getattr__(name: str) -> Any:
    # Names kept for one release, with a DeprecationWarning (see host.errors).
    from . import errors

    if name == "DeliveryOrderError":
        return errors.__getattr__(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
