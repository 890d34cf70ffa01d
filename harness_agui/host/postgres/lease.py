# Leases: exactly one worker projects a given Run at a time, and a worker that
# lost its lease cannot write.
#
#     harness_agui_leases(run_id, holder, token, expires_at)
#
# A lease is a row per Run: the worker holding it, a fencing token, and an
# expiry on the database's clock (one clock for every worker, so their own
# clocks may disagree). ``acquire`` takes the row when there is none, when it
# has expired, or when its holder is dead, and every acquisition increments
# the token; the row is never deleted (``release`` only expires it), so the
# tokens of a Run only ever grow. The delivery log's fenced ``record``
# compares the token in its own transaction (``delivery.py``), so a write by
# a worker that was paused past its lease, or whose lease a live worker took
# over, is refused: fencing, not only mutual exclusion.
#
# Liveness. Each ``PostgresLeases`` (one per worker process) holds a session
# advisory lock on its own holder number, on a connection it keeps open for
# its lifetime. When the process dies (SIGKILL included), the kernel closes
# that connection, the server ends the session and the advisory lock is
# gone: ``acquire`` tries that lock (``pg_try_advisory_xact_lock``, released
# at once with its transaction) and takes the Run over at once instead of
# waiting for the expiry. A worker that is alive but stuck (paused, cut off
# from the network while its connection lingers) keeps its lock; its leases
# expire after ``ttl`` seconds unless renewed, and it is fenced out then.
# ``renew`` extends a lease only while it is in force.
#
# A lost liveness connection. When the server ends the session that holds
# the liveness lock of a worker that is alive (a restart of the server,
# ``pg_terminate_backend``, a network blip), the lock goes with it, and other
# workers would take that worker's live Runs at their next scan; after a
# restart every worker has lost its lock at once, and each would take the
# others' Runs, for ever. So ``alive()`` (called before every scan) checks
# the liveness connection and, when it is lost, reconnects and takes the same
# holder's lock again; ``acquire`` takes no Run while this worker's own lock
# is not held, and takes a live-looking holder's Run (one whose lease has
# not expired, but whose liveness lock is free) only once this worker has
# held its own lock for ``rejoin_grace`` seconds: long enough for the other
# workers of a restarted server to take theirs back. An expired lease is
# taken at once, whatever the grace.

from __future__ import annotations

import contextlib
import random
import threading
import time
from typing import Any

import attrs
import psycopg

from ..errors import ProjectorConflictError
from ._pg import LOCK_WORKER, Database

__all__ = ["Lease", "LeaseLostError", "PostgresLeases"]

LEASES = "harness_agui_leases"
LEASE_SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {LEASES} (
        run_id text PRIMARY KEY, holder integer NOT NULL, token bigint NOT NULL,
        expires_at timestamptz NOT NULL)""",
)
_COLUMNS = {LEASES: ("run_id", "holder", "token", "expires_at")}


@attrs.frozen
class Lease:
    """A worker's lease on one Run: ``holder`` is the worker's number, ``token`` the fencing token
    (it grows with every acquisition of the Run), ``ttl`` the seconds it lasts from its last renewal."""

    run_id: str
    holder: int
    token: int
    ttl: float


class LeaseLostError(ProjectorConflictError):
    """A worker's lease on a Run is no longer in force: another worker took the Run over, or the
    lease expired. Raised by a fenced ``record`` (nothing was written) and by ``renew``. A
    ``ProjectorConflictError``: let the other projector go on. ``run_id`` names the Run."""

    def __init__(self, reason: str, *, run_id: str) -> None:
        self.cursor = None
        self.found = None
        self.run_id = run_id
        self.reason = reason
        ValueError.__init__(self, f"run {run_id!r}: lease lost: {reason}")


class PostgresLeases:
    """The leases of one worker process on the Runs of one database.

    ``url`` is the database; ``ttl`` how many seconds a lease lasts after
    it was acquired or renewed (a holder renews well within it; a stuck
    holder loses its Runs after it); ``pool_size`` and ``timeout`` as for
    the stores; ``rejoin_grace`` how long after taking its liveness lock
    again (see the module comment) the worker waits before it takes a Run
    from a holder whose lease has not expired. Opening takes a new holder
    number and its liveness lock, on a connection kept open until
    ``close()``. Raises as the stores do for a database that cannot be
    reached.
    """

    def __init__(self, url: str, *, ttl: float = 10.0, pool_size: int = 2, timeout: float = 30.0,
                 rejoin_grace: float = 2.0) -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
            raise ValueError(f"ttl must be a number of seconds > 0, not {ttl!r}")
        if isinstance(rejoin_grace, bool) or not isinstance(rejoin_grace, (int, float)) or rejoin_grace < 0:
            raise ValueError(f"rejoin_grace must be a number of seconds >= 0, not {rejoin_grace!r}")
        self.ttl = float(ttl)
        self.rejoin_grace = float(rejoin_grace)
        self._url = url
        self._timeout = timeout
        self._db = Database(url, schema=LEASE_SCHEMA, tables=_COLUMNS, read_only=False, min_size=1,
                            max_size=pool_size, timeout=timeout, recheck=30.0)
        self._alive: psycopg.Connection[Any] | None = None
        self._since: float | None = None  # when this worker (last) took its liveness lock
        self._guard = threading.Lock()
        self.rejoins = 0
        try:
            self._alive = self._connect()
            rng = random.SystemRandom()
            while True:
                holder = rng.randrange(1, 2**31 - 1)
                if self._take_lock(self._alive, holder):
                    break
            self.holder = holder
            self._since = 0.0  # held from the start: no grace to wait out
        except BaseException:
            self.close()
            raise

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self._url, autocommit=True, connect_timeout=max(1, int(self._timeout)))

    @staticmethod
    def _take_lock(conn: psycopg.Connection[Any], holder: int) -> bool:
        row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_WORKER, holder)).fetchone()
        return row is not None and bool(row[0])

    def alive(self) -> bool:
        """Whether this worker holds its liveness lock, after checking its connection (one round trip);
        when the connection is lost, it is opened again and the lock taken again (False if that fails:
        the database cannot be reached, or this holder's lock is taken). Blocking: call it in a thread."""
        with self._guard:
            conn = self._alive
            if conn is not None and not conn.closed:
                try:
                    conn.execute("SELECT 1")
                    return True
                except psycopg.Error:
                    pass
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
            self._alive = None
            self._since = None
            try:
                conn = self._connect()
            except psycopg.Error:
                return False
            try:
                taken = self._take_lock(conn, self.holder)
            except psycopg.Error:
                conn.close()
                return False
            if not taken:  # another session holds this holder's lock: this worker stays out
                conn.close()
                return False
            self._alive = conn
            self._since = time.monotonic()
            self.rejoins += 1
            return True

    def acquire(self, run_id: str) -> Lease | None:
        """The lease on ``run_id`` when this worker may take it (no lease yet, an expired one, or one whose
        holder is dead), with the next fencing token; None while another live worker holds it (or this
        one does: a second projector in one process is refused as well), and always None while this
        worker does not hold its own liveness lock (``alive``). Within ``rejoin_grace`` seconds of
        taking its lock again, it takes a Run whose lease has not expired from no one."""
        with self._guard:
            since = self._since
        if since is None:
            return None
        live_holders = time.monotonic() - since >= self.rejoin_grace
        with self._db.connection() as conn:
            row = conn.execute(
                f"INSERT INTO {LEASES} AS l (run_id, holder, token, expires_at) "
                "VALUES (%(run)s, %(holder)s, 1, clock_timestamp() + %(ttl)s * interval '1 second') "
                "ON CONFLICT (run_id) DO UPDATE SET holder = excluded.holder, token = l.token + 1, "
                "expires_at = excluded.expires_at "
                "WHERE l.expires_at < clock_timestamp() "
                "OR (%(live)s AND pg_try_advisory_xact_lock(%(worker)s, l.holder)) "
                "RETURNING token",
                {"run": run_id, "holder": self.holder, "ttl": self.ttl, "worker": LOCK_WORKER,
                 "live": live_holders}).fetchone()
        return None if row is None else Lease(run_id, self.holder, row[0], self.ttl)

    def renew(self, lease: Lease) -> None:
        """Extend ``lease`` by its ttl from now; ``LeaseLostError`` when it is no longer in force."""
        with self._db.connection() as conn:
            row = conn.execute(
                f"UPDATE {LEASES} SET expires_at = clock_timestamp() + %s * interval '1 second' "
                "WHERE run_id = %s AND token = %s AND expires_at >= clock_timestamp() RETURNING token",
                (lease.ttl, lease.run_id, lease.token)).fetchone()
        if row is None:
            raise LeaseLostError(f"lease of token {lease.token} taken over or expired before its renewal",
                                 run_id=lease.run_id)

    def release(self, lease: Lease) -> None:
        """Give ``lease`` up (expire it now) so another worker may take the Run at once; a no-op when it is
        no longer in force. The row stays, so the Run's next token is still higher."""
        with self._db.connection() as conn:
            conn.execute(f"UPDATE {LEASES} SET expires_at = '-infinity' WHERE run_id = %s AND token = %s",
                         (lease.run_id, lease.token))

    def live(self) -> frozenset[str]:
        """The Runs whose lease is in force now (held by a worker that renews it, or by one that died
        less than its ttl ago). Blocking: call it in a thread."""
        with self._db.connection() as conn:
            rows = conn.execute(f"SELECT run_id FROM {LEASES} WHERE expires_at >= clock_timestamp()").fetchall()
        return frozenset(r[0] for r in rows)

    def holder_of(self, run_id: str) -> tuple[int, int, bool] | None:
        """(holder, token, in force) of the Run's lease row, None if it has none (for diagnostics)."""
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT holder, token, expires_at >= clock_timestamp() FROM {LEASES} "
                               "WHERE run_id = %s", (run_id,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def close(self) -> None:
        """Close the connections (which ends the liveness lock: other workers may take this one's Runs
        at once). Closing twice is harmless."""
        with self._guard:
            if self._alive is not None:
                self._alive.close()
                self._alive = None
            self._since = None
        self._db.close()

    def __enter__(self) -> PostgresLeases:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
