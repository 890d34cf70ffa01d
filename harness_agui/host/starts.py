# The start of a Run a client asks for: the one place a Run is started
# (``RunSupervisor.open_run`` is its door; the HTTP app only routes to it).
#
# Ids. A client names a Run by the request's ``threadId`` and ``runId`` (the
# *wire* ids); the journal, the delivery log and the SSE ids use the
# Harness's own (the *source* ids), which a runner may choose. Each Run's
# binding (``host.bindings``) is stored before its first item, and every
# request finds the Run through it; the binding's primary key is what
# reserves a run id, across processes. A Run journaled without a binding (by
# an earlier release, or by another ingest process) is named by its source
# ids. Bindings never change, so the ones looked up or made here are kept in
# memory (``_KNOWN_CACHE`` of them).
#
# One Run at a time per Thread: from ``runner.start`` (which reads the
# Thread's journal) until the new Run is registered (driven here, and on
# PostgreSQL under its lease), the Thread's lock is held (an asyncio lock in
# this process, and on PostgreSQL ``host.postgres.locks`` across servers);
# ``running`` tells the runner which of the Thread's unended Runs are still
# driven, so a Run lost in a crash does not keep its Thread busy. A request
# that waited for the lock asks again whether its run id was started
# meanwhile: on SQLite only this process can have started it under this
# lock, and it remembers what it started; PostgreSQL's lock is the
# database's, so the database is asked again. The Thread's bindings, read
# before the request was authorized, are read again under the lock unless
# (on SQLite) this process has started no Run since. A Run newly bound on
# SQLite is looked for in both logs in the same hop as its binding.
#
# What a start refuses is a ``RunRefused`` (the runner's own, or one of the
# two below), raised before anything is streamed; whatever a runner raises
# otherwise (SystemExit included) is contained as a ``HarnessStartError``.

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

import attrs
from ag_ui.core import RunAgentInput

from ..core.history import StreamCursor
from .bindings import WireRun
from .protocols import SourceJournal, Stores
from .runner import RequestContext, Runner, RunRefused, StartedRun

if TYPE_CHECKING:
    from .postgres.locks import ThreadLocks

__all__ = ["RunStarts", "Asked", "RunConflictError", "HarnessStartError"]

log = logging.getLogger("harness_agui.host.supervisor")

_KNOWN_CACHE = 4096  # bindings kept in memory (they never change)


class RunConflictError(RunRefused):
    """A request names a run id that another Thread's Run has: nothing is started (a server answers
    409 ``run_conflict``). ``run_id`` is the client's run id; the message says no more than that it
    cannot be used."""

    status = 409

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__("run_conflict", f"run id {run_id!r} cannot be used for this thread: send a new run "
                                         "id for each new Run")


class HarnessStartError(RunRefused):
    """The runner failed to start a Run (it raised, or gave a Run without its ids, or ids bound to
    another request): nothing is driven, and a Run the runner did start was cancelled (a server answers
    500 ``harness_agui.harness_failed``)."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__("harness_agui.harness_failed", message)


class _Driving(Protocol):
    # What a start needs of the supervisor that drives what it starts (``host.supervisor``).

    @property
    def stores(self) -> Stores: ...

    @property
    def journal(self) -> SourceJournal: ...

    @property
    def runs_started(self) -> int: ...

    async def live_runs(self) -> frozenset[str]: ...

    def start_run(self, started: StartedRun, *, wire: WireRun | None = None,
                  unwritten: StreamCursor | None = None) -> bool: ...

    def unwritten(self, run_id: str) -> StreamCursor | None: ...

    async def registered(self, run_id: str) -> None: ...

    def thread_here(self, run_id: str) -> str | None: ...

    def journaled_thread(self, run_id: str) -> str | None: ...


@attrs.frozen
class _Found:
    """What the database says of a client's run id: its binding; else whether it is a Harness's (bound)
    id; else the Thread the journal holds for it (None for a child Run's id or a Run not journaled)."""

    binding: WireRun | None
    harness_id: bool = False
    journaled: str | None = None


@attrs.frozen
class Asked:
    """What a start request found before it is authorized (``RunStarts.ask``): the client Thread's bound
    Runs (``thread_runs``, oldest first: the first names its Harness Thread), and what the database
    says of its run id (None when this process knew its binding). ``started``: how many Runs this
    process had started before they were read (see ``RunStarts.open``)."""

    thread_runs: tuple[WireRun, ...]
    found: _Found | None
    started: int = -1


class RunStarts:
    """Starts the Runs clients ask for on a supervisor's database (see the module comment): ``runner``
    starts them, ``supervisor`` drives them, ``thread_locks`` (PostgreSQL) locks a Thread across
    servers."""

    def __init__(self, supervisor: _Driving, runner: Runner | None,
                 thread_locks: ThreadLocks | None = None) -> None:
        self.runner = runner
        self._supervisor = supervisor
        self._stores = supervisor.stores
        self._thread_locks = thread_locks
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self._known: collections.OrderedDict[str, WireRun] = collections.OrderedDict()

    async def ask(self, thread_id: str, run_id: str) -> Asked:
        """The reads a start needs before it is authorized, in one worker-thread hop: the Thread's
        bindings, and (unless this process knows it) what the database says of the run id. Raises what
        the stores raise."""
        looking = self._remembered(run_id) is None
        started = self._supervisor.runs_started  # counted before the read, so a start during it is seen
        return attrs.evolve(await asyncio.to_thread(self._ask, thread_id, run_id, looking), started=started)

    async def open(self, run_input: RunAgentInput, context: RequestContext, *, asked: Asked | None = None) -> WireRun:
        """The Run ``run_input`` names (its binding), started when the database knows none: under the
        Thread's lock, the runner starts it (told the Thread's Runs as they are then), it is bound and
        registered with the supervisor. ``asked``: what ``ask`` found for the request. Raises
        ``RunConflictError`` for another Thread's run id, ``RunRefused`` for what the runner refuses (and
        a ``Last-Event-ID`` on a Run that has no events yet), ``HarnessStartError`` when the runner fails;
        nothing is started then."""
        thread_id, run_id = run_input.thread_id, run_input.run_id
        known = await self._known_of(thread_id, run_id, found=None if asked is None else asked.found)
        if known is not None:
            return known
        async with self._thread_lock(thread_id):
            # Started meanwhile by another request (see the module comment)? The Thread's Runs are read
            # again under the lock: the runner decides on what they are now (one may have started meanwhile).
            known = await self._known_of(thread_id, run_id, remembered=self._thread_locks is None)
            if known is not None:
                return known
            if asked is not None and self._thread_locks is None and asked.started == self._supervisor.runs_started:
                thread_runs = asked.thread_runs  # only this process binds on SQLite, and it has bound nothing since
            else:
                thread_runs = await asyncio.to_thread(self._stores.bindings.runs_of, thread_id)
            return await self._start(run_input, attrs.evolve(
                context, thread_runs=thread_runs,
                source_thread_id=thread_runs[0].source_thread_id if thread_runs else None))

    async def resolve(self, thread_id: str, run_id: str) -> WireRun | None:
        """The binding of the Run its clients name ``thread_id`` / ``run_id`` (the wire ids), None when
        the database knows no such Run of that Thread. A Run journaled without a binding is its own."""
        wire = await self._binding(run_id)
        return wire if wire is not None and wire.wire_thread_id == thread_id else None

    async def close(self) -> None:
        """Close the Thread locks' connections (releasing any lock still held)."""
        if self._thread_locks is not None:
            await self._thread_locks.close()

    async def _start(self, run_input: RunAgentInput, context: RequestContext) -> WireRun:
        # Start the Run (the runner reads the Thread), bind it, and register it: under the Thread's lock.
        if context.headers.get("last-event-id"):
            raise RunRefused("bad_last_event_id", f"run {run_input.run_id!r} has no events yet")
        if self.runner is None:
            raise TypeError("this supervisor has no runner to start a Run with")
        supervisor = self._supervisor
        live = await supervisor.live_runs()
        try:
            started = await self.runner.start(run_input, journal=supervisor.journal, request=context,
                                              running=live.__contains__)
        except (RunRefused, asyncio.CancelledError):
            raise
        except BaseException as e:  # noqa: B036 - a runner never takes the server down, whatever it raises
            log.exception("run %r: the runner failed to start it", run_input.run_id)
            raise HarnessStartError(f"the runner failed to start the run: {type(e).__name__}: {e}") from None
        source_thread, source_run = getattr(started, "thread_id", None), getattr(started, "run_id", None)
        if not (isinstance(source_thread, str) and source_thread.strip() and isinstance(source_run, str)
                and source_run.strip()):
            raise HarnessStartError(f"the runner's run has no thread_id and run_id: {source_thread!r}, "
                                    f"{source_run!r}")
        wire = WireRun(run_input.thread_id, run_input.run_id, source_thread, source_run)
        try:
            bound, unwritten = await asyncio.to_thread(self._bind, wire)
        except ValueError as e:  # the runner gave a Harness run id that is bound to another request
            started.cancel()
            raise HarnessStartError(str(e)) from None
        self._remember(bound)
        if bound != wire:  # the run id was taken first (by another Thread, or this request sent twice)
            started.cancel()
            if bound.wire_thread_id != wire.wire_thread_id:
                raise RunConflictError(wire.wire_run_id)
            return bound
        supervisor.start_run(started, wire=wire, unwritten=unwritten)
        await supervisor.registered(source_run)
        return wire

    def _bind(self, wire: WireRun) -> tuple[WireRun, StreamCursor | None]:
        # In a worker thread: the Run's binding, and, for a Run newly bound on SQLite, whether either log
        # holds anything of it (read in the same hop, so its driver starts without one of its own; on
        # PostgreSQL the driver reads it under the Run's lease). What that read raises, the driver's meets.
        bound = self._stores.bindings.bind(wire)
        if bound != wire or self._thread_locks is not None:
            return bound, None
        try:
            return bound, self._supervisor.unwritten(wire.source_run_id)
        except Exception:  # noqa: BLE001 - see above
            return bound, None

    async def _known_of(self, thread_id: str, run_id: str, *, remembered: bool = False,
                        found: _Found | None = None) -> WireRun | None:
        # The Run ``run_id`` names in ``thread_id`` (RunConflictError when it is another Thread's); None when
        # it names none. ``remembered``: by what this process knows, without the database.
        known = self._remembered(run_id) if remembered else await self._binding(run_id, found)
        if known is not None and known.wire_thread_id != thread_id:
            raise RunConflictError(run_id)
        return known

    async def _binding(self, run_id: str, found: _Found | None = None) -> WireRun | None:
        # The binding of a client's run id (cached: bindings never change); a Run journaled without one
        # (and whose id is not another Run's source id) is named by its own ids. ``found``: what
        # ``_look_up`` found already.
        known = self._remembered(run_id)
        if known is not None:
            return known
        if found is None:
            found = await asyncio.to_thread(self._look_up, run_id)  # one hop for the lookups
        known = found.binding
        if known is None:
            if found.harness_id:
                return None  # a Harness's id, not a client's
            thread_id = self._supervisor.thread_here(run_id) or found.journaled  # this process's, else the journal's
            if thread_id is None:
                return None
            known = WireRun.same(thread_id, run_id)
        self._remember(known)
        return known

    def _remembered(self, run_id: str) -> WireRun | None:
        # The binding this process looked up or made for a client's run id (a start remembers its binding
        # before it releases its Thread's lock); None if it has none in memory.
        known = self._known.get(run_id)
        if known is not None:
            self._known.move_to_end(run_id)
        return known

    def _remember(self, wire: WireRun) -> None:
        self._known[wire.wire_run_id] = wire
        if len(self._known) > _KNOWN_CACHE:
            self._known.popitem(last=False)

    def _ask(self, thread_id: str, run_id: str, looking: bool) -> Asked:
        # In a worker thread: a request's Thread bindings, and (``looking``) the lookup of its run id.
        return Asked(self._stores.bindings.runs_of(thread_id), self._look_up(run_id) if looking else None)

    def _look_up(self, run_id: str) -> _Found:
        # In a worker thread: what the database says of a client's run id (see ``_Found``).
        bindings = self._stores.bindings
        known = bindings.source_of(run_id)
        if known is not None:
            return _Found(known)
        if bindings.wire_of(run_id) is not None:
            return _Found(None, harness_id=True)
        return _Found(None, journaled=self._supervisor.journaled_thread(run_id))

    @contextlib.asynccontextmanager
    async def _thread_lock(self, thread_id: str) -> AsyncIterator[None]:
        # One start at a time per Thread: an asyncio lock here, and on PostgreSQL the Thread's lock in the
        # database too (``host.postgres.locks``), held until the new Run is registered.
        entry = self._locks.get(thread_id)
        if entry is None:
            entry = self._locks[thread_id] = (asyncio.Lock(), [0])
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                if self._thread_locks is None:
                    yield
                else:
                    async with self._thread_locks.hold(thread_id):
                        yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[thread_id]
