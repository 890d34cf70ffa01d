# Hypothesis strategies for property-testing replay equivalence.
#
# The valid-history generator is a small simulation of one Harness Run. A
# ``_RunWriter`` keeps what a real Harness would know at each point (the
# parts it has open and what each still has to stream, the tool calls that
# ended or were answered, the model request it is in) and draws the next
# item only among the ones that are legal there. Every part is planned when
# it starts: its final content is drawn first and then cut into a start
# piece and deltas, so deltas split anywhere (inside words, JSON tokens,
# multi-code-point characters) and a part can end before all its deltas
# were sent; the reducer emits the remainder at the end.
#
# Part indexes are sometimes reused once their part ended, within one model
# request too (as a Harness that sends no model-request notices does), and
# the first notice may repeat the implicit request 0: the library must keep
# generated message ids unique by itself. Own part ids are never reused.
#
# Besides being legal for the observer, every complete generated Run must
# project onto a valid AG-UI run, which shapes a few choices:
# - a tool call still open when a notice or the terminal item closes it has
#   streamed all its args (complete JSON) and made its name known; otherwise
#   the writer ends it explicitly first;
# - tool results name only calls whose part has ended (answered again, or
#   unknown ids, become CUSTOM events, which is also legal).
#
# Invalid cases append one offending item to a valid prefix (adding a few
# legal items first when the fault needs, say, an open part). Processors are
# frozen attrs values, so hypothesis prints them readably and two observers
# can share one.

from __future__ import annotations

try:
    from hypothesis import strategies as st
except ModuleNotFoundError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "harness_agui.testing needs hypothesis, which is not installed; install it with "
        "`pip install hypothesis` (or pip install 'harness-agui[testing]')"
    ) from e

import functools
import json
import typing
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise
from typing import Any, Literal

import attrs
from ag_ui.core import BaseEvent, CustomEvent, RawEvent

from ..core._json import JSON
from ..core.errors import (
    AfterTerminalError,
    AguiObservationError,
    ForeignRunError,
    SequenceGapError,
    SequenceOrderError,
)
from ..core.fields import MAX_JSON_INT, field_spec
from ..core.source import (
    EXTENSION_KINDS,
    INPUT_SOURCES,
    MAX_SEQUENCE,
    PART_KINDS,
    RUN_STATUSES,
    TOOL_OUTCOMES,
    UNIQUE_CALLS,
    BinaryContent,
    BuiltinToolReturnPart,
    CapabilityEvent,
    ContentList,
    Deferred,
    DeferredToolCall,
    DeferredToolRequestsEvent,
    EnqueuedMessagesEvent,
    ExtensionEvent,
    Failure,
    FilePart,
    FinalResultEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    MediaContent,
    MessageHistory,
    ObservationEvent,
    Part,
    PartDelta,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    Payload,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallEvent,
    ToolCallPart,
    ToolCallPartDelta,
    ToolContent,
    ToolResultEvent,
    UnknownDelta,
    UnknownEvent,
    UnknownPart,
    Usage,
)

__all__ = [
    "json_values",
    "json_objects",
    "binary_contents",
    "media_contents",
    "tool_contents",
    "parts",
    "deltas",
    "payloads",
    "run_results",
    "source_items",
    "source_values",
    "histories",
    "complete_histories",
    "live_histories",
    "InvalidCase",
    "FAULTS",
    "ORDER_FAULTS",
    "invalid_cases",
    "wrong_type_items",
    "ReplayStableProcessor",
    "replay_stable_processors",
    "ContractBreakingProcessor",
    "contract_breaking_processors",
    "EVENT_TYPES",
    "cut_points",
]

Draw = st.DrawFn

_CHARS = st.characters(codec="utf-8")
_ID_CHARS = st.characters(codec="utf-8", exclude_characters=":")
_ZONES = (UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8)))


# -- JSON ----------------------------------------------------------------------------------

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(_CHARS, max_size=12)
)


@functools.cache
def json_values(*, max_leaves: int = 6) -> st.SearchStrategy[JSON]:
    """JSON values as the source model accepts them: None, bools, ints,
    finite floats, unicode strings, lists and str-keyed dicts."""
    return st.recursive(
        _SCALARS,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(_CHARS, max_size=6), inner, max_size=3),
        max_leaves=max_leaves,
    )


@functools.cache
def json_objects(*, max_size: int = 4) -> st.SearchStrategy[dict[str, JSON]]:
    """JSON objects (str-keyed dicts of ``json_values()``)."""
    return st.dictionaries(st.text(_CHARS, max_size=6), json_values(max_leaves=4), max_size=max_size)


def _blank_free(text: str) -> bool:
    return bool(text.strip())


_NAMES = st.text(_ID_CHARS, min_size=1, max_size=10).filter(_blank_free)
_BOOLS = st.booleans()
_SUFFIXES = st.text(_ID_CHARS, max_size=3)
_CONTENT = st.text(_CHARS, max_size=40)
_SHORT = st.text(_CHARS, max_size=10)
_BASES = st.text(_CHARS, min_size=1, max_size=7)
_SIGNATURES = st.none() | st.text(_CHARS, min_size=1, max_size=16)
_PROVIDERS = st.none() | st.sampled_from(("anthropic", "openai", "gemini"))
_STARTS = st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1),
                       timezones=st.sampled_from(_ZONES))
_USAGES = st.none() | st.builds(Usage, *(st.none() | st.integers(0, 10**7) for _ in range(4)))
_METADATA = st.none() | json_objects(max_size=2)
_DEFERRED_ARGS = st.none() | json_objects(max_size=2) | st.text(_CHARS, max_size=10)


def _pick(draw: Draw, options: Sequence[Any]) -> Any:
    """One of ``options`` (cheaper than building a sampled_from per draw)."""
    return options[draw(st.integers(0, len(options) - 1))]


# -- single source values ----------------------------------------------------------------------
# Every form of every source value, each optional field set or not, for
# round-trip properties (wire format, a13n adapter) rather than for histories:
# these values need not form a valid Run. They are drawn from the classes'
# declarations (``core.fields``): each field's kind gives its strategy, an
# optional field may be None, a closed vocabulary is sampled, an open one
# gives its known names or any other; only the rules that tie fields together
# (a consistent run result, a deferred call's target, an output tool result
# without user content, a content list with a binary or media item) are
# written out below.

_OPT_TEXT = st.none() | st.text(_CHARS, max_size=8)
_OPT_NAME = st.none() | _NAMES
_ARRAYS = st.lists(json_values(max_leaves=3), max_size=3)
_AWARE = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1),
                      timezones=st.sampled_from(_ZONES))
_DECIMALS = st.decimals(allow_nan=False, allow_infinity=False, places=6, min_value=-(10**9),
                        max_value=10**9).map(str)

@functools.cache
def binary_contents() -> st.SearchStrategy[BinaryContent]:
    """Binary content: any bytes (empty too), a media type, maybe an
    identifier and vendor metadata."""
    return source_values(BinaryContent)


@functools.cache
def media_contents() -> st.SearchStrategy[MediaContent]:
    """Other multimodal items: the pydantic-ai kinds and unknown ones."""
    return source_values(MediaContent)


@functools.cache
def _content_list_items() -> st.SearchStrategy[tuple[Any, ...]]:
    rich = binary_contents() | media_contents()
    items = st.lists(json_values(max_leaves=2) | rich, max_size=2)
    return st.tuples(items, rich, items).map(lambda t: (*t[0], t[1], *t[2]))


@functools.cache
def tool_contents() -> st.SearchStrategy[ToolContent]:
    """Tool content of every form: JSON (lists included), a binary or media
    item, and lists mixing JSON with at least one binary or media item."""
    return json_values() | binary_contents() | media_contents() | _content_list_items().map(
        lambda items: ContentList(items=items))


# The strategy of each kind of field (``core.fields``), for a value that is not None.
_BY_KIND: dict[str, Callable[[Any], st.SearchStrategy[Any]]] = {
    "text": lambda spec: st.text(_CHARS, max_size=12),
    "id_text": lambda spec: st.text(_CHARS, max_size=12),
    "name": lambda spec: (st.sampled_from(spec.known) | _NAMES) if spec.known else _NAMES,
    "decimal": lambda spec: _DECIMALS,
    "index": lambda spec: st.integers(0, 2**31),
    "count": lambda spec: st.integers(0, MAX_JSON_INT),
    "bool": lambda spec: _BOOLS,
    "json": lambda spec: json_values(),
    "object": lambda spec: json_objects(max_size=3),
    "array": lambda spec: _ARRAYS,
    "args": lambda spec: st.text(_CHARS, max_size=16) | json_objects(),
    "text_or_object": lambda spec: _CONTENT | json_objects(),
    "counts": lambda spec: st.dictionaries(_SHORT, st.integers(0, 10**6), max_size=2),
    "instant": lambda spec: _AWARE,
    "bytes": lambda spec: st.binary(max_size=48),
    "choice": lambda spec: st.sampled_from(spec.kind.choices),
    "nested": lambda spec: source_values(spec.kind.cls),
    "part": lambda spec: st.one_of(*map(source_values, spec.kind.members)),
    "delta": lambda spec: st.one_of(*map(source_values, spec.kind.members)),
    "payload": lambda spec: st.one_of(*map(source_values, spec.kind.members)),
    "content": lambda spec: tool_contents(),
    "items": lambda spec: _content_list_items(),
}


def _field_values(a: attrs.Attribute[Any]) -> st.SearchStrategy[Any]:
    spec = field_spec(a)
    if spec.kind.name == "tuple":
        unique = {"unique_by": lambda c: c.tool_call_id} if spec.kind is UNIQUE_CALLS else {}
        values = st.lists(source_values(spec.kind.cls), max_size=2, **unique).map(tuple)  # type: ignore[arg-type]
    else:
        values = _BY_KIND[spec.kind.name](spec)
    return st.none() | values if spec.optional or spec.may_omit else values


@functools.cache
def _declared_values(cls: type) -> st.SearchStrategy[Any]:
    return st.builds(cls, **{a.name: _field_values(a) for a in attrs.fields(cls)})


def source_values(cls: type, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values of a class of the source model, every field drawn from its
    declaration (``fields`` replaces the strategy of the fields it names).
    Classes whose fields depend on each other (ToolResultEvent, DeferredToolCall,
    MessageHistory, RunResult, ContentList) keep their rules."""
    if fields:
        return st.builds(cls, **{a.name: fields[a.name] if a.name in fields else _field_values(a)
                                 for a in attrs.fields(cls)})
    special = _SPECIAL.get(cls)
    return special() if special is not None else _declared_values(cls)


def _tool_call_parts(builtin: st.SearchStrategy[bool] = _BOOLS) -> st.SearchStrategy[ToolCallPart]:
    return source_values(ToolCallPart, builtin=builtin)


@functools.cache
def _start_only_parts() -> dict[type, st.SearchStrategy[Part]]:
    return {cls: source_values(cls) for cls in (BuiltinToolReturnPart, FilePart, UnknownPart)}


_UNKNOWN_DELTAS = st.deferred(lambda: source_values(UnknownDelta))


@functools.cache
def parts() -> st.SearchStrategy[Part]:
    """Every part: text, thinking, tool call (builtin or not), builtin tool
    return, file, and parts of kinds this release does not model."""
    return st.one_of(*map(source_values, typing.get_args(Part)))


@functools.cache
def deltas() -> st.SearchStrategy[PartDelta]:
    """Every delta, including signature-only thinking deltas and deltas of
    kinds this release does not model."""
    return st.one_of(*map(source_values, typing.get_args(PartDelta)))


_PART_KIND_NAMES = st.none() | st.sampled_from(PART_KINDS) | _NAMES


@st.composite
def _tool_results(draw: Draw) -> ToolResultEvent:
    output = draw(_BOOLS)
    return draw(source_values(ToolResultEvent, output=st.just(output),
                              user_content=st.none() if output else st.none() | tool_contents()))


@functools.cache
def payloads() -> st.SearchStrategy[Payload]:
    """Every payload form with every optional field set or not, unknown
    kinds (event, capability, part, delta, extension kind, input source)
    and binary content included."""
    return st.one_of(*map(source_values, typing.get_args(Payload)))


@st.composite
def _deferred_calls(draw: Draw) -> DeferredToolCall:
    target = draw(_tool_call_parts(st.just(False)))
    full = draw(_BOOLS)
    return DeferredToolCall(tool_call_id=target.tool_call_id, tool_name=target.tool_name, args=target.args,
                            target_identity=draw(_OPT_TEXT), target_call=target if full else None,
                            model_call=draw(st.none() | _tool_call_parts(st.just(False))))


@st.composite
def _histories_of_messages(draw: Draw) -> MessageHistory:
    messages: list[JSON] = draw(st.lists(json_objects(max_size=2), max_size=3))
    return MessageHistory(messages=messages, new_message_index=draw(st.integers(0, len(messages))))


@st.composite
def _run_results(draw: Draw) -> RunResult:
    status = draw(st.sampled_from(RUN_STATUSES))
    common: dict[str, Any] = {
        "usage": draw(st.none() | source_values(Usage)),
        "state": draw(st.none() | json_objects(max_size=3)),
        "usage_records": draw(st.none() | _ARRAYS),
        "history": draw(st.none() | source_values(MessageHistory)),
    }
    if status == "completed":
        return RunResult(status="completed", output=draw(json_values()), **common)
    if status == "failed":
        return RunResult(status="failed", failure=draw(source_values(Failure)), **common)
    if status == "cancelled":
        return RunResult(status="cancelled", **common)
    deferred = draw(source_values(Deferred).filter(lambda d: bool(d.calls or d.approvals)))
    return RunResult(status="suspended", deferred=deferred, suspend_reason=draw(st.none() | st.just("deferred")),
                     **common)


_SPECIAL: dict[type, Callable[[], st.SearchStrategy[Any]]] = {
    ToolResultEvent: _tool_results,
    DeferredToolCall: _deferred_calls,
    MessageHistory: _histories_of_messages,
    RunResult: _run_results,
    ContentList: lambda: _content_list_items().map(lambda items: ContentList(items=items)),
}


@functools.cache
def run_results() -> st.SearchStrategy[RunResult]:
    """Run results of every status with every field set or not (deferred
    calls with and without their full target and model calls)."""
    return source_values(RunResult)


@functools.cache
def source_items() -> st.SearchStrategy[HarnessStreamEvent]:
    """Single source items of every form (``payloads()`` in an envelope, or
    a terminal ``run_results()``), with any correlation: not a Run's history."""
    envelope = {"thread_id": _NAMES, "run_id": _NAMES, "sequence": st.integers(0, MAX_SEQUENCE),
                "occurred_at": _AWARE}
    return source_values(HarnessEvent, **envelope) | source_values(HarnessRunResultEvent, **envelope)


# -- valid histories ------------------------------------------------------------------------

def _split_points(draw: Draw, length: int, max_pieces: int) -> list[int]:
    """0, up to ``max_pieces - 1`` drawn cut points in order, and ``length``."""
    cuts = sorted(draw(st.lists(st.integers(0, length), max_size=max_pieces - 1)))
    return [0, *cuts, length]


def _split(draw: Draw, text: str, max_pieces: int) -> list[str]:
    """``text`` cut at up to ``max_pieces - 1`` drawn places (pieces may be empty)."""
    return [text[a:b] for a, b in pairwise(_split_points(draw, len(text), max_pieces))]


def _rarely(draw: Draw, one_in: int) -> bool:
    return draw(st.integers(0, one_in - 1)) == one_in - 1


def _repeat_to(base: str, length: int) -> str:
    return (base * (length // len(base) + 1))[:length]


@attrs.define
class _Plan:
    """A part that has started: what it still has to stream and how it ends."""

    kind: Literal["text", "thinking", "tool_call"]
    deltas: list[PartDelta]
    end: Callable[[bool], Part]  # argument: whether every delta was sent
    call_id: str | None = None
    # Tool calls only: a forced close (new model request, terminal) gives a
    # valid AG-UI call only once the name is known and all args were sent.
    name_known: bool = True


class _RunWriter:
    def __init__(self, draw: Draw, thread_id: str, run_id: str, large: bool) -> None:
        self.draw = draw
        self.thread_id = thread_id
        self.run_id = run_id
        self.large = large
        self.items: list[HarnessStreamEvent] = []
        self.sequence = 0
        self.at: datetime = draw(_STARTS)
        self.open: dict[int, _Plan] = {}
        self.used_indices: set[int] = set()
        self.request: int | None = None
        self.ended_calls: list[str] = []
        self.answered_calls: list[str] = []
        self.counter = 0

    # -- envelopes --------------------------------------------------------------------

    def _stamp(self) -> tuple[int, datetime]:
        if self.items:
            self.sequence += 1
            self.at += timedelta(microseconds=self.draw(st.integers(0, 1_500_000)))
            if _rarely(self.draw, 8):
                self.at = self.at.astimezone(_pick(self.draw, _ZONES))
        return self.sequence, self.at

    def emit(self, payload: Payload) -> None:
        seq, at = self._stamp()
        self.items.append(HarnessEvent(thread_id=self.thread_id, run_id=self.run_id, sequence=seq, occurred_at=at,
                                       event=payload))

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        suffix = self.draw(_SUFFIXES)
        # The "." ends the counter's digits: "call-1" + "0" must not be "call-10".
        return f"{prefix}{self.counter}.{suffix}" if suffix else f"{prefix}{self.counter}"

    # -- one step -----------------------------------------------------------------------

    def step(self) -> None:
        choices = ["text", "delta", "end", "thinking", "tool_call", "observation", "tool_result", "input",
                   "extension", "request", "delta", "delta", "end", "tool_call", "delta", "native"]
        if any(c not in self.answered_calls for c in self.ended_calls):
            choices += ["tool_result", "tool_result"]
        if len(self.open) >= 4:
            choices = [c for c in choices if c not in ("text", "thinking", "tool_call")]
        if not any(p.deltas for p in self.open.values()):
            choices = [c for c in choices if c != "delta"]
        if not self.open:
            choices = [c for c in choices if c != "end"]
        action = _pick(self.draw, choices)
        getattr(self, f"_{action}")()

    def _new_index(self) -> int:
        closed = sorted(self.used_indices - set(self.open))
        reuse: bool = bool(closed) and self.draw(_BOOLS)
        if reuse:
            return int(_pick(self.draw, closed))
        index = max(self.used_indices, default=-1) + _pick(self.draw, (1, 1, 2))
        self.used_indices.add(index)
        return index

    def _text(self) -> None:
        index = self._new_index()
        content = self.draw(_CONTENT)
        own = self.fresh("msg") if self.draw(_BOOLS) else None
        pieces = _split(self.draw, content, 6)
        in_start = self.draw(_BOOLS)
        start = TextPart(content=pieces[0] if in_start else "", id=own)
        deltas: list[PartDelta] = [TextPartDelta(content_delta=p) for p in (pieces[1:] if in_start else pieces)]
        end_id = own if own is not None and self.draw(_BOOLS) else None
        self.emit(PartStartEvent(index=index, part=start))
        self.open[index] = _Plan("text", deltas, lambda _sent: TextPart(content=content, id=end_id))

    def _thinking(self) -> None:
        index = self._new_index()
        content = self.draw(_CONTENT)
        own = self.fresh("think") if self.draw(_BOOLS) else None
        provider = self.draw(_PROVIDERS)
        signature = self.draw(_SIGNATURES)
        sig_where = _pick(self.draw, ("final", "deltas", "start"))
        pieces = _split(self.draw, content, 6)
        in_start = self.draw(_BOOLS)
        start = ThinkingPart(content=pieces[0] if in_start else "", id=own, provider_name=provider,
                             signature=signature if sig_where == "start" else None)
        deltas: list[PartDelta] = [ThinkingPartDelta(content_delta=p) for p in (pieces[1:] if in_start else pieces)]
        if signature is not None and sig_where == "deltas":
            for piece in _split(self.draw, signature, 3):
                deltas.insert(self.draw(st.integers(0, len(deltas))), ThinkingPartDelta(signature_delta=piece))
        final_signature = signature if sig_where == "final" or self.draw(_BOOLS) else None
        end_id = own if own is not None and self.draw(_BOOLS) else None
        self.emit(PartStartEvent(index=index, part=start))
        self.open[index] = _Plan("thinking", deltas, lambda _sent: ThinkingPart(
            content=content, id=end_id, signature=final_signature, provider_name=provider))

    def _tool_call(self) -> None:
        draw = self.draw
        index = self._new_index()
        call_id = self.fresh("call-")
        name = draw(_NAMES)
        name_where = _pick(draw, ("start", "deltas", "final"))
        args_kind = _pick(draw, ("text", "dict", "none"))
        same_id = draw(_BOOLS)

        def delta(**kw: Any) -> ToolCallPartDelta:
            return ToolCallPartDelta(tool_call_id=call_id if same_id else None, **kw)

        deltas: list[PartDelta] = []
        if name_where == "deltas":
            deltas += [delta(tool_name_delta=p) for p in _split(draw, name, 3)]
        start_args: str | dict[str, JSON] | None = None
        final_args: str | dict[str, JSON] | None = None
        if args_kind == "text":
            obj = draw(json_objects())
            indent = _pick(draw, (None, None, 2))
            text = json.dumps(obj, ensure_ascii=draw(_BOOLS), indent=indent)
            pieces = _split(draw, text, 8)
            if draw(_BOOLS):
                start_args, pieces = pieces[0], pieces[1:]
            deltas += [delta(args_delta=p) for p in pieces]
            final_args = text
        elif args_kind == "dict":
            obj = draw(json_objects())
            keys = list(obj)
            groups = [{k: obj[k] for k in keys[a:b]} for a, b in pairwise(_split_points(draw, len(keys), 3))]
            if draw(_BOOLS):
                start_args, groups = groups[0], groups[1:]
            deltas += [delta(args_delta=g) for g in groups]
            final_args = obj
        start = ToolCallPart(tool_name=name if name_where == "start" else "", args=start_args, tool_call_id=call_id)
        keep_final_args = draw(_BOOLS)

        def end(sent: bool) -> Part:
            # With every delta sent the final args may be left out: what was
            # streamed is already the whole value.
            return ToolCallPart(tool_name=name, args=final_args if keep_final_args or not sent else None,
                                tool_call_id=call_id)

        self.emit(PartStartEvent(index=index, part=start))
        self.open[index] = _Plan("tool_call", deltas, end, call_id, name_known=name_where != "final")

    def _delta(self) -> None:
        index = _pick(self.draw, sorted(i for i, p in self.open.items() if p.deltas))
        self.emit(PartDeltaEvent(index=index, delta=self.open[index].deltas.pop(0)))

    def _end(self) -> None:
        self._end_part(_pick(self.draw, sorted(self.open)))

    def _end_part(self, index: int) -> None:
        plan = self.open.pop(index)
        self.emit(PartEndEvent(index=index, part=plan.end(not plan.deltas)))
        if plan.call_id is not None:
            self.ended_calls.append(plan.call_id)

    def _close_for_boundary(self) -> None:
        """Make every open part safe to be closed by a notice or the terminal."""
        for index in sorted(self.open):
            plan = self.open[index]
            if plan.kind != "tool_call" or (plan.name_known and not plan.deltas):
                continue
            if plan.name_known and self.draw(_BOOLS):
                while plan.deltas:
                    self.emit(PartDeltaEvent(index=index, delta=plan.deltas.pop(0)))
            else:
                self._end_part(index)
        for plan in self.open.values():
            if plan.call_id is not None:
                self.ended_calls.append(plan.call_id)
        self.open.clear()
        self.used_indices.clear()

    def _request(self) -> None:
        first = 0 if self.request is None else self.request + 1
        request = self.draw(st.integers(first, first + 2))
        self._close_for_boundary()
        self.request = request
        payload: dict[str, JSON] = {"type": "model_request_started", "request_index": request}
        if self.draw(_BOOLS):
            payload["model"] = _pick(self.draw, ("claude", "gpt", "local-llm"))
        self.emit(ExtensionEvent(kind="lifecycle", schema_version="1", payload=payload))

    def _tool_result(self) -> None:
        pending = [c for c in self.ended_calls if c not in self.answered_calls]
        targets = ["unknown"] + (["answered"] if self.answered_calls else []) + (["ended"] * 3 if pending else [])
        target = _pick(self.draw, targets)
        if target == "ended":
            call_id = _pick(self.draw, pending)
            self.answered_calls.append(call_id)
        elif target == "answered":
            call_id = _pick(self.draw, self.answered_calls)
        else:
            call_id = self.fresh("unknown-call-")
        content: ToolContent = self.draw(json_values() if self.draw(_BOOLS) else tool_contents())
        if self.large and _rarely(self.draw, 15):
            content = _repeat_to(self.draw(_BASES), 70_000)
        self.emit(ToolResultEvent(tool_call_id=call_id, tool_name=self.draw(_SHORT),
                                  outcome=_pick(self.draw, TOOL_OUTCOMES), content=content))

    def _input(self) -> None:
        source = _pick(self.draw, INPUT_SOURCES)
        content: str | dict[str, JSON]
        if self.draw(_BOOLS):
            content = self.draw(_CONTENT)
            if self.large and _rarely(self.draw, 6):
                base = self.draw(_BASES)
                content = _repeat_to(base, self.draw(st.integers(8193, 20_000)))
        else:
            content = {
                "media_type": _pick(self.draw, ("image/png", "audio/wav", "application/pdf")),
                "url": f"https://files.example/{self.counter}",
                "size": self.draw(st.integers(0, 10**9)),
            }
        metadata = self.draw(_METADATA)
        self.emit(InputEvent(input_id=self.fresh("input-"), source=source, content=content, metadata=metadata))

    def _extension(self) -> None:
        kind = _pick(self.draw, EXTENSION_KINDS)
        payload = self.draw(json_values())
        if kind == "lifecycle":
            # Other lifecycle notices; model_request_started is ``_request``.
            payload = {"type": _pick(self.draw, ("model_request_finished", "tool_started", "heartbeat")),
                       "data": payload}
        self.emit(ExtensionEvent(kind=kind, schema_version=_pick(self.draw, ("1", "1.1", "2")),
                                 payload=payload))

    def _native(self) -> None:
        """One of the other payloads of a real Harness: the ones the projection
        passes on as CUSTOM events, and parts that only start."""
        draw = self.draw
        kind = _pick(draw, ("final_result", "tool_call", "capability", "unknown", "deferred", "enqueued",
                            "builtin_return", "file", "unknown_part", "unknown_delta"))
        payload: Payload
        if kind == "final_result":
            payload = FinalResultEvent(tool_name=draw(_OPT_TEXT), tool_call_id=draw(_OPT_NAME))
        elif kind == "tool_call":
            payload = draw(st.builds(ToolCallEvent, part=_tool_call_parts(), args_valid=st.none() | _BOOLS,
                                     output=_BOOLS))
        elif kind == "capability":
            payload = CapabilityEvent(kind="a13n.shell.status", capability_id=draw(_OPT_NAME),
                                      data=draw(json_objects(max_size=2)))
        elif kind == "unknown":
            payload = UnknownEvent(event_kind=draw(_NAMES), data=draw(json_objects(max_size=2)))
        elif kind == "deferred":
            payload = DeferredToolRequestsEvent(calls=(draw(_tool_call_parts(st.just(False))),))
        elif kind == "enqueued":
            payload = EnqueuedMessagesEvent(enqueue_id=self.fresh("enqueue-"), messages=draw(_ARRAYS))
        elif kind == "unknown_delta":
            payload = PartDeltaEvent(index=self.draw(st.integers(0, 3)), delta=draw(_UNKNOWN_DELTAS))
        else:
            cls = {"builtin_return": BuiltinToolReturnPart, "file": FilePart}.get(kind, UnknownPart)
            part = draw(_start_only_parts()[cls])
            payload = PartStartEvent(index=self._new_index(), part=part, previous_part_kind=draw(_PART_KIND_NAMES))
        self.emit(payload)

    def _observation(self) -> None:
        value = self.draw(json_values())
        if self.large and _rarely(self.draw, 10):
            value = {"blob": _repeat_to(self.draw(_BASES), 66_000)}
        self.emit(ObservationEvent(name=self.draw(_NAMES), value=value))

    # -- the end ---------------------------------------------------------------------

    def finish(self) -> None:
        self._close_for_boundary()
        seq, at = self._stamp()
        self.items.append(HarnessRunResultEvent(thread_id=self.thread_id, run_id=self.run_id, sequence=seq,
                                                occurred_at=at, result=self._result()))

    def _result(self) -> RunResult:
        draw = self.draw
        status = _pick(draw, RUN_STATUSES)
        usage = draw(_USAGES)
        if status == "completed":
            return RunResult(status="completed", output=draw(json_values()), usage=usage)
        if status == "failed":
            failure = Failure(code=draw(_NAMES), message=draw(_CONTENT))
            return RunResult(status="failed", failure=failure, usage=usage)
        if status == "cancelled":
            return RunResult(status="cancelled", usage=usage)
        known = self.ended_calls + [self.fresh("deferred-") for _ in range(2)]
        calls = draw(st.lists(st.sampled_from(known), unique=True, max_size=3))
        approvals = draw(st.lists(st.sampled_from(known), unique=True, min_size=0 if calls else 1, max_size=3))

        def deferred(call_id: str) -> DeferredToolCall:
            return DeferredToolCall(tool_call_id=call_id, tool_name=draw(_NAMES), args=draw(_DEFERRED_ARGS))

        waiting = Deferred(calls=tuple(map(deferred, calls)), approvals=tuple(map(deferred, approvals)))
        return RunResult(status="suspended", usage=usage, deferred=waiting)


@st.composite
def _runs(draw: Draw, complete: bool | None, thread_id: str | None, run_id: str | None, max_steps: int,
          large_payloads: bool, min_items: int) -> list[HarnessStreamEvent]:
    # The shape is drawn first: hypothesis draws late in a long test case
    # lean towards their simplest value, which would make most cuts short.
    finished = complete if complete is not None else draw(_BOOLS)
    cut = draw(st.integers(0, 1000))
    steps = draw(st.integers(min_items, max(min_items, max_steps)))
    writer = _RunWriter(draw, thread_id if thread_id is not None else draw(_NAMES),
                        run_id if run_id is not None else draw(_NAMES), large_payloads)
    for _ in range(steps):  # every step writes at least one item
        writer.step()
    writer.finish()
    if finished:
        return writer.items
    # A live Run cut anywhere: what the Harness had published at some point.
    items = writer.items[:-1]
    return items[:min_items + (len(items) - min_items) * cut // 1000]


def cut_points(length: int, *, first: int = 0, most: int = 3) -> st.SearchStrategy[list[int]]:
    """A few distinct positions from ``first`` to ``length`` (ascending):
    the cuts of a stream of ``length`` items, or the calls a processor may
    fail at (``first=1``). Where a property holds at every position, it is
    checked at these, drawn by hypothesis rather than looped over: a test
    costs ``most`` positions per example, and the shrinker still finds the
    smallest failing one. No position when ``length < first``."""
    if length < first:
        return st.just([])
    return st.lists(st.integers(first, length), min_size=1, max_size=most, unique=True).map(sorted)


def histories(*, complete: bool | None = None, thread_id: str | None = None, run_id: str | None = None,
              max_steps: int = 40, large_payloads: bool = True) -> st.SearchStrategy[list[HarnessStreamEvent]]:
    """Valid source histories of one Run, in source order.

    Text, thinking and tool-call parts interleave with several open at once;
    deltas split content anywhere; parts end with or without their deltas
    (or are closed by a new model request or the terminal item); part ids
    are present or left for the library to generate; tool results of every
    outcome (for ended, already answered and unknown calls); inputs of every
    source, text and media, sometimes longer than one 8192-character chunk;
    extensions including ``model_request_started`` notices with increasing
    request indexes; other observations; the other events of a real Harness
    (final results, tool call events, deferred requests, enqueued messages,
    capability and unknown events, builtin tool returns, file and unknown
    parts, tool content with binaries); unicode throughout and, with
    ``large_payloads``, values large enough to be split into CUSTOM
    fragments. Sequences number the items contiguously from 0, as a Harness
    does (``core.history``).

    ``complete=True`` always ends with a terminal result (every status
    occurs); ``complete=False`` gives a live Run cut anywhere before its
    terminal item (possibly empty); None mixes both. ``thread_id`` and
    ``run_id`` are drawn unless given. ``max_steps`` bounds the number of
    generation steps (items are a little more). Every complete history
    projects onto a valid AG-UI run. Each example is a new list.

    Raises ValueError for a negative ``max_steps`` or a blank id and
    TypeError for an id that is not a str, when the strategy is built.
    """
    if max_steps < 0:
        raise ValueError(f"max_steps must be >= 0, got {max_steps}")
    for name, value in (("thread_id", thread_id), ("run_id", run_id)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str or None, not {type(value).__name__}")
        if value is not None and not value.strip():
            raise ValueError(f"{name} must not be blank")
    return _runs(complete, thread_id, run_id, max_steps, large_payloads, 0)


def complete_histories(**kwargs: Any) -> st.SearchStrategy[list[HarnessStreamEvent]]:
    """``histories(complete=True, ...)``: Runs that end with their terminal result."""
    return histories(complete=True, **kwargs)


def live_histories(**kwargs: Any) -> st.SearchStrategy[list[HarnessStreamEvent]]:
    """``histories(complete=False, ...)``: Runs cut anywhere before the terminal item."""
    return histories(complete=False, **kwargs)


# -- invalid input -------------------------------------------------------------------------

@attrs.frozen
class InvalidCase:
    """A valid prefix of one Run followed by one input the observer must refuse.

    ``history`` is accepted by a fresh observer; ``item`` then raises
    ``error``, whether it is observed live or reached inside
    ``resume(history + [item])``: for an order or correlation fault (see
    ``ORDER_FAULTS``) the ``HistoryError`` subclass that every reader of a
    history raises for it, for another semantic fault
    ``AguiObservationError``, for a wrong Python type ``TypeError``.
    ``fault`` names what is wrong.
    """

    fault: str
    history: tuple[HarnessStreamEvent, ...]
    item: Any
    error: type[Exception]


FAULTS: tuple[str, ...] = (
    "thread_changed", "run_changed", "repeated_sequence", "decreasing_sequence", "skipped_sequence",
    "late_first_sequence", "after_terminal", "second_terminal", "kind_changed_at_delta", "kind_changed_at_end",
    "delta_for_closed_index", "end_for_closed_index", "start_at_open_index", "text_end_id_changed",
    "tool_call_id_changed", "tool_name_changed", "tool_name_after_start", "mixed_args", "tool_call_id_reused",
    "result_for_open_call", "request_index_not_increasing", "wrong_type",
)
"""The fault names ``invalid_cases`` knows (``InvalidCase.fault``)."""

ORDER_FAULTS: dict[str, type[AguiObservationError]] = {
    "thread_changed": ForeignRunError,
    "run_changed": ForeignRunError,
    "repeated_sequence": SequenceOrderError,
    "decreasing_sequence": SequenceOrderError,
    "skipped_sequence": SequenceGapError,
    "late_first_sequence": SequenceGapError,
    "after_terminal": AfterTerminalError,
    "second_terminal": AfterTerminalError,
}
"""The faults of a history's order and correlation, each with the
``HistoryError`` subclass every reader (observer, JSONL ``Journal``,
``check_prefix``, SQLite journal) refuses it with."""


class _Tail:
    """Appends items after a valid prefix, continuing its correlation and clock.
    Its ids ("tail-call-<tag>", "part-<tag>", ...) never take the run writer's
    shape ("call-<n>", "msg<n>", ...), so they cannot collide with the prefix's."""

    def __init__(self, draw: Draw, prefix: list[HarnessStreamEvent]) -> None:
        last = prefix[-1]
        self.draw = draw
        self.items = list(prefix)
        self.thread_id, self.run_id = last.thread_id, last.run_id
        self.sequence, self.at = last.sequence, last.occurred_at
        indexes = [i.event.index for i in prefix if isinstance(i, HarnessEvent)
                   and isinstance(i.event, (PartStartEvent, PartDeltaEvent, PartEndEvent))]
        self.free_index = max(indexes, default=-1) + 1
        requests = [_request_index(i) for i in prefix]
        self.request = max((r for r in requests if r is not None), default=None)

    def item(self, payload: Payload, **changes: Any) -> HarnessEvent:
        self.sequence += 1
        self.at += timedelta(milliseconds=1)
        fields = {"thread_id": self.thread_id, "run_id": self.run_id, "sequence": self.sequence,
                  "occurred_at": self.at, "event": payload, **changes}
        return HarnessEvent(**fields)

    def add(self, payload: Payload) -> None:
        self.items.append(self.item(payload))

    def index(self) -> int:
        self.free_index += 1
        return self.free_index - 1


def _request_index(item: HarnessStreamEvent) -> int | None:
    if isinstance(item, HarnessEvent) and isinstance(item.event, ExtensionEvent):
        body = item.event.payload
        if item.event.kind == "lifecycle" and isinstance(body, dict) and body.get("type") == "model_request_started":
            n = body.get("request_index")
            return n if isinstance(n, int) else None
    return None


def _other_kind_delta(kind: str) -> PartDelta:
    return TextPartDelta(content_delta="x") if kind != "text" else ThinkingPartDelta(content_delta="x")


def _other_kind_part(kind: str) -> Part:
    return TextPart(content="x") if kind != "text" else ToolCallPart(tool_name="t", args=None, tool_call_id="c-x")


def _start_of(kind: str, call_id: str = "c-open") -> Part:
    if kind == "text":
        return TextPart(content="")
    if kind == "thinking":
        return ThinkingPart(content="")
    return ToolCallPart(tool_name="lookup", args=None, tool_call_id=call_id)


@st.composite
def _invalid_case(draw: Draw, faults: tuple[str, ...], max_steps: int) -> InvalidCase:
    fault = draw(st.sampled_from(faults))
    if fault == "wrong_type":
        prefix = draw(histories(max_steps=max_steps, large_payloads=False))
        return InvalidCase(fault, tuple(prefix), draw(wrong_type_items()), TypeError)
    if fault == "late_first_sequence":  # nothing before it: the Run's first item does not carry 0
        first = draw(_runs(False, None, None, 0, False, 1))[0]
        return InvalidCase(fault, (), attrs.evolve(first, sequence=draw(st.integers(1, 10**6))), SequenceGapError)
    if fault in ("after_terminal", "second_terminal"):
        prefix = draw(complete_histories(max_steps=max_steps, large_payloads=False))
    else:
        prefix = draw(_runs(False, None, None, max_steps, False, 1))
    t = _Tail(draw, prefix)
    item: Any
    tag = draw(st.text(_ID_CHARS, min_size=1, max_size=4))
    if fault == "thread_changed":
        item = t.item(ObservationEvent(name="n"), thread_id=t.thread_id + tag)
    elif fault == "run_changed":
        item = t.item(ObservationEvent(name="n"), run_id=t.run_id + tag)
    elif fault in ("repeated_sequence", "decreasing_sequence"):
        last = prefix[-1].sequence
        if fault == "decreasing_sequence" and last == 0:
            t.add(ObservationEvent(name="n"))
            last = t.sequence
        seq = last if fault == "repeated_sequence" else draw(st.integers(0, last - 1))
        item = t.item(ObservationEvent(name="n"), sequence=seq)
    elif fault == "skipped_sequence":
        item = t.item(ObservationEvent(name="n"), sequence=t.sequence + 1 + draw(st.integers(1, 10**6)))
    elif fault == "after_terminal":
        item = t.item(ObservationEvent(name="n"))
    elif fault == "second_terminal":
        t.sequence += 1
        item = HarnessRunResultEvent(thread_id=t.thread_id, run_id=t.run_id, sequence=t.sequence,
                                     occurred_at=t.at, result=RunResult(status="cancelled"))
    elif fault in ("kind_changed_at_delta", "kind_changed_at_end", "start_at_open_index"):
        kind = draw(st.sampled_from(("text", "thinking", "tool_call")))
        index = t.index()
        t.add(PartStartEvent(index=index, part=_start_of(kind, f"call-open-{tag}")))
        if fault == "kind_changed_at_delta":
            item = t.item(PartDeltaEvent(index=index, delta=_other_kind_delta(kind)))
        elif fault == "kind_changed_at_end":
            item = t.item(PartEndEvent(index=index, part=_other_kind_part(kind)))
        else:
            item = t.item(PartStartEvent(index=index, part=_start_of(draw(st.sampled_from(("text", "thinking"))))))
    elif fault in ("delta_for_closed_index", "end_for_closed_index"):
        # An index no part ever started at (a late delta or end of a part that did end is taken: pydantic-ai
        # sends them).
        index = t.index()
        if fault == "delta_for_closed_index":
            item = t.item(PartDeltaEvent(index=index, delta=TextPartDelta(content_delta="late")))
        else:
            item = t.item(PartEndEvent(index=index, part=TextPart(content="late")))
    elif fault == "text_end_id_changed":
        index = t.index()
        kind = draw(st.sampled_from(("text", "thinking")))
        cls = TextPart if kind == "text" else ThinkingPart
        t.add(PartStartEvent(index=index, part=cls(content="", id=f"id-{tag}")))
        item = t.item(PartEndEvent(index=index, part=cls(content="", id=f"id-{tag}-other")))
    elif fault in ("tool_call_id_changed", "tool_name_changed", "tool_name_after_start", "mixed_args"):
        index = t.index()
        call_id = f"tail-call-{tag}"
        text_args = draw(_BOOLS)
        t.add(PartStartEvent(index=index, part=ToolCallPart(tool_name="search", args='{"q":' if text_args else {},
                                                            tool_call_id=call_id)))
        if fault == "tool_call_id_changed":
            if draw(_BOOLS):
                item = t.item(PartDeltaEvent(index=index, delta=ToolCallPartDelta(tool_call_id=call_id + "-other")))
            else:
                item = t.item(PartEndEvent(index=index, part=ToolCallPart(tool_name="search", args=None,
                                                                           tool_call_id=call_id + "-other")))
        elif fault == "tool_name_changed":
            item = t.item(PartEndEvent(index=index, part=ToolCallPart(tool_name="search-other", args=None,
                                                                       tool_call_id=call_id)))
        elif fault == "tool_name_after_start":
            item = t.item(PartDeltaEvent(index=index, delta=ToolCallPartDelta(tool_name_delta="more")))
        else:
            item = t.item(PartDeltaEvent(index=index, delta=ToolCallPartDelta(
                args_delta={"q": 1} if text_args else '"text"')))
    elif fault == "tool_call_id_reused":
        index = t.index()
        call_id = f"tail-call-{tag}"
        # Reused while the first call is still streaming (after it ended, a reused id is a later call's).
        t.add(PartStartEvent(index=index, part=ToolCallPart(tool_name="f", args=None, tool_call_id=call_id)))
        item = t.item(PartStartEvent(index=t.index(), part=ToolCallPart(tool_name="g", args=None,
                                                                       tool_call_id=call_id)))
    elif fault == "result_for_open_call":
        index = t.index()
        call_id = f"tail-call-{tag}"
        t.add(PartStartEvent(index=index, part=ToolCallPart(tool_name="f", args=None, tool_call_id=call_id)))
        item = t.item(ToolResultEvent(tool_call_id=call_id, tool_name="f", outcome="success", content="early"))
    elif fault == "request_index_not_increasing":
        current = (t.request if t.request is not None else -1) + 1
        t.add(ExtensionEvent(kind="lifecycle", schema_version="1",
                             payload={"type": "model_request_started", "request_index": current}))
        item = t.item(ExtensionEvent(kind="lifecycle", schema_version="1", payload={
            "type": "model_request_started", "request_index": draw(st.integers(0, current))}))
    else:  # pragma: no cover - FAULTS and the branches above are kept in step
        raise AssertionError(f"unknown fault {fault}")
    return InvalidCase(fault, tuple(t.items), item, ORDER_FAULTS.get(fault, AguiObservationError))


def invalid_cases(*, faults: tuple[str, ...] = FAULTS, max_steps: int = 15) -> st.SearchStrategy[InvalidCase]:
    """Invalid inputs, each after a valid prefix of a generated Run.

    Faults (``InvalidCase.fault``): changed thread or run; repeated,
    decreasing or skipped sequence; a Run whose first item is not at 0; an
    item or a second terminal after the terminal (these are the
    ``ORDER_FAULTS``, refused with their ``HistoryError`` subclass);
    a part changing kind at a delta or at its end; a delta or end for an
    index that is not open; a start at an open index; a text or thinking
    part ending with another id; a tool call changing id or name, naming
    itself after its START, or mixing text and object args; a tool call id
    used twice; a result for a call whose part is still open; a model request
    index that does not increase; a part id used by two parts; and wrong
    Python types. Restrict with ``faults``; an unknown fault name raises
    ValueError.
    """
    unknown = set(faults) - set(FAULTS)
    if unknown:
        raise ValueError(f"unknown faults {sorted(unknown)}; known: {', '.join(FAULTS)}")
    return _invalid_case(tuple(faults), max_steps)


_BARE_PAYLOADS: tuple[Payload, ...] = (
    ObservationEvent(name="n", value=1),
    PartStartEvent(index=0, part=TextPart(content="hi")),
    InputEvent(input_id="i", source="user", content="hello"),
)


def wrong_type_items() -> st.SearchStrategy[Any]:
    """Values that are not Harness stream items, which ``observe()`` and
    ``resume()`` refuse with TypeError: None, numbers, text and bytes (a
    wire line is not an item: decode it first), wire JSON dicts, bare
    payloads without an envelope, and lists."""
    line = ('{"v":1,"kind":"event","thread_id":"t","run_id":"r","sequence":0,'
            '"occurred_at":"2026-11-30T09:00:00+00:00","event":{"type":"observation","name":"n","value":1}}')
    return st.one_of(
        st.none(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=10),
        st.just(line),
        st.just(line.encode()),
        st.just(json.loads(line)),
        st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
        st.sampled_from(_BARE_PAYLOADS),
        st.lists(st.integers(), max_size=2),
        st.just(RunResult(status="cancelled")),
    )


# -- processors ------------------------------------------------------------------------------

_CONTENT_FIELD = {
    "TEXT_MESSAGE_CONTENT": "delta",
    "REASONING_MESSAGE_CONTENT": "delta",
    "TOOL_CALL_ARGS": "delta",
    "TOOL_CALL_RESULT": "content",
    "REASONING_ENCRYPTED_VALUE": "encrypted_value",
    "RUN_ERROR": "message",
    "RUN_FINISHED": "result",
}

_STRUCTURAL_FIELD = {
    "RUN_STARTED": "run_id",
    "RUN_FINISHED": "thread_id",
    "RUN_ERROR": "code",
    "TEXT_MESSAGE_START": "message_id",
    "TEXT_MESSAGE_CONTENT": "message_id",
    "TEXT_MESSAGE_END": "message_id",
    "REASONING_MESSAGE_START": "message_id",
    "REASONING_MESSAGE_CONTENT": "message_id",
    "REASONING_MESSAGE_END": "message_id",
    "REASONING_ENCRYPTED_VALUE": "entity_id",
    "TOOL_CALL_START": "tool_call_name",
    "TOOL_CALL_ARGS": "tool_call_id",
    "TOOL_CALL_END": "tool_call_id",
    "TOOL_CALL_RESULT": "message_id",
    "CUSTOM": "name",
}

EVENT_TYPES: tuple[str, ...] = tuple(_STRUCTURAL_FIELD)

RewriteStyle = Literal["tag", "reverse", "halve", "upper", "sequence"]


@attrs.frozen
class ReplayStableProcessor:
    """A processor that keeps the processor contract (docs/projection.md, "The observer's contract").

    It drops events whose type is in ``drop`` (all of them when
    ``drop_modulus`` is 1, else only those of items whose sequence is a
    multiple of it) and rewrites the content field of events whose type is
    in ``rewrite`` in a deterministic ``style``: prefix ``tag``, reverse,
    keep the first half (which can empty a delta, so it is dropped), upper
    case, or prefix the source item's sequence. Its answer depends only on
    its arguments, so replay gives the same projection as live observation.
    Raises nothing.
    """

    drop: frozenset[str] = frozenset()
    drop_modulus: int = 1
    rewrite: frozenset[str] = frozenset()
    style: RewriteStyle = "tag"
    tag: str = "~"

    def __call__(self, item: HarnessStreamEvent, event: BaseEvent) -> BaseEvent | None:
        kind = event.type.value
        if kind in self.drop and item.sequence % self.drop_modulus == 0:
            return None
        field = _CONTENT_FIELD.get(kind)
        if field is None or kind not in self.rewrite:
            return event
        value = getattr(event, field)
        if kind == "RUN_FINISHED":
            new: Any = {"processed": self.style, "tag": self.tag, "sequence": item.sequence, "result": value}
        else:
            new = self._text(value, item.sequence)
        return event.model_copy(update={field: new})

    def _text(self, text: str, sequence: int) -> str:
        if self.style == "tag":
            return self.tag + text
        if self.style == "reverse":
            return text[::-1]
        if self.style == "halve":
            return text[: len(text) // 2]
        if self.style == "upper":
            return text.upper()
        return f"{sequence}:{text}"


def replay_stable_processors() -> st.SearchStrategy[ReplayStableProcessor]:
    """Processors that drop some event kinds and rewrite content fields
    deterministically (see ``ReplayStableProcessor``)."""
    return st.builds(
        ReplayStableProcessor,
        drop=st.frozensets(st.sampled_from(EVENT_TYPES), max_size=3),
        drop_modulus=st.integers(1, 3),
        rewrite=st.frozensets(st.sampled_from(tuple(_CONTENT_FIELD)), max_size=len(_CONTENT_FIELD)),
        style=st.sampled_from(("tag", "reverse", "halve", "upper", "sequence")),
        tag=st.text(_CHARS, min_size=1, max_size=3),
    )


Breach = Literal["other_type", "structural_field", "timestamp", "content_type", "extra_field", "unset_field",
                 "not_an_event"]
_BREACHES: tuple[Breach, ...] = ("other_type", "structural_field", "timestamp", "content_type", "extra_field",
                                 "unset_field", "not_an_event")


@attrs.frozen
class ContractBreakingProcessor:
    """A processor that breaks the processor contract (docs/projection.md, "The observer's contract") on every event of
    type ``target`` and passes every other event through unchanged.

    ``breach``: answer with another event class, change a structural field,
    change the timestamp, give the content field a value of the wrong type
    (only for types that have one), add an extra field, set a field the
    library leaves unset, or answer with something that is not an event.
    The observer must refuse each with AguiObservationError. Its own call
    raises nothing.
    """

    target: str
    breach: Breach

    def __call__(self, item: HarnessStreamEvent, event: BaseEvent) -> Any:
        if event.type.value != self.target:
            return event
        if self.breach == "other_type":
            if isinstance(event, CustomEvent):
                return RawEvent(event={"type": "CUSTOM"}, timestamp=event.timestamp)
            return CustomEvent(name="harness.forged", value=None, timestamp=event.timestamp)
        if self.breach == "structural_field":
            name = _STRUCTURAL_FIELD[self.target]
            return event.model_copy(update={name: f"{getattr(event, name)}\u2020"})
        if self.breach == "timestamp":
            return event.model_copy(update={"timestamp": (event.timestamp or 0) + 1})
        if self.breach == "content_type":
            name = _CONTENT_FIELD[self.target]
            return event.model_copy(update={name: float("nan") if self.target == "RUN_FINISHED" else 42})
        if self.breach == "extra_field":
            return event.model_copy(update={"forged": True})
        if self.breach == "unset_field":
            return event.model_copy(update={"raw_event": {"forged": True}})
        return {"type": self.target}


def contract_breaking_processors(*, targets: tuple[str, ...] = EVENT_TYPES
                                 ) -> st.SearchStrategy[ContractBreakingProcessor]:
    """Processors that break the contract on one event type (see
    ``ContractBreakingProcessor``), restricted to ``targets`` if given."""
    def applicable(target: str) -> st.SearchStrategy[ContractBreakingProcessor]:
        breaches = [b for b in _BREACHES if b != "content_type" or target in _CONTENT_FIELD]
        return st.builds(ContractBreakingProcessor, st.just(target), st.sampled_from(breaches))

    return st.sampled_from(targets).flatmap(applicable)
