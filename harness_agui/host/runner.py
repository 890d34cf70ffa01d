# What a Host's Harness offers whoever drives its Runs (the run supervisor,
# the AG-UI server): the runner protocol.
#
# A *runner* turns one request into one Run. ``await runner.start(run_input,
# journal=..., request=..., running=...)`` reads what it needs (the Thread's
# journal: the runner writes nothing and streams nothing) and returns a
# *started Run*: the Harness's own thread and run ids, which the journal
# holds (known before the first item, so that the server can store them
# against the request's ids first), the request's ids (the wire ids the
# client names the Run by), ``items()`` (the Run's source items, child Runs'
# included, ending with the root's terminal result; called once) and
# ``cancel()`` (idempotent; fine before ``items()`` starts and after the
# end). A request the runner will not start a Run for raises ``RunRefused``,
# whose ``status`` and ``body()`` are the HTTP answer, before anything was
# started.
#
# A plain async callable ``runner(run_input)`` that yields the items of the
# Run the request names (under the request's own ids) fits the protocol
# through ``CallableRunner``: its started Run's ids are the request's, and
# its ``cancel()`` cannot reach the Harness, so whoever drives it stops
# reading the stream and ends the Run itself (``cancels_itself`` is false).
#
# ``RequestContext`` is what the runner, its hooks and the server's
# ``authorize`` hook are told about the HTTP request (the server makes it).

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import attrs
from ag_ui.core import RunAgentInput

from ..core.errors import HarnessAguiError
from ..core.source import HarnessStreamEvent
from .bindings import WireRun

__all__ = ["StartedRun", "Runner", "RunnerCallable", "CallableRunner", "CallableRun", "RunRefused",
           "RequestContext", "as_runner"]


class RunRefused(HarnessAguiError, ValueError):
    """A request a runner (or a hook) will not start a Run for; nothing was started or written.

    ``status`` is the HTTP status to answer with, ``code`` a stable name of the reason, ``message`` the
    text for the client and ``detail`` more JSON about it (or None). ``body()`` is the JSON body. Raise it
    with another ``status`` to answer with that one (a subclass may set its own)."""

    status = 400

    def __init__(self, code: str, message: str, *, detail: Any = None, status: int | None = None) -> None:
        self.code = code
        self.message = message
        self.detail = detail
        if status is not None:
            self.status = status
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        """``{"error": code, "message": message}``, with ``detail`` when there is one."""
        out: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.detail is not None:
            out["detail"] = self.detail
        return out


@attrs.frozen
class RequestContext:
    """What the server knows of an HTTP request when it calls a hook or a runner.

    ``action`` is what the request asks: ``"run"`` (POST a RunAgentInput), ``"follow"`` (GET a Run's
    events), ``"cancel"`` (DELETE a Run) or ``"inspect"`` (a page of the run inspector, ``inspector=True``:
    ``thread_id`` is empty and ``run_id`` the ``?id=`` it names, if any). ``method`` and ``path`` are
    the request's, ``headers`` its headers (names in lower case; a repeated header's values joined with
    ``", "``), ``client`` the peer's ``(host, port)`` (None when the server does not know it),
    ``thread_id`` and ``run_id`` the Run's ids as the client names them, ``run_input`` the validated
    body of a POST (None otherwise) and ``request`` the framework's own request object (a Starlette
    ``Request``; None outside the server).

    ``source_thread_id`` is the Harness Thread the client's Thread was bound to when it was created
    (None for a Thread no Run was bound in yet: a POST then creates it, under a Harness thread id the
    runner chooses), and ``thread_runs`` the Thread's bound Runs, oldest first; None when the caller
    does not keep bindings (outside the server). An ``authorize`` hook may decide on either."""

    action: Literal["run", "follow", "cancel", "inspect"]
    method: str
    path: str
    headers: Mapping[str, str]
    client: tuple[str, int] | None
    thread_id: str
    run_id: str
    run_input: RunAgentInput | None = None
    request: Any = attrs.field(default=None, eq=False, repr=False)
    source_thread_id: str | None = None
    thread_runs: tuple[WireRun, ...] | None = None


@runtime_checkable
class StartedRun(Protocol):
    """A Run a runner prepared: not yet streaming (see the module comment)."""

    thread_id: str
    run_id: str
    wire_thread_id: str
    wire_run_id: str

    def items(self) -> AsyncIterator[HarnessStreamEvent]: ...

    def cancel(self) -> None: ...


@runtime_checkable
class Runner(Protocol):
    """A Host's Harness as the server drives it (see the module comment). ``journal`` is the server's
    source journal (read only), ``request`` the ``RequestContext``, ``running(run_id)`` whether a root
    Run of the journal that has not ended is still being driven (by this server, or on PostgreSQL by
    another one that holds its lease). Raises ``RunRefused`` for a request it will not run."""

    async def start(self, run_input: RunAgentInput, *, journal: Any, request: RequestContext | None = None,
                    running: Callable[[str], bool] | None = None) -> StartedRun: ...


RunnerCallable = Callable[..., AsyncIterable[HarnessStreamEvent]]
"""A plain runner: ``runner(run_input)`` (or ``runner(run_input, request=context)`` when it takes a
``request`` keyword) returns the source items of the Run the request names, under the request's own
``thread_id`` and ``run_id`` (child Runs' items may be interleaved), in order, ending with the terminal
result."""


class CallableRun:
    """The started Run of a plain runner: the request's ids are the Harness's, ``items()`` is what
    ``source()`` returns (called when ``items()`` starts, so that what it raises ends the Run), and
    ``cancel()`` only records the request (``cancel_requested``): the stream has no way to be told, so
    whoever drives it stops reading and ends the Run (``cancels_itself`` is False)."""

    cancels_itself = False

    def __init__(self, source: Callable[[], AsyncIterable[HarnessStreamEvent]], *, thread_id: str,
                 run_id: str) -> None:
        self._source = source
        self.thread_id = self.wire_thread_id = thread_id
        self.run_id = self.wire_run_id = run_id
        self.cancel_requested = False
        self._started = False

    def cancel(self) -> None:
        """Record that the Run should stop (idempotent)."""
        self.cancel_requested = True

    async def items(self) -> AsyncIterator[HarnessStreamEvent]:
        """The items of ``source()``, closed when this iterator is. RuntimeError when called twice."""
        if self._started:
            raise RuntimeError(f"run {self.run_id!r} is already streaming: items() can be called once")
        self._started = True
        stream = aiter(self._source())
        try:
            async for item in stream:
                yield item
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()


class CallableRunner:
    """A plain runner (``RunnerCallable``) as a ``Runner``: each request becomes a ``CallableRun`` under
    the request's ids. The callable is given the request context as ``request=`` when it takes that
    keyword (or ``**kwargs``). Raises TypeError for something that is not callable."""

    def __init__(self, runner: RunnerCallable) -> None:
        if not callable(runner):
            raise TypeError(f"a runner must be an async callable or have start(), not {type(runner).__name__}")
        self.runner = runner
        self._takes_request = _takes_keyword(runner, "request")

    async def start(self, run_input: RunAgentInput, *, journal: Any = None, request: RequestContext | None = None,
                    running: Callable[[str], bool] | None = None) -> CallableRun:
        runner = self.runner
        if self._takes_request:
            return CallableRun(lambda: runner(run_input, request=request), thread_id=run_input.thread_id,
                               run_id=run_input.run_id)
        return CallableRun(lambda: runner(run_input), thread_id=run_input.thread_id, run_id=run_input.run_id)


def as_runner(runner: Runner | RunnerCallable) -> Runner:
    """``runner`` itself when it has ``start()``, else a ``CallableRunner`` of it. TypeError otherwise."""
    if callable(getattr(runner, "start", None)):
        return runner  # type: ignore[return-value]
    return CallableRunner(runner)  # type: ignore[arg-type]


def _takes_keyword(function: Callable[..., Any], name: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is p.VAR_KEYWORD or (p.name == name and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
               for p in parameters)
