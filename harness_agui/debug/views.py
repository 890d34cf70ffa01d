# Readable views of a Run, for a terminal and for Jupyter.
#
# Everything here reads immutable values and returns strings; nothing is
# cached and nothing raises for odd content. The conversation view folds a
# sequence of AG-UI events into entries (inputs, model requests, reasoning,
# assistant text, tool calls with their results, other notices, the outcome)
# and renders them as plain text or as HTML. Text from a Run is untrusted:
# in HTML it always goes through ``html.escape``; in both forms control
# characters, bidi overrides and lone surrogates are shown as escapes, so a
# Run can neither inject markup nor move a terminal's cursor.
#
# Text views fit ``WIDTH`` (100) columns, counted as ``pretty.display_width``
# counts them (wide East Asian characters two, combining marks none); the
# text conversation itself is ``pretty.render_conversation``, and the fold
# below exists for the HTML view, which needs the entries rather than lines.

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEncryptedValueEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ..core.custom import assemble_custom
from ..core.observer import HarnessAguiObserver
from ..core.source import HarnessEvent, HarnessRunResultEvent
from ..core.state import OpenPart, ProjectionState
from ..wire.codec import to_json
from .pretty import display_width, render_conversation

if TYPE_CHECKING:
    from .replay import Diagnosis, FailedStep, Step

__all__ = [
    "WIDTH",
    "View",
    "show",
    "conversation_text",
    "conversation_html",
    "state_text",
    "state_html",
    "step_repr",
    "step_text",
    "step_html",
    "observer_text",
    "observer_html",
    "diagnosis_repr",
    "diagnosis_text",
    "diagnosis_html",
    "failed_step_repr",
    "item_summary",
    "event_summary",
]

WIDTH = 100
"""Columns that every line of a text view fits in."""

_INDENT = "    "
_LONG = 4 * WIDTH  # a source item or a journal line takes at most about four lines of a text view

# -- plain text helpers -----------------------------------------------------------

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_TOKENS = re.compile(r"\S+|\s+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_char(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _clean(text: str) -> str:
    """``text`` with tabs expanded and unsafe characters shown as escapes; newlines kept."""
    if "\t" in text:
        text = text.replace("\t", _INDENT)
    return _UNSAFE.sub(_escape_char, text.replace("\r\n", "\n"))


def _clip(text: str, width: int) -> str:
    """One line of at most ``width`` columns, cut with "..." when longer."""
    text = _clean(text).replace("\n", "\\n")
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = display_width(ch)
        if used + w > width - 3:
            break
        out.append(ch)
        used += w
    return "".join(out) + "..."


def _wrap(text: str, width: int, first: str = "", rest: str = _INDENT) -> list[str]:
    """``text`` as lines of at most ``width`` columns: the first starts with
    ``first``, the others with ``rest``; newlines in ``text`` are kept and
    words longer than a line are cut."""
    lines: list[str] = []
    prefix = first
    for paragraph in _clean(text).split("\n"):
        line, used, start = prefix, display_width(prefix), display_width(prefix)
        for token in _TOKENS.findall(paragraph):
            w = display_width(token)
            if used + w <= width:
                line, used = line + token, used + w
                continue
            if used > start:
                lines.append(line.rstrip())
                line, used = rest, display_width(rest)
                start = used
            if token.isspace():
                continue
            for ch in token:
                cw = display_width(ch)
                if used + cw > width:
                    lines.append(line)
                    line, used = rest, display_width(rest)
                line, used = line + ch, used + cw
        lines.append(line.rstrip())
        prefix = rest
    return lines


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _pretty_json_text(text: str) -> str:
    """``text`` indented as JSON when it is JSON, else as it is."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if not isinstance(value, (dict, list)):
        return text
    return json.dumps(value, ensure_ascii=False, indent=2)


def _event_fields(event: BaseEvent) -> dict[str, Any]:
    data = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("type", None)
    data.pop("timestamp", None)
    return data


def event_summary(event: BaseEvent, width: int = WIDTH) -> str:
    """One line describing an AG-UI event: its type and its fields (camelCase
    wire names), cut to ``width`` columns. Raises nothing for AG-UI events."""
    fields = " ".join(f"{k}={_compact(v)}" for k, v in _event_fields(event).items())
    return _clip(f"{event.type.value} {fields}".rstrip(), width)


def item_summary(item: Any, width: int = WIDTH) -> str:
    """One line describing a source item: sequence, payload type and its
    wire fields, cut to ``width`` columns. Anything else is shown by repr."""
    if isinstance(item, HarnessEvent):
        data = to_json(item)["event"]
        kind = data.pop("type")
    elif isinstance(item, HarnessRunResultEvent):
        data = to_json(item)["result"]
        kind = "result"
    else:
        return _clip(f"not a source item: {item!r}", width)
    fields = " ".join(f"{k}={_compact(v)}" for k, v in data.items())
    return _clip(f"seq {item.sequence} {kind} {fields}".rstrip(), width)


def _item_kind(item: Any) -> str:
    if isinstance(item, HarnessEvent):
        return str(to_json(item)["event"]["type"])
    if isinstance(item, HarnessRunResultEvent):
        return f"result {item.result.status}"
    return type(item).__name__


def _item_json(item: Any) -> str:
    if isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
        return json.dumps(to_json(item), ensure_ascii=False, indent=2)
    return repr(item)


# -- the conversation model ----------------------------------------------------------

@attrs.define
class _Message:
    kind: str  # "assistant", "reasoning" or "input"
    id: str
    chunks: list[str] = attrs.field(factory=list)
    open: bool = True
    signed: bool = False
    source: str = ""
    media: Any = None

    @property
    def text(self) -> str:
        return "".join(self.chunks)


@attrs.define
class _Call:
    id: str
    name: str
    parent: str | None
    chunks: list[str] = attrs.field(factory=list)
    ended: bool = False
    result: str | None = None
    outcome: str | None = None
    started: bool = True

    @property
    def args(self) -> str:
        return "".join(self.chunks)


@attrs.define
class _Notice:
    name: str
    value: Any


@attrs.define
class _Request:
    index: Any


@attrs.define
class _Outcome:
    status: str  # success, interrupt, cancelled, error
    result: Any = None
    interrupts: list[dict[str, Any]] = attrs.field(factory=list)
    usage: list[dict[str, Any]] = attrs.field(factory=list)
    message: str = ""
    code: str | None = None


_Entry = _Message | _Call | _Notice | _Request | _Outcome


@attrs.define
class _Conversation:
    thread_id: str | None = None
    run_id: str | None = None
    entries: list[_Entry] = attrs.field(factory=list)


def _events_of(source: Any) -> list[BaseEvent]:
    if isinstance(source, ProjectionState):
        events = list(source.snapshot())
    elif isinstance(source, HarnessAguiObserver):
        events = list(source.snapshot())
    else:
        events = list(source)
    try:
        return list(assemble_custom(events))
    except ValueError:  # a slice that cuts an oversized CUSTOM: show the fragments as they are
        return events


def _fold(events: Iterable[BaseEvent]) -> _Conversation:
    conv = _Conversation()
    messages: dict[str, _Message] = {}
    calls: dict[str, _Call] = {}

    def message(kind: str, mid: str) -> _Message:
        m = messages.get(mid)
        if m is None:
            m = messages[mid] = _Message(kind, mid)
            conv.entries.append(m)
        return m

    def call(cid: str) -> _Call:
        c = calls.get(cid)
        if c is None:  # events of a call whose start is not in this slice
            c = calls[cid] = _Call(cid, "?", None, started=False)
            conv.entries.append(c)
        return c

    for event in events:
        match event:
            case RunStartedEvent():
                conv.thread_id, conv.run_id = event.thread_id, event.run_id
            case TextMessageStartEvent():
                message("assistant", event.message_id)
            case TextMessageContentEvent():
                message("assistant", event.message_id).chunks.append(event.delta)
            case TextMessageEndEvent():
                message("assistant", event.message_id).open = False
            case ReasoningMessageStartEvent():
                message("reasoning", event.message_id)
            case ReasoningMessageContentEvent():
                message("reasoning", event.message_id).chunks.append(event.delta)
            case ReasoningEncryptedValueEvent():
                message("reasoning", event.entity_id).signed = True
            case ReasoningMessageEndEvent():
                message("reasoning", event.message_id).open = False
            case ToolCallStartEvent():
                c = calls[event.tool_call_id] = _Call(event.tool_call_id, event.tool_call_name,
                                                      event.parent_message_id)
                conv.entries.append(c)
            case ToolCallArgsEvent():
                call(event.tool_call_id).chunks.append(event.delta)
            case ToolCallEndEvent():
                call(event.tool_call_id).ended = True
            case ToolCallResultEvent():
                c = call(event.tool_call_id)
                content = event.content
                c.result = content if isinstance(content, str) else _compact(_event_fields(event).get("content"))
                raw = event.metadata.get("harness") if isinstance(event.metadata, dict) else None
                harness: dict[str, Any] = raw if isinstance(raw, dict) else {}
                c.outcome = str(harness.get("outcome", "answered"))
                if c.name == "?" and isinstance(harness.get("tool_name"), str):
                    c.name = harness["tool_name"]
            case CustomEvent():
                _fold_custom(conv, event)
            case RunFinishedEvent():
                data = event.model_dump(mode="json", by_alias=True, exclude_none=True)
                outcome = data.get("outcome") or {}
                conv.entries.append(_Outcome(
                    str(outcome.get("type", "success")), result=data.get("result"),
                    interrupts=list(outcome.get("interrupts") or []), usage=list(data.get("usage") or []),
                ))
            case RunErrorEvent():
                data = event.model_dump(mode="json", by_alias=True, exclude_none=True)
                conv.entries.append(_Outcome("error", message=event.message, code=event.code,
                                             usage=list(data.get("usage") or [])))
            case _:
                conv.entries.append(_Notice(event.type.value, _event_fields(event)))
    return conv


def _fold_custom(conv: _Conversation, event: CustomEvent) -> None:
    value = event.value
    payload = value.get("payload") if isinstance(value, dict) else None
    name = event.name
    if isinstance(payload, dict) and name.startswith("harness.input."):
        content = payload.get("content")
        input_id = str(payload.get("input_id", ""))
        chunk = value.get("chunk") if isinstance(value.get("chunk"), dict) else None
        last = conv.entries[-1] if conv.entries else None
        if (chunk and chunk.get("index", 0) > 0 and isinstance(last, _Message) and last.kind == "input"
                and last.id == input_id and isinstance(content, str)):
            last.chunks.append(content)
            return
        m = _Message("input", input_id, open=False, source=name[len("harness.input."):])
        if isinstance(content, str):
            m.chunks.append(content)
        else:
            m.media = content
        conv.entries.append(m)
        return
    if (isinstance(payload, dict) and name == "harness.extension.lifecycle"
            and isinstance(payload.get("payload"), dict)
            and payload["payload"].get("type") == "model_request_started"):
        conv.entries.append(_Request(payload["payload"].get("request_index")))
        return
    if isinstance(payload, dict) and name == "harness.observation":
        conv.entries.append(_Notice(f"observation {payload.get('name')}", payload.get("value")))
        return
    if isinstance(payload, dict) and name.startswith("harness.extension."):
        conv.entries.append(_Notice(f"extension {payload.get('kind')}", payload.get("payload")))
        return
    if isinstance(payload, dict) and name == "harness.tool_result":
        label = (f"tool result for call {payload.get('tool_call_id')} ({payload.get('tool_name')}, "
                 f"{payload.get('outcome')}), not started in this run")
        conv.entries.append(_Notice(label, payload.get("content")))
        return
    conv.entries.append(_Notice(f"custom {name}", value if payload is None else payload))


def _usage_text(usage: list[dict[str, Any]]) -> str:
    names = (("inputTokens", "input"), ("outputTokens", "output"), ("reasoningTokens", "reasoning"),
             ("cachedInputTokens", "cached input"), ("totalTokens", "total"))
    parts = []
    for entry in usage:
        if isinstance(entry, dict):
            parts.append(", ".join(f"{label} {entry[k]}" for k, label in names if k in entry))
    return "; ".join(p for p in parts if p)


def _outcome_title(o: _Outcome) -> str:
    if o.status == "error":
        return f"run error{f' [{o.code}]' if o.code else ''}"
    if o.status == "interrupt":
        return "run finished: interrupted, waiting for the host"
    return f"run finished: {o.status}"


def _interrupt_line(i: dict[str, Any]) -> str:
    return f"{i.get('reason', 'interrupt')} {i.get('id', '?')}: {i.get('message', '')}".rstrip(": ")


# -- conversation as text ---------------------------------------------------------------

def conversation_text(source: Any, width: int = WIDTH) -> str:
    """The projection as a plain-text conversation (``harness_agui.pretty``),
    every line at most ``width`` columns. ``source`` is a ProjectionState, an
    observer, or an iterable of AG-UI events (a snapshot, a step's events).
    Raises ValueError for a ``width`` below 20 and TypeError for a
    ``source`` that is not iterable."""
    text = render_conversation(_events_of(source), width=width).rstrip("\n")
    # pretty keeps lone surrogates, which no terminal encoding can print; U+FFFD takes the same column.
    return _SURROGATE.sub("\ufffd", text)


# -- HTML ------------------------------------------------------------------------------------

_CSS = """
.hagui{font-family:system-ui,-apple-system,sans-serif;font-size:13px;line-height:1.45;max-width:64rem}
.hagui pre,.hagui .tx{white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0}
.hagui pre{font-size:12px;background:rgba(127,127,127,.08);padding:4px 6px;border-radius:3px;max-height:28em;
overflow:auto}
.hagui .row{margin:5px 0;padding:3px 8px;border-left:3px solid #9ca3af}
.hagui .who{font-weight:600;font-size:12px;opacity:.8}
.hagui .input{border-color:#3b82f6}
.hagui .assistant{border-color:#10b981}
.hagui .reasoning{border-color:#a855f7}
.hagui .tool{border-color:#f59e0b}
.hagui .failed,.hagui .bad{color:#dc2626}
.hagui .good{color:#059669}
.hagui .muted,.hagui .notice{opacity:.65;font-size:12px}
.hagui .sep{opacity:.65;font-size:12px;border-top:1px dashed #9ca3af;margin-top:8px;padding-top:2px}
.hagui .head{font-weight:600;margin:4px 0}
.hagui table{border-collapse:collapse}
.hagui td,.hagui th{vertical-align:top;text-align:left;padding:4px 8px;border:1px solid rgba(127,127,127,.3)}
.hagui ol{margin:0;padding-left:1.6em}
"""


def _e(text: Any) -> str:
    """Escaped, displayable text from a Run."""
    return html.escape(_clean(str(text)), quote=True)


def _frame(body: str) -> str:
    return f'<div class="hagui"><style>{_CSS}</style>{body}</div>'


def _pre(text: str) -> str:
    return f"<pre>{_e(text)}</pre>"


def _conversation_body(conv: _Conversation) -> str:
    out: list[str] = []
    if conv.run_id is not None:
        out.append(f'<div class="head">run <code>{_e(conv.run_id)}</code> '
                   f'<span class="muted">thread <code>{_e(conv.thread_id)}</code></span></div>')
    for e in conv.entries:
        match e:
            case _Message(kind="input"):
                who = "user" if e.source == "user" else f"input ({e.source})"
                body = _pre(json.dumps(e.media, ensure_ascii=False, indent=2)) if e.media is not None else (
                    f'<div class="tx">{_e(e.text)}</div>')
                out.append(f'<div class="row input"><div class="who">{_e(who)}</div>{body}</div>')
            case _Message(kind="reasoning"):
                flags = [f for f, on in (("signed", e.signed), ("still streaming", e.open)) if on]
                summary = f"reasoning · {len(e.text)} chars" + "".join(f" · {f}" for f in flags)
                out.append(f'<details class="row reasoning"><summary class="who">{_e(summary)}</summary>'
                           f'<div class="tx">{_e(e.text)}</div></details>')
            case _Message():
                flag = ' <span class="muted">still streaming</span>' if e.open else ""
                out.append(f'<div class="row assistant"><div class="who">assistant{flag}</div>'
                           f'<div class="tx">{_e(e.text)}</div></div>')
            case _Call():
                head = f'tool call <code>{_e(e.name)}</code> <span class="muted">{_e(e.id)}</span>'
                if not e.ended:
                    head += ' <span class="muted">args still streaming</span>'
                parts = [f'<div class="row tool"><div class="who">{head}</div>']
                if e.args:
                    parts.append(_pre(_pretty_json_text(e.args)))
                if e.result is not None:
                    cls = "failed" if e.outcome == "failed" else "good" if e.outcome == "success" else "muted"
                    parts.append(f'<div class="{cls}">result: {_e(e.outcome)}</div>{_pre(_pretty_json_text(e.result))}')
                elif e.ended:
                    parts.append('<div class="muted">no result yet</div>')
                parts.append("</div>")
                out.append("".join(parts))
            case _Request():
                out.append(f'<div class="sep">model request {_e(e.index)}</div>')
            case _Notice():
                out.append(f'<details class="notice"><summary>{_e(e.name)}</summary>'
                           f'{_pre(json.dumps(e.value, ensure_ascii=False, indent=2))}</details>')
            case _Outcome():
                cls = "good" if e.status == "success" else "bad" if e.status == "error" else "head"
                title = _outcome_title(e) + (f": {e.message}" if e.status == "error" else "")
                parts = [f'<div class="row"><div class="head {cls}">{_e(title)}</div>']
                if e.result is not None:
                    parts.append(_pre(json.dumps(e.result, ensure_ascii=False, indent=2)))
                if e.interrupts:
                    parts.append("<ul>" + "".join(f"<li>{_e(_interrupt_line(i))}</li>" for i in e.interrupts)
                                 + "</ul>")
                if e.usage:
                    parts.append(f'<div class="muted">usage: {_e(_usage_text(e.usage))}</div>')
                parts.append("</div>")
                out.append("".join(parts))
    if not out:
        out.append('<div class="muted">(no events)</div>')
    return "".join(out)


def conversation_html(source: Any) -> str:
    """The projection as an HTML conversation: inputs, reasoning (collapsed),
    assistant text, tool calls with args and results, and the outcome.
    Takes what ``conversation_text`` takes; all Run text is escaped."""
    return _frame(_conversation_body(_fold(_events_of(source))))


# -- states ----------------------------------------------------------------------------------

def _part_line(p: OpenPart) -> str:
    name = f" {p.tool_name}" if p.kind == "tool_call" and p.tool_name else ""
    waiting = "" if p.started else f", name unknown, {len(p.pending)} chars held"
    return f"{p.index} {p.kind}{name} [{p.message_id}] streamed {p.streamed} chars{waiting}"


def _calls_line(state: ProjectionState) -> str:
    counts: dict[str, int] = {}
    for status in state.calls.values():
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"


def _state_status(state: ProjectionState) -> str:
    if state.run_id is None:
        return "fresh"
    return "finished" if state.finished else "live"


def _state_header(state: ProjectionState) -> list[str]:
    if state.run_id is None:
        return ["state: fresh (no item yet)"]
    return [
        f"state of run {state.run_id!r} (thread {state.thread_id!r}): {_state_status(state)}",
        f"last sequence {state.last_sequence}, model request {state.request_index}, {len(state.events)} events, "
        f"tool calls: {_calls_line(state)}",
    ]


def state_text(state: ProjectionState, width: int = WIDTH) -> str:
    """A ProjectionState as plain text: status, counts, open parts, then the
    conversation so far; every line at most ``width`` columns."""
    lines = [line for h in _state_header(state) for line in _wrap(h, width)]
    if state.parent_message_id is not None:
        lines += _wrap(f"parent message for tool calls: {state.parent_message_id}", width)
    if state.parts:
        lines.append("open parts:")
        lines += [_clip(_INDENT + _part_line(p), width) for p in state.parts]
    if state.run_id is not None:
        lines.append("")
        lines.append(conversation_text(state, width))
    return "\n".join(lines)


def _state_body(state: ProjectionState, *, conversation: bool = True, open_: bool = True) -> str:
    out = [f'<div class="head">{_e(_state_header(state)[0])}</div>']
    for line in _state_header(state)[1:]:
        out.append(f'<div class="muted">{_e(line)}</div>')
    if state.parts:
        rows = "".join(
            f"<tr><td>{p.index}</td><td>{_e(p.kind)}</td><td><code>{_e(p.message_id)}</code></td>"
            f"<td>{_e(p.tool_name)}</td><td>{p.streamed}</td><td>{'yes' if p.started else 'no'}</td></tr>"
            for p in state.parts
        )
        out.append("<table><tr><th>open part</th><th>kind</th><th>message id</th><th>tool</th>"
                   f"<th>chars streamed</th><th>started</th></tr>{rows}</table>")
    if conversation and state.run_id is not None:
        body = _conversation_body(_fold(_events_of(state)))
        attr = " open" if open_ else ""
        out.append(f"<details{attr}><summary>conversation</summary>{body}</details>")
    return "".join(out)


def state_html(state: ProjectionState) -> str:
    """A ProjectionState as HTML: status, counts, open parts and the
    conversation so far."""
    return _frame(_state_body(state))


# -- steps -------------------------------------------------------------------------------------

def step_repr(step: Step) -> str:
    """A one-line repr of a step, at most ``WIDTH`` columns."""
    line = "" if step.line is None else f" line {step.line}"
    names = [r[0].name for r in step.records]
    shown = ", ".join(names[:4]) + (f", +{len(names) - 4}" if len(names) > 4 else "")
    word = "event" if len(names) == 1 else "events"
    text = f"Step(#{step.position}{line} seq {step.item.sequence} {_item_kind(step.item)} -> {len(names)} {word}"
    return _clip(text + (f": {shown})" if names else ")"), WIDTH)


def step_text(step: Step, width: int = WIDTH) -> str:
    """A step as plain text: where it is, its item, the events it produced
    and the parts open after it; every line at most ``width`` columns."""
    where = f"step #{step.position}" + ("" if step.line is None else f", journal line {step.line}")
    lines = _wrap(f"{where}, sequence {step.item.sequence}, at {step.item.occurred_at.isoformat()}", width)
    lines += _wrap(item_summary(step.item, _LONG), width, "item: ")
    events = list(step.events)
    lines.append(f"events ({len(events)}):")
    lines += [_INDENT + event_summary(e, width - len(_INDENT)) for e in events]
    parts = ", ".join(f"{p.index}:{p.kind}" for p in step.open_parts) or "none"
    lines += _wrap(f"open parts after: {parts}; state after: {_state_status(step.after)}, "
                   f"{len(step.after.events)} events", width)
    return "\n".join(lines)


def _events_html(events: Iterable[BaseEvent]) -> str:
    items = [f'<li><span class="who">{_e(ev.type.value)}</span>'
             f"{_pre(json.dumps(_event_fields(ev), ensure_ascii=False, indent=2))}</li>" for ev in events]
    return f"<ol>{''.join(items)}</ol>" if items else '<div class="muted">no events</div>'


def _step_body(step: Step) -> str:
    where = f"step #{step.position}" + ("" if step.line is None else f" · journal line {step.line}")
    head = f"{where} · sequence {step.item.sequence} · {step.item.occurred_at.isoformat()}"
    events = list(step.events)
    parts = ", ".join(f"{p.index}:{p.kind}" for p in step.open_parts) or "none"
    return (
        f'<div class="head">{_e(head)}</div>'
        f"<table><tr><th>source item: {_e(_item_kind(step.item))}</th>"
        f"<th>AG-UI events ({len(events)})</th></tr>"
        f"<tr><td>{_pre(_item_json(step.item))}</td><td>{_events_html(events)}</td></tr></table>"
        f'<div class="muted">open parts after: {_e(parts)}</div>'
        f'<div class="muted">before: {_e(repr(step.before))}</div>'
        f'<div class="muted">after: {_e(repr(step.after))}</div>'
    )


def step_html(step: Step) -> str:
    """A step as HTML: its source item beside the AG-UI events it produced."""
    return _frame(_step_body(step))


# -- the observer --------------------------------------------------------------------------------

def observer_text(observer: HarnessAguiObserver, width: int = WIDTH) -> str:
    """An observer as plain text: its repr, then its state."""
    return "\n".join([_clip(repr(observer), width), state_text(observer.state, width)])


def observer_html(observer: HarnessAguiObserver) -> str:
    """An observer as HTML: its repr, then its state and conversation."""
    return _frame(f'<div class="head">{_e(repr(observer))}</div>{_state_body(observer.state)}')


# -- diagnoses -----------------------------------------------------------------------------------

def _where(f: FailedStep) -> str:
    bits = [f"item #{f.position}"]
    if f.line is not None:
        bits.append(f"line {f.line}")
    seq = getattr(f.item, "sequence", None)
    if isinstance(seq, int):
        bits.append(f"sequence {seq}")
    return ", ".join(bits)


_STAGES = {"read": "reading the history", "decode": "decoding a line", "project": "projecting the item"}


def failed_step_repr(f: FailedStep) -> str:
    """A one-line repr of a failed step, at most ``WIDTH`` columns."""
    return _clip(f"FailedStep({_where(f)}, {f.stage}: {f.error_type}: {f.message})", WIDTH)


def diagnosis_repr(d: Diagnosis) -> str:
    """A one-line repr of a diagnosis, at most ``WIDTH`` columns."""
    if d.failure is None:
        end = "finished" if d.finished else "not finished"
        return _clip(f"Diagnosis(ok: {d.items} items, {d.events} events, {end})", WIDTH)
    f = d.failure
    return _clip(f"Diagnosis(failed at {_where(f)}: {f.error_type}: {f.message})", WIDTH)


def diagnosis_text(d: Diagnosis, width: int = WIDTH) -> str:
    """A diagnosis as plain text: the verdict and counts, and for a failure
    the error, the item and the state it met; lines at most ``width`` columns."""
    if d.failure is None:
        end = "the run finished" if d.finished else "no terminal item: the run is not finished"
        lines = _wrap(f"ok: {d.items} items replayed into {d.events} AG-UI events; {end}", width)
        if d.state.parts:
            lines += _wrap("open parts: " + ", ".join(f"{p.index}:{p.kind}" for p in d.state.parts), width)
        lines += _wrap(", ".join(f"{k}={n}" for k, n in sorted(d.event_counts().items())), width, "events: ")
        return "\n".join(lines)
    f = d.failure
    lines = _wrap(f"failed at {_where(f)} while {_STAGES[f.stage]}", width)
    lines += _wrap(f"{f.error_type}: {f.message}", width, "error: ")
    if f.text is not None:
        lines += _wrap(_clip(f.text, _LONG), width, "line: ")
    elif f.item is not None:
        lines += _wrap(item_summary(f.item, _LONG), width, "item: ")
    lines += _wrap(f"{d.items} items replayed into {d.events} events before it", width)
    lines += ["", "state before the failure:"]
    lines += state_text(f.before, width).split("\n")
    return "\n".join(lines)


def diagnosis_html(d: Diagnosis) -> str:
    """A diagnosis as HTML: the verdict, and for a failure the error, the
    item and the state it met (conversation collapsed)."""
    if d.failure is None:
        end = "the run finished" if d.finished else "no terminal item: the run is not finished"
        counts = ", ".join(f"{k}={n}" for k, n in sorted(d.event_counts().items()))
        return _frame(
            f'<div class="head good">ok: {d.items} items replayed into {d.events} AG-UI events; {_e(end)}</div>'
            f'<div class="muted">{_e(counts)}</div>{_state_body(d.state, open_=False)}'
        )
    f = d.failure
    shown = f.text if f.text is not None else _item_json(f.item) if f.item is not None else "(nothing was read)"
    return _frame(
        f'<div class="head bad">failed at {_e(_where(f))} while {_e(_STAGES[f.stage])}</div>'
        f"{_pre(f'{f.error_type}: {f.message}')}"
        f'<div class="who">{"line" if f.text is not None else "item"}</div>{_pre(shown)}'
        f'<div class="muted">{d.items} items replayed into {d.events} events before it</div>'
        f'<div class="sep">state before the failure</div>{_state_body(f.before, open_=False)}'
    )


# -- show ----------------------------------------------------------------------------------------------

@attrs.frozen
class View:
    """A rendered view: ``str()`` and ``repr()`` give the text, Jupyter
    displays ``_repr_html_``."""

    text: str
    html: str

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html


def show(obj: Any) -> View:
    """A View of a ProjectionState, an observer, a Step, a Diagnosis, or
    an iterable of AG-UI events (shown as a conversation). Raises TypeError
    for anything else."""
    from .replay import Diagnosis, Step

    if isinstance(obj, ProjectionState):
        return View(state_text(obj), state_html(obj))
    if isinstance(obj, HarnessAguiObserver):
        return View(observer_text(obj), observer_html(obj))
    if isinstance(obj, Step):
        return View(step_text(obj), step_html(obj))
    if isinstance(obj, Diagnosis):
        return View(diagnosis_text(obj), diagnosis_html(obj))
    if isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        events = list(obj)
        if all(isinstance(e, BaseEvent) for e in events):
            return View(conversation_text(events), conversation_html(events))
    raise TypeError(f"show() takes a state, an observer, a step, a diagnosis or AG-UI events, "
                    f"not {type(obj).__name__}")
