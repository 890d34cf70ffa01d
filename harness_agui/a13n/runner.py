# Serving a real a13n-harness agent: the runner between an AG-UI request and an a13n Run.
#
# Theory of operation. A Host gives ``A13nRunner`` an ``ExecutableAgent`` and
# nothing else. For each ``RunAgentInput`` the server calls
# ``await runner.start(run_input, journal=..., request=..., running=...)``;
# it reads what the Thread's journal holds, decides what is new, builds the
# a13n call, and returns an ``A13nRun`` whose ``items()`` are the Run's source
# items (``from_a13n`` of what ``agent.stream()`` yields, child Runs
# included) and whose ``cancel()`` is ``stream.cancel()``. Nothing is
# streamed and nothing is written by ``start``: a request it refuses raises a
# ``RunRefused`` (409 ``ThreadConflictError``, 422 ``RunInputError``) before
# the server answers anything.
#
# Ids. The client's ``threadId`` and ``runId`` name the Run on the wire; the
# Harness's own ids name it in the journal, and items are never rewritten.
# Under the server, a client's Thread gets a new Harness thread
# (``thread-<32 random hex>``) when its first Run starts, and the server
# binds every later Run of it to that one (``RequestContext.source_thread_id``
# and ``thread_runs``, read from ``host.bindings``): no client can name, or
# compute, the Harness Thread of another. A caller that drives the runner
# without a server (and so without bindings) gets the old rule,
# ``source_thread_id``: an id a13n-harness accepts is kept as it is, any
# other becomes ``thread-`` and 32 hex digits of its SHA-256. The Run's id is
# a13n's own (``run-<32 hex>``), known as soon as the stream is made, before
# its first item: ``A13nRun.thread_id`` and ``run_id`` are what the server
# stores against the wire ids.
#
# What the Thread has seen. Every message the client authors (its user
# messages, the results of its client tools) reaches the Harness carrying its
# AG-UI id in the content's metadata under ``AGUI_MESSAGE_ID``: the user
# input events (``InputEvent.metadata``) and tool result events
# (``ToolResultEvent.metadata``) of the journal hold it, as does the
# Harness's message history. The *anchor* of a Thread is the last such id in
# its ended Runs. A request's messages after the anchor are new: its user
# messages become the Run's input, its tool messages answer the client tools
# the Thread waits for; the rest (the server's own assistant and tool
# messages, the user messages the projection made of inputs, subagents'
# messages) is the Thread's already. A request whose messages do not hold
# the anchor, or hold it with another text, disagrees with the journal: 409.
# On a Thread without Runs, the trailing user messages are the input and
# every message before them becomes the model's message history.
#
# Continuing. The Run continues from the last ended Run's ``HarnessState``
# (``previous_state``; a Run that ended without its terminal item is skipped,
# as is a Run the server says is not running any more). A Run of the Thread
# that is still running (bound, even before its first item is journaled)
# makes the request a 409 ``thread_busy``: one Run of a Thread at a time.
# When the Run continued from is suspended, every wait it left must be
# answered: ``resume[]`` entries (by interrupt id: ``interrupt_ids``) and tool
# messages become a13n's ``DeferredToolResume``; a request that leaves a wait
# unanswered is a 422. Once a later Run was handed those answers and was lost
# without its terminal item (its server died: ``harness_lost``; or the
# server ended it with another RUN_ERROR), the answers are spent: whatever the
# next request says, each approval is answered as denied with a text that
# says the lost Run may have run the tool (so a tool an approval released
# runs at most once), and each other wait with the result the request sends
# again, else as failed. The lost Run's own items stay in the journal; the
# model's history continues from the suspended Run's state.
#
# Everything else the request carries: ``tools`` become a13n client tools
# (``RunBindings.client_toolsets``; the agent must declare
# ``ClientToolsCapability`` allowing a run override), ``context`` becomes one
# context block of the Run's first model request (an input event of source
# ``context``, not displayed), ``forwardedProps`` and the server's request
# context reach the ``configure`` hook, which may add ``agent.stream()``
# options for the Run. ``state`` is not used: a13n-harness has no shared
# client state.
#
# a13n-harness (Python 3.13) is imported on first use, so ``harness_agui`` imports without it; an
# ``A13nRunner`` needs it (``pip install 'harness-agui[a13n]'``).

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import functools
import hashlib
import inspect
import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any, Literal, Protocol

import attrs
from ag_ui.core import RunAgentInput
from pydantic import ValidationError

from ..core.reduce import CLIENT_MESSAGE_ID, interrupt_id
from ..core.source import (
    DeferredToolCall,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    RunResult,
    ToolResultEvent,
)
from ..host.bindings import WireRun
from ..host.runner import RunRefused
from ._adapter import from_a13n, to_a13n

__all__ = [
    "A13nRunner",
    "A13nRun",
    "A13nRequest",
    "RunRefused",
    "ThreadConflictError",
    "RunInputError",
    "ThreadJournal",
    "a13n_runner",
    "source_thread_id",
    "interrupt_ids",
    "AGUI_MESSAGE_ID",
    "CLIENT_TOOLSET_ID",
    "CONTEXT_SOURCE_ID",
    "MAX_CONTEXT_BYTES",
]

AGUI_MESSAGE_ID = CLIENT_MESSAGE_ID
"""The metadata key under which a user input or a client tool's result carries the id of the client's
AG-UI message it came from (``InputEvent.metadata``, ``ToolResultEvent.metadata``): the projection does not
send such a message back (``core.reduce.CLIENT_MESSAGE_ID``)."""

CLIENT_TOOLSET_ID = "ag-ui"
"""The a13n toolset id of the tools a request offers (``RunAgentInput.tools``)."""

CONTEXT_SOURCE_ID = "ag-ui.context"
"""The ``source_id`` of the context input a request's ``context`` becomes."""

MAX_CONTEXT_BYTES = 2 * 1024 * 1024
"""The largest ``context`` a request may carry, in UTF-8 bytes of the block the model is given (a13n-harness
0.21 refuses a model context block over 2 MiB, and would fail the Run at its first model request): 422
``context_too_large`` beyond it, before the Run starts."""

_A13N_THREAD = re.compile(r"^(?:thread-[a-f0-9]{32}|[a-z][a-z0-9]*_[a-z0-9]+)$")  # HarnessState.thread_id's pattern
_ECHO_ID = re.compile(r"^(?P<run>.+):input-\d+$")  # the id the projection gives a user message made of an input
_RESERVED_OPTIONS = frozenset(("input", "input_factory", "previous_state", "deferred_resume"))


@functools.cache
def _lib() -> SimpleNamespace:
    """a13n-harness and pydantic-ai, imported on first use (``harness_agui`` imports without them)."""
    try:
        from a13n_harness import (  # type: ignore[import-not-found, unused-ignore]
            DeferredToolResume,
            HarnessRunResultEvent,
            RunBindings,
        )
        from a13n_harness.content import (  # type: ignore[import-not-found, unused-ignore]
            ContentItem,
            ContentMetadata,
        )
        from a13n_harness.errors import HarnessError  # type: ignore[import-not-found, unused-ignore]
        from a13n_harness.model_context import (  # type: ignore[import-not-found, unused-ignore]
            ModelContextBlock,
            ModelContextPlacement,
            ModelContextProjection,
        )
        from a13n_harness.state import HarnessState  # type: ignore[import-not-found, unused-ignore]
        from a13n_harness.tools.client import (  # type: ignore[import-not-found, unused-ignore]
            ClientToolDefinition,
            ClientToolsCapability,
            ClientToolsetDefinition,
        )
        from pydantic_ai import ToolReturn  # type: ignore[import-not-found, unused-ignore]
        from pydantic_ai.exceptions import ToolFailed  # type: ignore[import-not-found, unused-ignore]
        from pydantic_ai.messages import (  # type: ignore[import-not-found, unused-ignore]
            AudioUrl,
            BinaryContent,
            DocumentUrl,
            ImageUrl,
            ModelRequest,
            ModelResponse,
            TextContent,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
            UserPromptPart,
            VideoUrl,
        )
        from pydantic_ai.tools import ToolDenied  # type: ignore[import-not-found, unused-ignore]
    except ImportError as e:
        raise ImportError("harness_agui.a13n.runner needs a13n-harness (Python 3.13+): "
                          "pip install 'harness-agui[a13n]'") from e
    return SimpleNamespace(DeferredToolResume=DeferredToolResume, HarnessRunResultEvent=HarnessRunResultEvent,
                           RunBindings=RunBindings, ContentItem=ContentItem,
                           ContentMetadata=ContentMetadata, HarnessError=HarnessError,
                           ModelContextBlock=ModelContextBlock, ModelContextPlacement=ModelContextPlacement,
                           ModelContextProjection=ModelContextProjection, HarnessState=HarnessState,
                           ClientToolDefinition=ClientToolDefinition, ClientToolsCapability=ClientToolsCapability,
                           ClientToolsetDefinition=ClientToolsetDefinition, ToolReturn=ToolReturn,
                           ToolFailed=ToolFailed, AudioUrl=AudioUrl, BinaryContent=BinaryContent,
                           DocumentUrl=DocumentUrl, ImageUrl=ImageUrl, ModelRequest=ModelRequest,
                           ModelResponse=ModelResponse, TextContent=TextContent, TextPart=TextPart,
                           ToolCallPart=ToolCallPart, ToolReturnPart=ToolReturnPart, UserPromptPart=UserPromptPart,
                           VideoUrl=VideoUrl, ToolDenied=ToolDenied)


def source_thread_id(wire_thread_id: str) -> str:
    """The a13n-harness thread id of an AG-UI ``threadId``: the id itself when a13n-harness accepts it
    (``thread-<32 hex>`` or ``word_word``, at most 256 characters), else ``thread-`` and the first 32 hex
    digits of the SHA-256 of its UTF-8 bytes. Raises ValueError for a blank id."""
    if not isinstance(wire_thread_id, str) or not wire_thread_id.strip():
        raise ValueError(f"a thread id must be a non-blank str, not {wire_thread_id!r}")
    if len(wire_thread_id) <= 256 and _A13N_THREAD.match(wire_thread_id):
        return wire_thread_id
    return "thread-" + hashlib.sha256(wire_thread_id.encode("utf-8")).hexdigest()[:32]


# -- refusals --------------------------------------------------------------------------------------

class ThreadConflictError(RunRefused):
    """409: the request disagrees with what the Thread's journal holds (its messages do not hold the
    Thread's last client message, or hold it with another text), or a Run of the Thread is still running."""

    status = 409


class RunInputError(RunRefused):
    """422: the request cannot become a Run: nothing new in it, a wait of a suspended Run left unanswered,
    a resume entry or tool message that answers nothing, a message or tool a13n-harness refuses."""

    status = 422


# -- what the server gives the runner ------------------------------------------------------------

class ThreadJournal(Protocol):
    """What the runner reads of the source journal (``SqliteSourceJournal`` and ``PostgresSourceJournal``
    have it): the root Runs of a Thread, whether each has ended, and its stored stream."""

    def runs(self, thread_id: str | None = None) -> tuple[str, ...]: ...

    def finished(self, run_id: str) -> bool: ...

    def cursor(self, run_id: str) -> int | None: ...

    def read_prefix(self, run_id: str, *, through: int | None) -> AsyncIterator[HarnessStreamEvent]: ...


@attrs.frozen
class A13nRequest:
    """What the ``configure`` hook is told about a request: the ``RunAgentInput`` (``forwarded_props``,
    ``state``, ...), the server's context of the HTTP request (``request``, None when the runner is called
    without one), the Harness thread id of the Run and whether that Thread is new (holds no Run yet)."""

    input: RunAgentInput
    request: Any
    thread_id: str
    new_thread: bool


Configure = Callable[[A13nRequest], "Mapping[str, Any] | None | Awaitable[Mapping[str, Any] | None]"]


# -- the Thread as the journal holds it -----------------------------------------------------------

@attrs.frozen
class _Authored:
    """A message the client authored, as the journal holds it: its id, role and (user) text."""

    message_id: str
    role: Literal["user", "tool"]
    text: str


@attrs.frozen
class _Thread:
    """What a request is checked against: the Thread's root Runs, the terminal item of its last ended
    Run that has a state (None for a new Thread), its anchor (None when no Run holds a client id), and
    the first Run started after that one that ended without its terminal item (lost with its server,
    or ended by the server with a RUN_ERROR), None if none: that Run was handed the answers to the
    terminal's waits, so they are never handed out again."""

    thread_id: str
    runs: tuple[str, ...]
    terminal: HarnessRunResultEvent | None
    anchor: _Authored | None
    closed_by: WireRun | None = None


async def _read_thread(journal: ThreadJournal, thread_id: str, running: Callable[[str], bool],
                       bound: Sequence[WireRun] | None) -> _Thread:
    # ``bound``: the Thread's bindings, oldest first (None without a server): every Run started in it, a
    # Run not journaled yet or lost before its first item included.
    journaled = await asyncio.to_thread(journal.runs, thread_id)
    names = {wire.source_run_id: wire for wire in bound or ()}
    runs = tuple(r for r in journaled if r not in names) + tuple(names)
    ended: list[str] = []
    lost: list[str] = []
    for run_id in runs:
        if run_id in journaled and await asyncio.to_thread(journal.finished, run_id):
            ended.append(run_id)
        elif running(run_id):  # named by the client's ids when the server gave them
            wire = names.get(run_id)
            detail = {"runId": run_id} if wire is None else {"threadId": wire.wire_thread_id, "runId": wire.wire_run_id}
            raise ThreadConflictError("thread_busy", f"run {detail['runId']!r} of this thread has not ended yet",
                                      detail=detail)
        else:
            lost.append(run_id)
    terminal: HarnessRunResultEvent | None = None
    anchor: _Authored | None = None
    for run_id in reversed(ended):
        if terminal is not None and anchor is not None:
            break
        cursor = await asyncio.to_thread(journal.cursor, run_id)
        items = [item async for item in journal.read_prefix(run_id, through=cursor)]
        last = items[-1] if items else None
        if terminal is None and isinstance(last, HarnessRunResultEvent) and last.result.state is not None:
            terminal = last
        if anchor is None:
            anchor = _last_authored(item for item in items if item.run_id == run_id)
    closed_by = None
    if terminal is not None:
        after = runs.index(terminal.run_id)
        closed_by = next((names.get(r, WireRun.same(thread_id, r)) for r in lost if runs.index(r) > after), None)
    return _Thread(thread_id, runs, terminal, anchor, closed_by)


def _last_authored(items: Any) -> _Authored | None:
    # The last client message among a Run's own items, with the text of all its inputs.
    found: _Authored | None = None
    for item in items:
        if not isinstance(item, HarnessEvent):
            continue
        payload = item.event
        if isinstance(payload, InputEvent) and payload.source == "user":
            message_id = _message_id(payload.metadata)
            if message_id is None:
                continue
            text = payload.content if isinstance(payload.content, str) else ""
            if found is not None and found.message_id == message_id and found.role == "user":
                found = _Authored(message_id, "user", found.text + text)
            else:
                found = _Authored(message_id, "user", text)
        elif isinstance(payload, ToolResultEvent):
            message_id = _message_id(payload.metadata)
            if message_id is not None:
                found = _Authored(message_id, "tool", "")
    return found


def _message_id(metadata: Any) -> str | None:
    value = metadata.get(AGUI_MESSAGE_ID) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None


# -- interrupts and their answers -----------------------------------------------------------------

def interrupt_ids(result: RunResult) -> dict[str, tuple[Literal["call", "approval"], DeferredToolCall]]:
    """The interrupt ids of a suspended Run's waits, as its projection names them, each with what it waits
    for: ``"call"`` (the result of a call run outside, a client tool's among them), id the call's id;
    ``"approval"``, id the call's id and ``:approval``. Empty for a Run that is not suspended."""
    out: dict[str, tuple[Literal["call", "approval"], DeferredToolCall]] = {}
    if result.deferred is None:
        return out
    for call in result.deferred.calls:
        out[interrupt_id(call.tool_call_id, "tool_call")] = ("call", call)
    for call in result.deferred.approvals:
        out[interrupt_id(call.tool_call_id, "tool_approval")] = ("approval", call)
    return out


def _approval(interrupt_id: str, payload: Any) -> Any:
    # A resolved approval's payload: true/false, or {"approved": bool, "reason": str}.
    lib = _lib()
    if isinstance(payload, bool):
        return payload
    if isinstance(payload, dict) and isinstance(payload.get("approved"), bool):
        reason = payload.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise RunInputError("bad_resume_payload", f"interrupt {interrupt_id!r}: reason must be a string",
                                detail={"interruptId": interrupt_id})
        if payload["approved"]:
            return True
        return lib.ToolDenied(reason) if reason else False
    raise RunInputError("bad_resume_payload",
                        f"interrupt {interrupt_id!r} is an approval: its payload is true, false or "
                        '{"approved": <bool>, "reason": <optional string>}', detail={"interruptId": interrupt_id})


def _tool_message_result(message: Any) -> Any:
    # A client tool's result, from the tool message that carries it: the model sees the content (the
    # text; media parts as content), the journal keeps the message's id in the result's metadata.
    lib = _lib()
    if message.error:
        return lib.ToolFailed(message.error)
    content = message.content
    if isinstance(content, str):
        return lib.ToolReturn(return_value=content, metadata={AGUI_MESSAGE_ID: message.id})
    text = "".join(part.text for part in content if part.type == "text")
    media = [_media(part, message.id) for part in content if part.type != "text"]
    return lib.ToolReturn(return_value=text, content=media or None, metadata={AGUI_MESSAGE_ID: message.id})


# -- the client's messages --------------------------------------------------------------------------

def _text(message: Any) -> str:
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.text for part in content if getattr(part, "type", None) == "text")


def _media(part: Any, message_id: str) -> Any:
    lib = _lib()
    source, kind = part.source, part.type
    if source.type == "url":
        cls = {"image": lib.ImageUrl, "audio": lib.AudioUrl, "video": lib.VideoUrl, "document": lib.DocumentUrl}[kind]
        return cls(url=source.value, media_type=source.mime_type) if source.mime_type else cls(url=source.value)
    if source.type == "data":
        try:
            data = base64.b64decode(source.value, validate=True)
        except (binascii.Error, ValueError):
            raise RunInputError("bad_message", f"message {message_id!r}: the {kind} data is not base64",
                                detail={"messageId": message_id}) from None
        return lib.BinaryContent(data=data, media_type=source.mime_type)
    raise RunInputError("bad_message", f"message {message_id!r}: a {kind} from a {source.type!r} source is not "
                        "supported (send its data or a URL)", detail={"messageId": message_id})


def _user_content(message: Any) -> list[Any]:
    # A user message as a13n input values, each carrying the message's id: text as TextContent (its
    # metadata reaches the input event and the history), media wrapped in a ContentItem (its metadata
    # reaches the input event).
    lib = _lib()
    tag = {AGUI_MESSAGE_ID: message.id}
    if isinstance(message.content, str):
        return [lib.TextContent(message.content, metadata=tag)]
    out = [lib.TextContent(part.text, metadata=tag) if part.type == "text"
           else lib.ContentItem(_media(part, message.id), lib.ContentMetadata(**tag)) for part in message.content]
    if not out:
        raise RunInputError("bad_message", f"user message {message.id!r} is empty", detail={"messageId": message.id})
    return out


def _check_history_tools(messages: Sequence[Any], run_input: RunAgentInput) -> None:
    # ``history_tools="client"``: the earlier messages of a new Thread may hold calls of the request's own
    # tools only. A call of one of the agent's tools, with the result the client wrote for it, would reach
    # the model as if the agent had run it (an approval-gated tool "approved", say) without the gate.
    offered = {tool.name for tool in run_input.tools or ()}
    for message in messages:
        for call in getattr(message, "tool_calls", None) or ():
            if call.function.name not in offered:
                raise RunInputError(
                    "server_tool_in_history", f"message {message.id!r} holds a call of {call.function.name!r}, "
                    "which is not one of the request's tools: this server takes no history of its agent's own "
                    "tool calls from a client", detail={"messageId": message.id, "toolCallId": call.id})


def _history(messages: Sequence[Any]) -> list[Any]:
    # Prior client messages as the model's message history: user and tool messages as requests,
    # assistant messages as responses (consecutive ones merged); system, developer, reasoning and
    # activity messages are not the model's history (the agent's own instructions rule).
    lib = _lib()
    out: list[Any] = []
    names: dict[str, str] = {}
    answered: set[str] = set()

    def request_part(part: Any) -> None:
        if out and isinstance(out[-1], lib.ModelRequest):
            out[-1] = lib.ModelRequest(parts=[*out[-1].parts, part])
        else:
            out.append(lib.ModelRequest(parts=[part]))

    for message in messages:
        if message.role == "user":
            content = _user_content(message)
            request_part(lib.UserPromptPart([c.value if isinstance(c, lib.ContentItem) else c for c in content]))
        elif message.role == "assistant":
            parts: list[Any] = [lib.TextPart(message.content)] if message.content else []
            for call in message.tool_calls or ():
                names[call.id] = call.function.name
                parts.append(lib.ToolCallPart(call.function.name, call.function.arguments or "{}",
                                              tool_call_id=call.id))
            if not parts:
                continue
            if out and isinstance(out[-1], lib.ModelResponse):
                out[-1] = lib.ModelResponse(parts=[*out[-1].parts, *parts])
            else:
                out.append(lib.ModelResponse(parts=parts))
        elif message.role == "tool":
            name = names.get(message.tool_call_id)
            if name is None:
                raise RunInputError("bad_history", f"tool message {message.id!r} answers call "
                                    f"{message.tool_call_id!r}, which no earlier assistant message made",
                                    detail={"messageId": message.id})
            answered.add(message.tool_call_id)
            failed = {"outcome": "failed"} if message.error else {}
            request_part(lib.ToolReturnPart(name, message.error or _text(message), tool_call_id=message.tool_call_id,
                                            metadata={AGUI_MESSAGE_ID: message.id}, **failed))
    unanswered = sorted(set(names) - answered)
    if unanswered:
        raise RunInputError("bad_history", f"the earlier messages hold tool calls nothing answers: {unanswered}",
                            detail={"toolCallIds": unanswered})
    return out


@attrs.frozen
class _Turn:
    """What a request asks of the Harness: the Run's input (None: only answers), the state it continues
    from, the answers to the waits of a suspended Run, and the ids of the client's messages it takes."""

    input: tuple[Any, ...] | None
    previous_state: Any
    deferred_resume: Any
    message_ids: tuple[str, ...]


def _own(message: Any) -> bool:
    # A message of the root Run's conversation (a subagent's messages carry its run id).
    return getattr(message, "subagent_run_id", None) is None and message.role != "activity"


def _plan_new_thread(thread_id: str, run_input: RunAgentInput, history_tools: str = "any") -> _Turn:
    lib = _lib()
    if run_input.resume:
        raise RunInputError("nothing_to_resume", "this thread has no run to resume: resume[] must be empty")
    messages = [m for m in run_input.messages if _own(m)]
    start = len(messages)
    while start > 0 and messages[start - 1].role == "user":
        start -= 1
    new = messages[start:]
    if not new:
        raise RunInputError("nothing_new", "the first run of a thread needs a user message after the others")
    if history_tools == "client":
        _check_history_tools(messages[:start], run_input)
    history = _history(messages[:start])
    try:
        state = lib.HarnessState.new(thread_id=thread_id, message_history=history)
    except ValidationError as e:
        raise RunInputError("bad_history", f"a13n-harness refuses the earlier messages as history: {e}") from None
    return _Turn(tuple(c for m in new for c in _user_content(m)), state, None, tuple(m.id for m in new))


def _plan_known_thread(thread: _Thread, run_input: RunAgentInput) -> _Turn:
    lib = _lib()
    messages = [m for m in run_input.messages if _own(m)]
    anchor = thread.anchor
    if anchor is not None:
        at = next((i for i, m in enumerate(messages) if m.id == anchor.message_id), None)
        if at is None:
            raise ThreadConflictError(
                "history_conflict", f"messages[] does not hold {anchor.message_id!r}, the last message of the "
                "client this thread has: the client's history is behind the thread's, or another one",
                detail={"messageId": anchor.message_id})
        found = messages[at]
        if found.role != anchor.role or (anchor.role == "user" and _text(found) != anchor.text):
            raise ThreadConflictError(
                "history_conflict", f"message {anchor.message_id!r} differs from the one this thread has",
                detail={"messageId": anchor.message_id})
        after = messages[at + 1:]
    else:  # the thread's Runs hold no client message (a Host ran them): the trailing user and tool messages
        start = len(messages)
        while start > 0 and messages[start - 1].role in ("user", "tool"):
            start -= 1
        after = messages[start:]
    assert thread.terminal is not None
    native = to_a13n(thread.terminal).result
    waits = interrupt_ids(thread.terminal.result)
    pending_calls = {call.tool_call_id: call for kind, call in waits.values() if kind == "call"}
    pending_approvals = {call.tool_call_id for kind, call in waits.values() if kind == "approval"}
    runs = set(thread.runs)
    new_user: list[Any] = []
    answered_by_message: dict[str, Any] = {}  # call id -> the tool message that answers it
    for message in after:
        if message.role == "user":
            echo = _ECHO_ID.match(message.id)
            if echo is None or echo.group("run") not in runs:  # not a message the projection made of an input
                new_user.append(message)
        elif message.role == "tool" and message.tool_call_id in pending_calls:
            if message.tool_call_id in answered_by_message:
                raise RunInputError("duplicate_answer", f"call {message.tool_call_id!r} is answered twice",
                                    detail={"toolCallId": message.tool_call_id})
            answered_by_message[message.tool_call_id] = message
        elif message.role == "tool" and message.tool_call_id in pending_approvals:
            raise RunInputError("bad_answer", f"call {message.tool_call_id!r} waits for approval, which resume[] "
                                "gives, not a tool message", detail={"toolCallId": message.tool_call_id})
    call_answers = {call_id: _tool_message_result(m) for call_id, m in answered_by_message.items()}
    approval_answers: dict[str, Any] = {}
    for entry in run_input.resume or ():
        wait = waits.get(entry.interrupt_id)
        if wait is None:
            raise RunInputError("unknown_interrupt", f"resume[] answers {entry.interrupt_id!r}, which this thread "
                                "does not wait for", detail={"interruptId": entry.interrupt_id,
                                                             "pending": sorted(waits)})
        kind, call = wait
        if kind == "approval" and thread.closed_by is not None:
            continue  # handed to a Run that was lost: answered below, never released again
        answers = approval_answers if kind == "approval" else call_answers
        if kind == "call" and call.tool_call_id in answered_by_message and entry.status == "resolved":
            continue  # the tool message carries the result; the entry only acknowledges the interrupt
        if call.tool_call_id in answers:
            raise RunInputError("duplicate_answer", f"interrupt {entry.interrupt_id!r} is answered twice",
                                detail={"interruptId": entry.interrupt_id})
        if entry.status == "cancelled":
            answers[call.tool_call_id] = (lib.ToolDenied("The user cancelled this request.") if kind == "approval"
                                          else lib.ToolFailed("The user cancelled this call."))
        elif kind == "approval":
            answers[call.tool_call_id] = _approval(entry.interrupt_id, entry.payload)
        else:
            answers[call.tool_call_id] = entry.payload
    if thread.closed_by is not None:
        _close_waits(waits, thread.closed_by, approval_answers, call_answers)
    unanswered = sorted(i for i, (kind, call) in waits.items()
                        if call.tool_call_id not in (approval_answers if kind == "approval" else call_answers))
    if unanswered:
        raise RunInputError("unanswered_interrupts", f"this thread waits for answers to {unanswered}: send them "
                            "in resume[] (or, for a client tool, a tool message)", detail={"pending": unanswered})
    if not new_user and not waits:
        raise RunInputError("nothing_new", "messages[] holds no message this thread has not seen")
    resume = None
    if waits:
        requests = native.deferred
        try:
            results = requests.build_results(approvals=approval_answers, calls=call_answers)
            resume = lib.DeferredToolResume(requests, results)
        except (ValueError, TypeError) as e:
            raise RunInputError("bad_resume", f"a13n-harness refuses the answers: {e}") from None
    content = tuple(c for m in new_user for c in _user_content(m))
    ids = tuple(m.id for m in new_user) + tuple(m.id for m in answered_by_message.values() if not m.error)
    return _Turn(content or None, native.state, resume, ids)


def _close_waits(waits: Mapping[str, tuple[str, DeferredToolCall]], lost: WireRun, approvals: dict[str, Any],
                 calls: dict[str, Any]) -> None:
    # The waits of a suspended Run whose answers went to a Run that was lost: an approval is answered as
    # denied whatever the request says (the lost Run may have run the tool: it runs at most once), a call
    # with the request's result if it sends one again (the client's answer, not a second run), else failed.
    lib = _lib()
    for kind, call in waits.values():
        if kind == "approval":
            approvals[call.tool_call_id] = lib.ToolDenied(
                f"This call was approved, but run {lost.wire_run_id} that was to execute it was lost before it "
                "ended: whether the tool ran is unknown, and it is not run again.")
        elif call.tool_call_id not in calls:
            calls[call.tool_call_id] = lib.ToolFailed(
                f"The result of this call went to run {lost.wire_run_id}, which was lost before it ended.")


# -- client tools and context ------------------------------------------------------------------

def _accepts_client_tools(agent: Any) -> bool:
    lib = _lib()
    definition = getattr(agent, "definition", None)
    return any(isinstance(c, lib.ClientToolsCapability) and c.spec.allow_run_override
               for c in getattr(definition, "capabilities", ()))


def _client_toolsets(run_input: RunAgentInput) -> tuple[Any, ...]:
    lib = _lib()
    tools = []
    for tool in run_input.tools or ():
        try:
            tools.append(lib.ClientToolDefinition(
                name=tool.name, description=tool.description or tool.name,
                parameters_json_schema=tool.parameters or {"type": "object", "properties": {}},
                metadata=tool.metadata if isinstance(tool.metadata, dict) else {}))
        except ValidationError as e:
            raise RunInputError("bad_tool", f"a13n-harness refuses tool {tool.name!r}: {e}",
                                detail={"tool": tool.name}) from None
    try:
        return (lib.ClientToolsetDefinition(toolset_id=CLIENT_TOOLSET_ID, tools=tuple(tools)),)
    except ValidationError as e:
        raise RunInputError("bad_tool", f"a13n-harness refuses the tools: {e}") from None


class _ClientContext:
    """Model-context middleware that adds the request's ``context`` as one block to the Run's first model
    request, then leaves the projection to the Host's own middleware (if any) and a13n-harness."""

    def __init__(self, context: Sequence[Any], inner: Any) -> None:
        lib = _lib()
        entries = [{"description": c.description, "value": c.value} for c in context]
        content = ('<client-context source="ag-ui">\n' + json.dumps(entries, ensure_ascii=False)
                   + "\n</client-context>")
        size = len(content.encode("utf-8", "surrogatepass"))
        if entries and size > MAX_CONTEXT_BYTES:  # a13n-harness would fail the Run at its first model request
            raise RunInputError("context_too_large", f"the request's context is {size} bytes as the model is "
                                f"given it; at most {MAX_CONTEXT_BYTES} are taken", detail={"bytes": size})
        self._block = lib.ModelContextBlock(
            source_id=CONTEXT_SOURCE_ID, placement=lib.ModelContextPlacement.REQUEST_EPILOGUE,
            content=content) if entries else None
        self._inner = inner
        self._sent = False

    async def wrap_model_context(self, ctx: Any, request: Any, handler: Any) -> Any:
        lib = _lib()
        projection = (await self._inner.wrap_model_context(ctx, request, handler) if self._inner is not None
                      else await handler(request))
        if self._block is None or self._sent:
            return projection
        self._sent = True
        return lib.ModelContextProjection(blocks=(self._block, *projection.blocks))


# -- the Run ---------------------------------------------------------------------------------------------

class A13nRun:
    """One Run started by ``A13nRunner.start``, not yet streaming.

    ``thread_id`` and ``run_id`` are the Harness's (what the journal holds), ``wire_thread_id`` and
    ``wire_run_id`` the request's; ``message_ids`` the ids of the client's messages the Run takes as new
    (its user messages and tool results). ``items()`` runs it; ``cancel()`` stops it."""

    def __init__(self, stream: Any, *, wire_thread_id: str, wire_run_id: str, message_ids: tuple[str, ...]) -> None:
        self._stream = stream
        self.thread_id: str = stream.thread_id
        self.run_id: str = stream.run_id
        self.wire_thread_id = wire_thread_id
        self.wire_run_id = wire_run_id
        self.message_ids = message_ids
        self._started = False
        self._cancelled = False

    @property
    def cancel_requested(self) -> bool:
        """Whether ``cancel()`` was called."""
        return self._cancelled

    @property
    def result(self) -> Any:
        """The a13n ``HarnessRunResult`` once its terminal item was yielded, else None."""
        return self._stream.result

    def cancel(self) -> None:
        """Ask the Harness to cancel the Run (``stream.cancel()``): the model request in flight is stopped,
        no further one is made, and the stream ends with the Run's ``cancelled`` terminal item (a Run not
        yet streaming ends cancelled as soon as it starts). Idempotent; a no-op once the Run has ended."""
        self._cancelled = True
        self._stream.cancel()

    async def items(self) -> AsyncIterator[HarnessStreamEvent]:
        """The Run's source items, in order, child Runs' included, ending with the root's terminal result
        (``from_a13n`` of each item the Harness yields). Call it once. Raises RuntimeError when called
        again, and what the Harness raises; closing it early ends the Run."""
        if self._started:
            raise RuntimeError(f"run {self.run_id!r} is already streaming: items() can be called once")
        self._started = True
        result = _lib().HarnessRunResultEvent
        async with self._stream as stream:
            async for native in stream:
                # A result's state holds the Thread's whole history: converted in a worker thread, so that a
                # long Thread's turn does not stall the event loop that serves every other request.
                yield await asyncio.to_thread(from_a13n, native) if isinstance(native, result) else from_a13n(native)


class A13nRunner:
    """The runner of an a13n-harness ``ExecutableAgent`` for the AG-UI server.

    ``stream_options`` are passed to every ``agent.stream()`` call (``environment=``, ``usage_limits=``,
    ...); ``configure``, when given, is called (or awaited) with an ``A13nRequest`` for each request and
    returns more options for that Run (None for none); its options win, and it may raise ``RunRefused``
    to refuse the request. ``input``, ``input_factory``, ``previous_state`` and ``deferred_resume`` are
    the runner's, and ``bindings`` (fresh authority for one Run, in a13n-harness's terms) come from
    ``configure`` only: ValueError otherwise. The request's tools and context are added to the Run's
    bindings (tools only when the bindings set no ``client_toolsets`` of their own; a ``model_context``
    middleware of theirs still runs); without ``bindings`` the Run gets ``RunBindings.embedded()``.

    ``history_tools``: what the earlier messages of a request that starts a new Thread (the model's
    history, which the client writes) may hold: ``"any"`` tool call and result (the default; a client can
    then show the model a call of the agent's own tools, an approval-gated one too, with a result it wrote),
    or ``"client"``: calls of the request's own tools only (422 ``server_tool_in_history`` otherwise).

    Raises TypeError when ``agent`` is not an a13n ``ExecutableAgent``, ValueError for another
    ``history_tools``.
    """

    def __init__(self, agent: Any, *, configure: Configure | None = None,
                 history_tools: Literal["any", "client"] = "any", **stream_options: Any) -> None:
        if not callable(getattr(agent, "stream", None)) or not hasattr(agent, "definition"):
            raise TypeError(f"A13nRunner takes an a13n-harness ExecutableAgent, not {type(agent).__name__}")
        if history_tools not in ("any", "client"):
            raise ValueError(f'history_tools must be "any" or "client", not {history_tools!r}')
        self._history_tools = history_tools
        _check_options(stream_options, "stream_options")
        if "bindings" in stream_options:
            raise ValueError("bindings are one Run's authority: return them from configure(), not stream_options")
        self.agent = agent
        self._configure = configure
        self._options = dict(stream_options)
        self._client_tools = _accepts_client_tools(agent)

    async def start(self, run_input: RunAgentInput, *, journal: ThreadJournal, request: Any = None,
                    running: Callable[[str], bool] | None = None) -> A13nRun:
        """Prepare the Run a request asks for; nothing streams or is written until ``items()``.

        ``journal`` holds the Threads' items (the runner only reads it); ``request`` is handed to the
        ``configure`` hook; ``running(run_id)`` says whether a root Run of the journal that has not
        ended is still being run (default: every such Run is): a running one makes the Thread busy,
        any other is skipped, as a Run lost with its process.

        Raises ``ThreadConflictError`` (409: a Run of the Thread is running, or the request's
        messages disagree with the Thread's journal) and ``RunInputError`` (422: nothing new, a wait
        left unanswered, an answer to nothing, a message, tool or answer a13n-harness refuses,
        client tools for an agent that takes none), before anything is started; what the journal
        raises for a damaged store; ValueError for options the hook may not set.
        """
        lib = _lib()
        if not run_input.thread_id.strip() or not run_input.run_id.strip():
            raise RunInputError("invalid_request", "threadId and runId must not be blank")
        bound = None if request is None else getattr(request, "thread_runs", None)
        made = bound is not None and not request.source_thread_id
        if bound is None:  # a caller that keeps no bindings: the Thread's id is a function of the client's
            thread_id = source_thread_id(run_input.thread_id)
        else:  # the server's: the Harness Thread the client's was bound to, or a new one nobody can guess
            thread_id = f"thread-{uuid.uuid4().hex}" if made else request.source_thread_id
        thread = (_Thread(thread_id, (), None, None, None) if made  # made just now: nothing of it is journaled
                  else await _read_thread(journal, thread_id, running or (lambda run_id: True), bound))
        new = thread.terminal is None
        # In a worker thread: a long Thread's history is validated (a new Thread's) or its last state rebuilt
        # (to_a13n of the terminal item, whose HarnessState holds the whole history), and neither may stall
        # the event loop that serves every other request.
        turn = await (asyncio.to_thread(_plan_new_thread, thread_id, run_input, self._history_tools) if new
                      else asyncio.to_thread(_plan_known_thread, thread, run_input))
        options = dict(self._options)
        if self._configure is not None:
            extra = self._configure(A13nRequest(run_input, request, thread_id, new))
            if inspect.isawaitable(extra):
                extra = await extra
            if extra is not None:
                _check_options(extra, "configure()")
                options.update(extra)
        options["bindings"] = self._bindings(run_input, options.get("bindings"))
        try:
            stream = self.agent.stream(turn.input, previous_state=turn.previous_state,
                                       deferred_resume=turn.deferred_resume, **options)
        except lib.HarnessError as e:
            raise RunInputError(getattr(e, "code", None) or "refused",
                                f"a13n-harness refuses the run: {e}") from None

        return A13nRun(stream, wire_thread_id=run_input.thread_id, wire_run_id=run_input.run_id,
                       message_ids=turn.message_ids)

    def _bindings(self, run_input: RunAgentInput, bindings: Any) -> Any:
        lib = _lib()
        if bindings is not None and not isinstance(bindings, lib.RunBindings):
            raise TypeError(f"bindings must be an a13n RunBindings, not {type(bindings).__name__}")
        toolsets = None
        if run_input.tools and (bindings is None or bindings.client_toolsets is None):
            if not self._client_tools:
                raise RunInputError(
                    "client_tools_unsupported", "this agent takes no client tools: its definition needs "
                    "ClientToolsCapability(spec=ClientToolsSpec(allow_run_override=True))",
                    detail={"tools": [t.name for t in run_input.tools]})
            toolsets = _client_toolsets(run_input)
        context = _ClientContext(run_input.context or (), None if bindings is None else bindings.model_context)
        changes: dict[str, Any] = {"model_context": context}
        if toolsets is not None:
            changes["client_toolsets"] = toolsets
        try:
            if bindings is None:
                return lib.RunBindings.embedded(**changes)
            return dataclasses.replace(bindings, **changes)
        except ValueError as e:
            if toolsets is None:
                raise
            # a13n-harness checks the client's toolsets as the bindings are made (how many, unique names)
            raise RunInputError("bad_tool", f"a13n-harness refuses the request's tools: {e}",
                                detail={"tools": len(run_input.tools or ())}) from None

    async def reattach(self, thread_id: str, run_id: str, after: int | None) -> AsyncIterator[HarnessStreamEvent]:
        """The server's ``reattach`` for a Run found unfinished at start-up: an a13n Run lives in the
        process that ran it, so there is nothing to reattach to; the stream is empty, and the server
        ends the Run for its clients (a RUN_ERROR). The Thread continues from its last ended Run."""
        for _ in ():
            yield _  # pragma: no cover - an empty async generator


def _check_options(options: Mapping[str, Any], where: str) -> None:
    if not isinstance(options, Mapping):
        raise TypeError(f"{where} must give a mapping of agent.stream() options, not {type(options).__name__}")
    reserved = sorted(_RESERVED_OPTIONS & set(options))
    if reserved:
        raise ValueError(f"{where} may not set {', '.join(reserved)}: the runner sets them from the request")


def a13n_runner(agent: Any, *, configure: Configure | None = None, history_tools: Literal["any", "client"] = "any",
                **stream_options: Any) -> A13nRunner:
    """``A13nRunner(agent, configure=configure, history_tools=history_tools, **stream_options)``: the runner
    that serves ``agent``."""
    return A13nRunner(agent, configure=configure, history_tools=history_tools, **stream_options)
