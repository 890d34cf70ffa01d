# Checkpoints of the projection, kept beside the journal so that a restart
# resumes from the latest checkpoint plus the items after it (see
# core/checkpoint.py for what a checkpoint is and how it is verified).
#
#     harness_checkpoints(run_id, position, last_sequence, event_count, library, processor, data, crc)
#     primary key (run_id, position): the root Run and the stream position of
#     the checkpoint's last item; data = the checkpoint's bytes in base64
#     (the kit's tables hold text and integers); processor = the digest of
#     the processor identity it was written under ("" for none); crc: see _sqlite
#
# The table lives in the journal's file (or any file: it only needs its own
# table), written through the same helpers as the journal, so a row read back
# is type- and checksum-checked before anything of it is used, and the
# checkpoint inside is verified again by ``core.checkpoint`` when it is
# restored. A checkpoint is an accelerator: a row that is damaged, or a
# checkpoint that does not verify, is skipped (``resume_from_checkpoint``
# tries the next older one, then the full history), never trusted.
#
# ``offer`` writes a checkpoint of an observer when it has advanced at least
# ``every`` items past the latest one written for that Run, and keeps the
# ``keep`` latest per Run (older ones are deleted in the same transaction).
#
# Every checkpoint the store writes and reads is sealed with an HMAC under
# the store's key: the Host's own (``key=``), else a random key the store
# keeps in a file beside the database (``<path>.checkpoint-key``, created
# with mode 0600 on the first writable open and never rewritten). So someone
# who can write the checkpoint table but cannot read that file cannot make
# the Host restore a checkpoint it did not write: a forged row fails its
# HMAC and is passed over like a damaged one. Restoring decodes data only
# (``core.checkpoint``), so even a checkpoint sealed with a leaked key
# cannot run code; it can only describe a wrong projection state.

from __future__ import annotations

import asyncio
import base64
import binascii
import os
import secrets
from collections.abc import AsyncIterator

from ..core import checkpoint as _checkpoint
from ..core.errors import AguiObservationError, CheckpointError
from ..core.observer import HarnessAguiObserver
from ..core.source import HarnessStreamEvent
from ._sqlite import INTEGER, TEXT, Column, Database, Table
from ._store import Store
from .errors import DamagedStoreError, StorageError
from .protocols import CheckpointStore, SourceJournal, StoredCheckpoint

__all__ = ["SqliteCheckpointStore", "StoredCheckpoint", "resume_from_checkpoint", "CHECKPOINTS"]

CHECKPOINTS = Table(
    "harness_checkpoints",
    (Column("run_id", TEXT), Column("position", INTEGER), Column("last_sequence", INTEGER),
     Column("event_count", INTEGER), Column("library", TEXT), Column("processor", TEXT), Column("data", TEXT)),
    key=("run_id", "position"),
)


class SqliteCheckpointStore(Store):
    """Checkpoints of Runs' projections in one SQLite file (usually the
    journal's).

    ``every``: ``offer`` writes a checkpoint once an observer is at least
    this many items past the latest stored for its Run; ``keep``: how many
    checkpoints per Run are kept. ``synchronous`` defaults to NORMAL: a
    checkpoint lost in a power cut only costs a longer resume.

    ``key`` (bytes, at least 16) seals and checks every checkpoint with an
    HMAC-SHA-256; by default the store uses the key in the file
    ``<path>.checkpoint-key`` (``key_path``), creating it (32 random bytes,
    mode 0600) on the first writable open. Checkpoints sealed with another
    key are refused when restored, like damaged ones.

    Raises as ``SqliteSourceJournal`` does for a path that cannot be opened,
    ValueError for ``every`` or ``keep`` below 1 or a key shorter than 16
    bytes, and StorageError for a key file that cannot be read or created
    (a read-only store never creates one).
    """

    def __init__(self, path: str | os.PathLike[str], *, every: int = 10_000, keep: int = 2,
                 synchronous: str = "NORMAL", timeout: float = 30.0, read_only: bool = False,
                 key: bytes | None = None) -> None:
        for name, value in (("every", every), ("keep", keep)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, not {value!r}")
        if key is not None:
            if not isinstance(key, (bytes, bytearray)):
                raise TypeError(f"key must be bytes, not {type(key).__name__}")
            if len(key) < 16:
                raise ValueError(f"a checkpoint key has at least 16 bytes, not {len(key)}")
        self.every = every
        self.keep = keep
        self._db = Database(path, synchronous=synchronous, timeout=timeout, tables=(CHECKPOINTS,),
                            read_only=read_only)
        self.key_path: str | None = None if key is not None else self._db.path + ".checkpoint-key"
        try:
            self.key: bytes = bytes(key) if key is not None else _key_file(
                self._db.path + ".checkpoint-key", create=not read_only)
        except BaseException:
            self._db.close()
            raise
        self._written: dict[str, int] = {}

    def save(self, run_id: str, data: bytes) -> StoredCheckpoint:
        """Store checkpoint ``data`` of root Run ``run_id`` (replacing one at
        the same position) and delete all but the ``keep`` latest of the Run.
        Raises CheckpointError for bytes that are not a checkpoint of that
        Run or not sealed with the store's key (its header and seal are
        checked, nothing is decoded), ReadOnlyStoreError on a read-only
        store."""
        info = _checkpoint.inspect(data)
        if info.run_id != run_id:
            raise _foreign(info.run_id, run_id)
        _checkpoint.verify_seal(data, self.key)
        text = base64.b64encode(data).decode("ascii")
        values = (run_id, info.position, info.last_sequence, info.event_count, info.library, info.processor or "",
                  text)
        with self._db.write(f"save a checkpoint of run {run_id!r}", CHECKPOINTS) as conn:
            conn.execute(f"DELETE FROM {CHECKPOINTS.name} WHERE run_id = ? AND position = ?", (run_id, info.position))
            conn.execute(CHECKPOINTS.insert, CHECKPOINTS.sealed(values))
            conn.execute(f"DELETE FROM {CHECKPOINTS.name} WHERE run_id = ? AND position NOT IN (SELECT position FROM "
                         f"{CHECKPOINTS.name} WHERE run_id = ? ORDER BY position DESC LIMIT ?)",
                         (run_id, run_id, self.keep))
        self._written[run_id] = max(self._written.get(run_id, -1), info.position)
        return StoredCheckpoint(run_id, info.position, info.last_sequence, info.event_count, bytes(data))

    def offer(self, run_id: str, observer: HarnessAguiObserver, *,
              processor_identity: str | None = None) -> StoredCheckpoint | None:
        """Checkpoint ``observer`` (projecting root Run ``run_id``), sealed
        with the store's key, if it is at least ``every`` items past the
        latest checkpoint stored for the Run;
        returns what was stored, else None. Cheap when it is not due (no
        query after the first call per Run). Raises what ``checkpoint()`` and
        ``save`` raise."""
        if observer.run_id is None:
            return None
        position = _checkpoint.stream_position(observer.state)
        last = self._written.get(run_id)
        if last is None:
            latest = self.positions(run_id)
            last = self._written[run_id] = latest[0] if latest else -1
        if position - last < self.every:
            return None
        return self.save(run_id, observer.checkpoint(processor_identity=processor_identity, key=self.key))

    def positions(self, run_id: str) -> list[int]:
        """The positions of the Run's stored checkpoints, newest first."""
        with self._db.read(CHECKPOINTS, f"the checkpoints of run {run_id!r}") as conn:
            rows = conn.execute(f"SELECT position FROM {CHECKPOINTS.name} WHERE run_id = ? ORDER BY position DESC",
                                (run_id,)).fetchall()
        return [r[0] for r in rows]

    def load(self, run_id: str, position: int) -> StoredCheckpoint | None:
        """The checkpoint of the Run at ``position``, None if there is none.
        Raises DamagedStoreError for a damaged row."""
        with self._db.read(CHECKPOINTS, f"the checkpoint of run {run_id!r} at {position}") as conn:
            row = conn.execute(f"SELECT {CHECKPOINTS.select} FROM {CHECKPOINTS.name} WHERE run_id = ? AND "
                               "position = ?", (run_id, position)).fetchone()
        if row is None:
            return None
        values = CHECKPOINTS.checked(self.path, row)
        if values[0] != run_id or values[1] != position:
            raise CHECKPOINTS.damaged(self.path, values, "the index gave this row for another key", row[0])
        try:
            data = base64.b64decode(values[6].encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise CHECKPOINTS.damaged(self.path, values, "its data is not base64", row[0]) from None
        return StoredCheckpoint(run_id, position, values[2], values[3], data)

    def latest(self, run_id: str, *, through: int | None = None) -> StoredCheckpoint | None:
        """The newest checkpoint of the Run (at a position <= ``through``, if given), None if none."""
        for position in self.positions(run_id):
            if through is None or position <= through:
                return self.load(run_id, position)
        return None

    def discard(self, run_id: str, position: int | None = None) -> None:
        """Delete the Run's checkpoint at ``position`` (all of the Run's when None)."""
        with self._db.write(f"discard checkpoints of run {run_id!r}", CHECKPOINTS) as conn:
            if position is None:
                conn.execute(f"DELETE FROM {CHECKPOINTS.name} WHERE run_id = ?", (run_id,))
            else:
                conn.execute(f"DELETE FROM {CHECKPOINTS.name} WHERE run_id = ? AND position = ?", (run_id, position))
        self._written.pop(run_id, None)

    def __repr__(self) -> str:
        return f"<SqliteCheckpointStore {self.path!r} every={self.every} keep={self.keep}>"


def _key_file(path: str, *, create: bool) -> bytes:
    """The key in the file at ``path``; a new random one written there (mode
    0600, never replaced) when there is none and ``create``."""
    for _ in range(2):
        try:
            with open(path, "rb") as f:
                key = f.read()
        except FileNotFoundError:
            if not create:
                raise StorageError(f"{path}: no checkpoint key file (a read-only store does not create one; "
                                   f"open the store writable once, or pass key=)") from None
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue  # another process made it meanwhile: read theirs
            except OSError as e:
                raise StorageError(f"{path}: cannot create the checkpoint key file ({e.strerror})") from None
            key = secrets.token_bytes(32)
            with os.fdopen(fd, "wb") as f:
                f.write(key)
                f.flush()
                os.fsync(f.fileno())
            return key
        except OSError as e:
            raise StorageError(f"{path}: cannot read the checkpoint key file ({e.strerror})") from None
        if len(key) < 16:
            # An empty file: a writer that died between creating and writing it, or damage.
            raise StorageError(f"{path}: a checkpoint key file of {len(key)} bytes (at least 16 are needed); "
                               f"delete it to have a new key made (stored checkpoints are then passed over)")
        return key
    raise StorageError(f"{path}: the checkpoint key file keeps disappearing")  # pragma: no cover


def _foreign(found: str, expected: str) -> CheckpointError:
    return CheckpointError(f"a checkpoint of run {found!r}, not of run {expected!r}", problem="foreign")


async def _between(journal: SourceJournal, run_id: str, after: int, through: int,
                   ) -> AsyncIterator[HarnessStreamEvent]:
    """The journal's items of the Run's stream at positions after ``after``
    through ``through`` (checked as ``tail`` checks them)."""
    if through <= after:
        return
    items = journal.tail(run_id, after=after)
    taken = 0
    try:
        async for item in items:
            yield item
            taken += 1
            if taken == through - after:
                return
    finally:
        await items.aclose()  # type: ignore[attr-defined]


async def resume_from_checkpoint(observer: HarnessAguiObserver, store: CheckpointStore,
                                 journal: SourceJournal, run_id: str, *, through: int | None,
                                 processor_identity: str | None = None,
                                 ) -> StoredCheckpoint | None:
    """Resume fresh ``observer`` with root Run ``run_id``'s stream through
    position ``through``: from the newest stored checkpoint at or before
    ``through`` and the journal's items after it, else from the full prefix.

    Checkpoints are verified with the store's key. A checkpoint that is
    damaged (its row or its bytes), sealed with another key, of another version,
    written under another processor identity, or that does not continue
    into the journal's items is skipped, and the next older one tried; when
    none works the whole prefix is read (``journal.read_prefix``). Returns
    the checkpoint used (its ``position`` and ``event_count``: the observer's
    first ``event_count`` events came from it, the rest from the journal's
    items), None for a full resume. Raises what
    the full resume raises; on error the observer is as fresh as before.
    """
    if through is not None:
        for position in await asyncio.to_thread(store.positions, run_id):
            if position > through:
                continue
            try:
                stored = await asyncio.to_thread(store.load, run_id, position)
            except DamagedStoreError:
                continue
            if stored is None:
                continue
            try:
                await observer.resume(_between(journal, run_id, position, through), checkpoint=stored.data,
                                      processor_identity=processor_identity, run_id=run_id, key=store.key)
            except AguiObservationError:
                # A checkpoint that does not verify (CheckpointError), or whose state does not continue
                # into the journal's items (a HistoryError): the observer is still fresh; try an older one.
                if not observer.is_fresh:
                    raise
                continue
            return stored
    await observer.resume(journal.read_prefix(run_id, through=through))
    return None
