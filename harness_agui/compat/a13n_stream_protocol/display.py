# The display fold: a Run's AG-UI events (a13n-stream-protocol's vocabulary, as
# the JSON a stream carries) folded into compact display items, with a
# checkpoint that restores the fold mid-stream.
#
# Every event folded gets the next stream ``sequence`` (the fold's own count, per
# attempt) and changes at most one Item, found by a stable id (``item_id``), so a
# retried attempt updates the items it already made. Kinds: ``text_message``
# (assistant text, or an authored user input: ``a13n.input.user`` / ``.steering``,
# user media), ``reasoning_message`` (its encrypted value included), ``tool_call``
# (name, arguments, result, outcome, and the Harness observations about that call:
# a non-success result, a builtin call or return, an applied edit, tool images,
# MCP apps) and ``observation`` (lifecycle, other CUSTOM events bounded to
# MAX_OBSERVATION_BYTES unless the Host keeps content, one item per consecutive
# run of streamed tool-call argument deltas). Items of an inline child Run are
# scoped by its ``subagentRunId``; per scope (``root`` or a child run id) the fold
# keeps the current model request's response group and the memory sources
# delivered so far. Large CUSTOM events arrive as fragments, assembled first.
#
# The checkpoint (``export`` / ``capture_delta`` / ``export_continuation``) is a
# pure cut: items plus a DisplayContinuation (position, ordinals, groups, memory
# sources, held argument deltas, open fragment assemblies, the observer's
# conversion cursors); ``restore`` continues exactly there. The fold reads only
# event JSON; ``events(source)`` turns a native Harness item into that JSON with
# the compat stream observer, made on first use.

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from ag_ui.core import Event, TextPart, ToolCallArgsEvent, ToolCallResultEvent
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ...core._json import copy_json
from ._base import AguiEventProcessor, ObserverContinuation
from ._names import AUTHORED_INPUT_EVENT_NAMES
from .fragments import CustomEventAssembler, FragmentState
from .memory import MemorySource, memory_sources

if TYPE_CHECKING:
    from .observer import HarnessAguiStreamObserver

__all__ = [
    "FRAGMENTS", "MAX_FIELD_CHARS", "MAX_OBSERVATION_BYTES", "ContentRef", "DisplayContinuation", "DisplayFold",
    "DisplaySnapshot", "HeldArguments", "Item", "ItemKind", "ItemRef", "ItemState", "Observed", "StreamPosition",
    "bound_event", "extend", "fragment", "item_id", "open_tool_calls",
]

ItemKind = Literal["text_message", "reasoning_message", "tool_call", "observation"]
ItemState = Literal["in_progress", "completed", "interrupted", "failed"]

MAX_OBSERVATION_BYTES = 32768
"""An observation whose value's compact JSON is larger keeps only its name (unless the Host keeps content)."""
MAX_FIELD_CHARS = 262144
"""A message text, tool arguments or tool result keeps this many characters (unless the Host keeps content)."""

_MESSAGE_KINDS: dict[str, ItemKind] = {
    **dict.fromkeys(("TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"), "text_message"),
    **dict.fromkeys(("REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
                     "REASONING_ENCRYPTED_VALUE"), "reasoning_message"),
}
_TOOL_EVENTS = frozenset({"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"})
_LIFECYCLE_EVENTS = frozenset({
    "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR",
})
_ENDING = frozenset({"TEXT_MESSAGE_END", "REASONING_MESSAGE_END", "TOOL_CALL_RESULT"})
_FINISHED = frozenset({"completed", "failed"})
_KEPT_FIELDS = (  # event fields an item keeps as they are
    "messageId", "role", "toolCallId", "toolCallName", "parentMessageId", "metadata", "subagentRunId", "responseGroup",
)
_APPENDED_TO = {"TEXT_MESSAGE_CONTENT": "text", "REASONING_MESSAGE_CONTENT": "text", "TOOL_CALL_ARGS": "arguments"}
FRAGMENTS = frozenset(_APPENDED_TO)
"""The event types that append their ``delta`` to one message or tool call."""

_PART_DELTA = "a13n.pydantic_ai.part_delta"
_PART_EVENTS = frozenset({"a13n.pydantic_ai.part_start", "a13n.pydantic_ai.part_end", _PART_DELTA})
_RESULT_EVENTS = frozenset({"a13n.pydantic_ai.function_tool_result", "a13n.pydantic_ai.output_tool_result"})
_BUILTIN_PARTS = frozenset({"builtin-tool-call", "builtin-tool-return"})
_EDIT_APPLIED = "a13n.filesystem.edit_applied"
_TOOL_IMAGES = frozenset({"a13n.tool_images", "a13n.harness-ui.tool_images"})
_SUPPLEMENTS = frozenset({_EDIT_APPLIED, *_TOOL_IMAGES, "a13n.harness-ui.mcp_apps", "a13n.mcp_apps"})
_SUMMARIES = frozenset({"a13n.context.handoff_summary", "a13n.context.compaction_summary"})
_OMITTED: dict[str, JsonValue] = {"omitted": True}
_FAILED_OUTCOMES = frozenset({"failed", "denied", "interrupted"})
_FAILURE_MESSAGE_CHARS = 4096
_FROZEN = ConfigDict(extra="forbid", frozen=True)


class StreamPosition(BaseModel):
    """A place in a Run's display stream: the attempt and the fold's sequence in it."""

    model_config = _FROZEN
    attempt: int = Field(ge=0)
    sequence: int = Field(ge=0)

    def __str__(self) -> str:
        return f"{self.attempt}-{self.sequence}"


class ContentRef(BaseModel):
    """An immutable value a Host stores and serves through its own authorised content API."""

    model_config = _FROZEN
    id: str
    size_bytes: int = Field(ge=0)
    media_type: Literal["text/plain", "application/json"]
    preview: str
    truncated: bool = False


class Item(BaseModel):
    """One display item: ``ordinal`` is its dense place in the Run's display (1 first), ``started_at`` the
    time of its first event, ``ended_at`` that of the latest one that left it completed or failed."""

    model_config = ConfigDict(extra="forbid")
    id: str
    ordinal: int = Field(ge=1)
    kind: ItemKind
    state: ItemState
    first_stream_id: str
    last_stream_id: str
    started_at: datetime
    ended_at: datetime | None = None
    content: dict[str, JsonValue]
    content_refs: dict[str, ContentRef] = Field(default_factory=dict, exclude_if=lambda value: not value)


class ItemRef(BaseModel):
    """The item one event changed and its state after it; at a message end, the memory sources delivered
    before that reply."""

    id: str
    kind: ItemKind
    state: ItemState
    ordinal: int | None = Field(default=None, ge=1)
    response_group: str | None = None
    failure: dict[str, JsonValue] | None = None
    memory_sources: tuple[MemorySource, ...] | None = Field(default=None, exclude_if=lambda value: value is None)


class Observed(BaseModel):
    """One folded event (its JSON) at its stream sequence, with the item it changed."""

    sequence: int
    event: dict[str, Any]
    item: ItemRef | None


class HeldArguments(BaseModel):
    """Streamed argument deltas of one tool-call part (``stream``) being folded into one observation item
    (``key``): the first delta's time, the last one's sequence, the merged event (None once it outgrew
    MAX_OBSERVATION_BYTES) and the compact JSON size of its value."""

    stream: JsonValue
    key: str
    at: datetime
    sequence: int
    event: dict[str, Any] | None
    size: int


class DisplayContinuation(BaseModel):
    """The fold's parsing state at a cut (no items)."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    position: StreamPosition
    next_ordinal: int = Field(ge=1)
    full_content: bool = False
    response_groups: dict[str, str] = Field(default_factory=dict)
    memory_sources: dict[str, tuple[MemorySource, ...]] = Field(default_factory=dict,
                                                                exclude_if=lambda value: not value)
    arguments: HeldArguments | None = None
    fragments: FragmentState = Field(default_factory=FragmentState)
    observer: ObserverContinuation = Field(default_factory=ObserverContinuation)


class DisplaySnapshot(BaseModel):
    """Items and the continuation that folds an intact suffix onto them."""

    model_config = ConfigDict(extra="forbid")
    items: list[Item]
    continuation: DisplayContinuation


def item_id(run_id: str, kind: ItemKind, source_id: str) -> str:
    """The stable id of the item of ``kind`` for ``source_id`` in ``run_id``: the same in every attempt,
    so a retried call updates its item."""
    return "itm_" + hashlib.sha256(f"{run_id}\0{kind}\0{source_id}".encode()).hexdigest()[:32]


def fragment(event: Mapping[str, Any]) -> tuple[JsonValue, str] | None:
    """For an event that appends text to a stream, the stream's key and the text; None for any other
    event. Text, reasoning and argument deltas append to their message or call (the key is the event
    without ``delta`` and ``timestamp``); a streamed tool-call argument observation to its model part."""
    if event["type"] in FRAGMENTS:
        return {name: value for name, value in event.items() if name not in ("delta", "timestamp")}, event["delta"]
    delta = _streamed_arguments(event)
    if delta is None:
        return None
    value = event["value"]
    source = {**value["event"], "delta": {**delta, "args_delta": None}}
    return [event["name"], value["thread_id"], value["run_id"], source], delta["args_delta"]


def extend(event: dict[str, Any], text: str) -> None:
    """Append ``text`` (a later fragment's) to the fragment event ``event``, in place."""
    if event["type"] == "CUSTOM":
        event["value"]["event"]["delta"]["args_delta"] += text
    else:
        event["delta"] += text


def open_tool_calls(messages: Sequence[Any]) -> frozenset[str]:
    """The tool call ids of the latest model response that no later request answers (native pydantic-ai
    messages)."""
    from pydantic_ai.messages import ModelResponse, RetryPromptPart, ToolCallPart, ToolReturnPart

    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return frozenset(part.tool_call_id for part in message.parts
                             if isinstance(part, ToolCallPart) and part.tool_call_id not in answered)
        answered.update(part.tool_call_id for part in message.parts
                        if isinstance(part, ToolReturnPart | RetryPromptPart))
    return frozenset()


def bound_event(event: Event) -> Event:
    """``event`` with a tool result or argument text capped to one character over MAX_FIELD_CHARS (so the
    fold still sees it was cut), and result parts over the bound replaced by a notice; other events
    unchanged (the same object)."""
    if isinstance(event, ToolCallResultEvent):
        if isinstance(event.content, str) and len(event.content) > MAX_FIELD_CHARS:
            return event.model_copy(update={"content": event.content[:MAX_FIELD_CHARS + 1]})
        if isinstance(event.content, list) and len(event.model_dump_json()) > MAX_FIELD_CHARS:
            notice = TextPart(text="Result parts omitted: display size limit exceeded.")
            return event.model_copy(update={"content": [notice]})
    if isinstance(event, ToolCallArgsEvent) and len(event.delta) > MAX_FIELD_CHARS:
        return event.model_copy(update={"delta": event.delta[:MAX_FIELD_CHARS + 1]})
    return event


class DisplayFold:
    """Folds one Run's display events into items, independently of Host storage.

    ``attempt`` numbers the Run's attempts (positions restart per attempt); ``first`` is the ordinal of the
    first item when ``items`` is empty. ``full_content`` keeps every value whole and leaves native part
    observations out; ``retain_content`` keeps values whole but the same items. ``processor`` is the Host's
    AG-UI event processor (used by ``events``). ``continuation`` restores a cut; it raises ValueError when it
    belongs to another run, attempt or content policy.
    """

    def __init__(self, run_id: str, items: Sequence[Item] = (), *, attempt: int = 0, first: int = 1,
                 full_content: bool = False, retain_content: bool = False,
                 processor: AguiEventProcessor | None = None,
                 continuation: DisplayContinuation | None = None) -> None:
        self.run_id, self.attempt = run_id, attempt
        self.items: dict[str, Item] = {item.id: item.model_copy(deep=True) for item in items}
        self.next = first + len(items)
        self.changed: set[str] = set(self.items)
        self._checkpoint_changed: set[str] = set(self.items)
        self.sequence = 0
        self.full_content, self.retain_content = full_content, retain_content
        self.response_groups: dict[str, str] = {}
        self.memory_sources: dict[str, tuple[MemorySource, ...]] = {}
        self.assembler = CustomEventAssembler()
        self.arguments: HeldArguments | None = None
        self._processor = processor
        self._observer: HarnessAguiStreamObserver | None = None
        self._observer_state: ObserverContinuation | None = None  # set when restored from a continuation
        if continuation is not None:
            state = continuation.model_copy(deep=True)
            if state.run_id != run_id or state.position.attempt != attempt or state.full_content != full_content:
                raise ValueError("Display continuation does not match the run, attempt or content policy")
            self.next, self.sequence = state.next_ordinal, state.position.sequence
            self.response_groups, self.arguments = state.response_groups, state.arguments
            self.memory_sources = dict(state.memory_sources)
            self.assembler = CustomEventAssembler.restore(state.fragments)
            self._observer_state = state.observer

    # -- the observer (native items to event JSON) ----------------------------------------------------------

    def _process(self, source: Any, event: Event) -> Event | None:
        selected = self._processor(source, event) if self._processor is not None else event
        if selected is None or self.full_content or self.retain_content:
            return selected
        return bound_event(selected)

    @property
    def observer(self) -> HarnessAguiStreamObserver:
        """The non-retaining stream observer ``events()`` uses, made on first use (restored from the
        continuation when there is one); ImportError names the extra where a13n-harness is missing."""
        if self._observer is None:
            from .observer import HarnessAguiStreamObserver

            if self._observer_state is None:
                self._observer = HarnessAguiStreamObserver(processor=self._process, retain_events=False)
            else:
                self._observer = HarnessAguiStreamObserver.restore(self._observer_state, processor=self._process)
        return self._observer

    def _observer_continuation(self) -> ObserverContinuation:
        if self._observer is not None:
            return self._observer.export()
        return self._observer_state if self._observer_state is not None else ObserverContinuation()

    def events(self, source: Any) -> list[dict[str, Any]]:
        """The AG-UI events of one native Harness item, as the JSON a stream carries. Raises what the
        observer raises; nothing is folded."""
        return [event.model_dump(mode="json", by_alias=True) for event in self.observer.observe(source)]

    # -- checkpoints ---------------------------------------------------------------------------------------

    @property
    def position(self) -> StreamPosition:
        return StreamPosition(attempt=self.attempt, sequence=self.sequence)

    def export(self) -> DisplaySnapshot:
        """Every item and the continuation, detached. Ends, interrupts or pages nothing."""
        snapshot = DisplaySnapshot(items=list(self.items.values()), continuation=self.export_continuation())
        return snapshot.model_copy(deep=True)

    def capture_delta(self) -> DisplaySnapshot:
        """The items changed since the previous capture (by ordinal) and the continuation, detached.
        Independent of ``changed``, which a live publisher clears."""
        changed = sorted(self._checkpoint_changed, key=lambda key: self.items[key].ordinal)
        snapshot = DisplaySnapshot(items=[self.items[key].model_copy(deep=True) for key in changed],
                                   continuation=self.export_continuation())
        self._checkpoint_changed.clear()
        return snapshot

    def export_continuation(self) -> DisplayContinuation:
        """The parsing state alone, detached (no items)."""
        return DisplayContinuation(
            run_id=self.run_id, position=self.position, next_ordinal=self.next, full_content=self.full_content,
            response_groups=self.response_groups, memory_sources=self.memory_sources, arguments=self.arguments,
            fragments=self.assembler.export(), observer=self._observer_continuation(),
        ).model_copy(deep=True)

    @staticmethod
    def restore(snapshot: DisplaySnapshot, *, processor: AguiEventProcessor | None = None) -> DisplayFold:
        """A fold that continues ``snapshot`` (not shared with it)."""
        state = snapshot.continuation
        return DisplayFold(state.run_id, snapshot.items, attempt=state.position.attempt,
                           full_content=state.full_content, processor=processor, continuation=state)

    # -- folding -------------------------------------------------------------------------------------------

    def fold(self, events: list[dict[str, Any]], source: Any = None) -> list[Observed]:
        """Fold ``events`` (JSON), each at the next sequence. When ``source`` is a native tool result that
        is not a success, its call's item fails and the last event reports that item."""
        observed: list[Observed] = []
        for payload in events:
            self.sequence += 1
            ref = self._fold(payload)
            if ref is not None and payload["type"] == "TEXT_MESSAGE_END":
                sources = self.items[ref.id].content.get("memory_sources")
                if isinstance(sources, list):
                    delivered = tuple(MemorySource.model_validate(s) for s in sources)
                    ref = ref.model_copy(update={"memory_sources": delivered})
            observed.append(Observed(sequence=self.sequence, event=payload, item=ref))
        failed = _failed_tool_call(source) if observed and source is not None else None
        if failed is not None:
            child = source.run_id if source.run_id != self._observer_continuation().run_id else None
            key = self._key("tool_call", failed[0], child)
            previous = self.items.get(key)
            if previous is not None:
                failure: dict[str, JsonValue] = {"code": "tool_failed", "message": failed[1]}
                content: dict[str, JsonValue] = {**previous.content, "failure": failure}
                ref = self._put(key, "tool_call", "failed", content, at=_occurred(observed[-1].event))
                observed[-1] = observed[-1].model_copy(update={"item": ref})
        return observed

    def _key(self, kind: ItemKind, source_id: str, child: Any) -> str:
        """The id of the item of ``kind`` for ``source_id`` in the scope of the child run ``child`` (if any)."""
        return item_id(self.run_id, kind, f"{child}:{source_id}" if child else source_id)

    def _whole(self) -> bool:
        return self.full_content or self.retain_content

    def _bounded(self, content: dict[str, JsonValue], field: str, value: str) -> None:
        if self._whole() or len(value) <= MAX_FIELD_CHARS:
            content[field] = value
        else:
            content[field], content["truncated"] = value[:MAX_FIELD_CHARS], True

    def _fold(self, payload: dict[str, Any]) -> ItemRef | None:
        event_type = payload["type"]
        if event_type == "CUSTOM":
            return self._observation(payload)
        if event_type in _LIFECYCLE_EVENTS:
            return self._put(self._observation_key(), "observation", "completed", payload, at=_occurred(payload))
        kind: ItemKind
        if event_type in _MESSAGE_KINDS:
            kind = _MESSAGE_KINDS[event_type]
            source_id = payload["entityId"] if event_type == "REASONING_ENCRYPTED_VALUE" else payload["messageId"]
        elif event_type in _TOOL_EVENTS:
            kind, source_id = "tool_call", payload["toolCallId"]
        else:
            return None
        key = self._key(kind, source_id, payload.get("subagentRunId"))
        previous = self.items.get(key)
        content: dict[str, JsonValue] = dict(previous.content) if previous is not None else {}
        content.update({name: payload[name] for name in _KEPT_FIELDS if name in payload})
        scope = str(content.get("subagentRunId") or "root")
        group = self.response_groups.get(scope)
        if group is not None and "responseGroup" not in content:
            content["responseGroup"] = group
        if event_type == "TEXT_MESSAGE_END" and content.get("role") == "assistant":
            delivered = self.memory_sources.get(scope)
            if delivered is not None:
                content["memory_sources"] = [source.model_dump(mode="json") for source in delivered]
        if event_type == "TOOL_CALL_END":
            content["arguments_complete"] = True
        appended = _APPENDED_TO.get(event_type)
        if appended is not None:
            self._bounded(content, appended, str(content.get(appended, "")) + payload["delta"])
        if event_type == "REASONING_ENCRYPTED_VALUE":
            content["encrypted_value"] = payload.get("encryptedValue")
        if event_type == "TOOL_CALL_RESULT":
            result = payload.get("content", "")
            if isinstance(result, list):
                content["result_parts"] = result if self._whole() or _json_size(result) <= MAX_FIELD_CHARS else []
                if not content["result_parts"]:
                    content["truncated"] = True
            else:
                self._bounded(content, "result", str(result))
        ended = event_type in _ENDING
        state: ItemState = "completed" if ended else previous.state if previous is not None else "in_progress"
        return self._put(key, kind, state, content, at=_occurred(payload))

    def _observation_key(self) -> str:
        return item_id(self.run_id, "observation", f"{self.attempt}:{self.sequence}")

    def _observation(self, payload: dict[str, Any]) -> ItemRef | None:
        streamed = fragment(payload)
        if streamed is not None:
            return None if self.full_content else self._arguments(payload, *streamed)
        event = self.assembler.accept(payload)
        if event is None:
            return None
        name = event.get("name")
        value: JsonValue = event.get("value")
        inner = value.get("event") if isinstance(value, dict) else None
        inner_payload = inner.get("payload") if isinstance(inner, dict) else None
        scope = str(event.get("subagentRunId") or "root")
        if (name == "a13n.harness.lifecycle" and isinstance(inner_payload, dict)
                and inner_payload.get("type") == "model_request_started"):
            self.response_groups[scope] = f"{self.run_id}:{self.attempt}:{self.sequence}"
        if name == "a13n.harness.context" and isinstance(inner_payload, dict):
            delivered = memory_sources(inner_payload)
            if delivered is not None:
                kinds = {source.kind for source in delivered}
                kept = tuple(source for source in self.memory_sources.get(scope, ()) if source.kind not in kinds)
                self.memory_sources[scope] = (*kept, *delivered)
        media_input = (name == "a13n.input.media" and isinstance(inner, dict)
                       and inner.get("source") in {"user", "steering"})
        if name in AUTHORED_INPUT_EVENT_NAMES or media_input:
            assert isinstance(inner, dict)
            return self._input(event, inner, media=media_input)
        if isinstance(inner, dict):
            ref = self._tool_observation(event, inner)
            if ref is not None:
                return ref
        if self.full_content and name in _PART_EVENTS:
            return None
        keep_whole = self.retain_content or (self.full_content and name in _SUMMARIES)
        if not keep_whole and _json_size(value) > MAX_OBSERVATION_BYTES:
            value = _OMITTED
        content: dict[str, JsonValue] = {"name": str(name), "value": value,
                                         **_carried(event, "metadata", "subagentRunId")}
        return self._put(self._observation_key(), "observation", "completed", content, at=_occurred(payload))

    def _input(self, event: Mapping[str, Any], inner: dict[str, Any], *, media: bool) -> ItemRef:
        message_id = str(inner["message_id"])
        content: dict[str, JsonValue] = {"messageId": message_id, "role": "user",
                                         **_carried(event, "subagentRunId", "metadata")}
        if media:
            content["input_media"] = inner["content"]
        else:
            self._bounded(content, "text", str(inner["content"]))
        content["input_source"] = inner.get("source", "user")
        content["input_group"] = inner.get("input_id")
        key = self._key("text_message", message_id, event.get("subagentRunId"))
        return self._put(key, "text_message", "completed", content, at=_occurred(event))

    def _tool_observation(self, event: Mapping[str, Any], inner: dict[str, Any]) -> ItemRef | None:
        name, part = event.get("name"), inner.get("part")
        builtin = isinstance(part, dict) and part.get("part_kind") in _BUILTIN_PARTS
        supplement = name in _SUPPLEMENTS
        source = part if builtin or name in _RESULT_EVENTS else inner if supplement else None
        if not isinstance(source, dict) or not isinstance(call_id := source.get("tool_call_id"), str):
            return None
        child = event.get("subagentRunId")
        provider = str(source.get("provider_name") or "provider") if builtin else None
        key = self._key("tool_call", f"native:{provider}:{call_id}" if builtin else call_id, child)
        previous = self.items.get(key)
        content: dict[str, JsonValue] = dict(previous.content) if previous is not None else {}
        content["toolCallId"] = call_id
        if isinstance(child, str):
            content["subagentRunId"] = child
        if provider:
            content["provider"] = provider
        if "tool_name" in source:
            content["toolCallName"] = source["tool_name"]
        group = self.response_groups.get(str(child or "root"))
        if group is not None:
            content.setdefault("responseGroup", group)
        state: ItemState = previous.state if previous is not None else "in_progress"
        if name == _EDIT_APPLIED:
            content["applied_edit"] = {field: source.get(field) for field in ("file_path", "before", "after")}
        elif name in _TOOL_IMAGES:
            content["tool_images"] = source.get("images", [])
            content["tool_image_unavailable"] = source.get("unavailable", False)
        elif supplement:
            content["mcp_apps"] = source.get("apps", [])
        elif source.get("part_kind") == "builtin-tool-call":
            args = source.get("args")
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, separators=(",", ":"))
            self._bounded(content, "arguments", text)
            content["arguments_complete"] = True
        else:
            result = source.get("content")
            if self._whole() or _json_size(result) <= MAX_FIELD_CHARS:
                content["value"] = result
            else:
                content["truncated"] = True
            outcome = content["outcome"] = source.get("outcome")
            content["retry"] = source.get("part_kind") == "retry-prompt" or outcome == "retried"
            state = "failed" if content["retry"] or outcome in _FAILED_OUTCOMES else "completed"
        return self._put(key, "tool_call", state, content, at=_occurred(event))

    def _arguments(self, event: dict[str, Any], stream: JsonValue, text: str) -> ItemRef:
        """Consecutive argument deltas of one tool-call part become one observation: the first delta's,
        with all of their text and the first one's time."""
        held = self.arguments
        if held is not None and held.stream == stream and held.sequence == self.sequence - 1:
            if held.event is not None:
                extend(held.event, text)
                held.size += _json_size(text) - 2  # the text's escaped length, without its quotes
        else:
            first = copy_json(event)
            held = self.arguments = HeldArguments(stream=stream, key=self._observation_key(), at=_occurred(first),
                                                  sequence=0, event=first, size=_json_size(first["value"]))
        held.sequence = self.sequence
        if not self.retain_content and held.size > MAX_OBSERVATION_BYTES:
            held.event = None
        value = copy_json(held.event["value"]) if held.event is not None else _OMITTED
        content: dict[str, JsonValue] = {"name": _PART_DELTA, "value": value, **_carried(event, "subagentRunId")}
        return self._put(held.key, "observation", "completed", content, at=held.at)

    def _put(self, key: str, kind: ItemKind, state: ItemState, content: dict[str, JsonValue], *,
             at: datetime) -> ItemRef:
        position, previous = str(self.position), self.items.get(key)
        if previous is None:
            ordinal, self.next = self.next, self.next + 1
        else:
            ordinal = previous.ordinal
        self.items[key] = Item(
            id=key, ordinal=ordinal, kind=kind, state=state,
            first_stream_id=previous.first_stream_id if previous is not None else position,
            last_stream_id=position, started_at=previous.started_at if previous is not None else at,
            ended_at=at if state in _FINISHED else None, content=content,
        )
        self.changed.add(key)
        self._checkpoint_changed.add(key)
        group, failure = content.get("responseGroup"), content.get("failure")
        return ItemRef(id=key, kind=kind, state=state, ordinal=ordinal,
                       response_group=group if isinstance(group, str) else None,
                       failure=failure if isinstance(failure, dict) else None)


def _carried(event: Mapping[str, Any], *names: str) -> dict[str, JsonValue]:
    """The fields ``names`` an event carries, in that order."""
    return {name: event[name] for name in names if name in event}


def _json_size(value: JsonValue) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def _streamed_arguments(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The delta of a streamed tool-call argument observation; None for any other event."""
    if event["type"] != "CUSTOM" or event.get("name") != _PART_DELTA:
        return None
    delta = event["value"]["event"]["delta"]
    arguments = delta.get("part_delta_kind") == "tool_call" and isinstance(delta.get("args_delta"), str)
    return delta if arguments and not delta.get("tool_name_delta") else None


def _occurred(payload: Mapping[str, object]) -> datetime:
    """An event's own time (its epoch-millisecond ``timestamp``), or now for an event without one."""
    timestamp = payload.get("timestamp")
    return datetime.fromtimestamp(timestamp / 1000, UTC) if isinstance(timestamp, int) else datetime.now(UTC)


def _failed_tool_call(source: Any) -> tuple[str, str] | None:
    """For a native tool result that is not a success (a retry prompt, a failure, a denial): its call id
    and public message (at most 4096 characters); else None."""
    from a13n_harness import HarnessEvent
    from pydantic_ai.messages import FunctionToolResultEvent, OutputToolResultEvent, ToolReturnPart

    from ._harness import tool_execution_value
    from .content import tool_result_content

    event = source.event if isinstance(source, HarnessEvent) else None
    if not isinstance(event, FunctionToolResultEvent | OutputToolResultEvent):
        return None
    part = event.part
    if isinstance(part, ToolReturnPart) and part.outcome == "success":
        return None
    value = tool_execution_value(part.content, part.metadata) if isinstance(part, ToolReturnPart) else part.content
    content = tool_result_content(value)
    message = content if isinstance(content, str) else json.dumps(
        [item.model_dump(mode="json", by_alias=True) for item in content])
    return part.tool_call_id, message[:_FAILURE_MESSAGE_CHARS]
