# Readable views of a Run, for a terminal and for Jupyter.
#
# Everything here reads immutable values and returns strings; nothing is
# cached and nothing raises for odd content. This module only renders: the
# conversation is interpreted once, by ``core.conversation`` (folded from a
# state's records, or from AG-UI events), and shown here as HTML (entries in
# the order they started, each tool result under its call, each subagent's
# work in a block of its own under the tool call that started it) or as
# text by ``pretty``. Text from a Run is untrusted: every piece goes
# through ``text.escape_terminal`` (control characters, bidi controls,
# invisible format characters and lone surrogates become visible escapes)
# and, in HTML, then through ``html.escape``, so a Run can neither inject
# markup nor move a terminal's cursor.
#
# Text views fit ``WIDTH`` (100) columns as ``text.display_width`` counts
# them. Steps, failed steps and diagnoses (``replay``) are read through the
# small protocols below rather than imported: ``replay`` imports this module
# for its reprs, and the package's import graph stays a tree pointing down.
# ``show`` (which needs the replay classes) lives in ``harness_agui.debug``.

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

import attrs
from ag_ui.core import BaseEvent

from ..core.conversation import (
    EMPTY_CONVERSATION,
    Conversation,
    Input,
    Interrupt,
    JsonValue,
    Message,
    ModelRequest,
    Notice,
    Outcome,
    RunStart,
    Subagent,
    TokenUsage,
    ToolCall,
    ToolResult,
    fold_events,
    fold_records,
    owner_of,
)
from ..core.errors import EventsNotRetainedError
from ..core.livelog import LiveLog
from ..core.observer import HarnessAguiObserver
from ..core.records import event_type
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from ..core.state import OpenPart, ProjectionState, SubagentState
from ..wire.codec import to_json
from .pretty import render_conversation
from .text import WIDTH, clip, escape_terminal, wrap

__all__ = [
    "WIDTH",
    "View",
    "StepLike",
    "FailedStepLike",
    "DiagnosisLike",
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

_INDENT = "    "
_LONG = 4 * WIDTH  # a source item or a journal line takes at most about four lines of a text view

# -- plain text helpers -----------------------------------------------------------

def _wrap(text: str, width: int, first: str = "", rest: str = _INDENT) -> list[str]:
    """``text.wrap`` with the text views' continuation indent."""
    return wrap(text, width, first, rest)


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
    return clip(f"{event.type.value} {fields}".rstrip(), width)


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
        return clip(f"not a source item: {item!r}", width)
    fields = " ".join(f"{k}={_compact(v)}" for k, v in data.items())
    return clip(f"seq {item.sequence} {kind} {fields}".rstrip(), width)


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


# -- what the views read of replay's values ----------------------------------------------

class StepLike(Protocol):
    """What the step views read of a ``replay.Step``."""

    @property
    def position(self) -> int: ...
    @property
    def line(self) -> int | None: ...
    @property
    def item(self) -> HarnessStreamEvent: ...
    @property
    def before(self) -> ProjectionState: ...
    @property
    def after(self) -> ProjectionState: ...
    @property
    def events(self) -> Sequence[BaseEvent]: ...
    @property
    def records(self) -> Sequence[Any]: ...
    @property
    def open_parts(self) -> tuple[OpenPart, ...]: ...


class FailedStepLike(Protocol):
    """What the diagnosis views read of a ``replay.FailedStep``."""

    @property
    def position(self) -> int: ...
    @property
    def line(self) -> int | None: ...
    @property
    def item(self) -> Any: ...
    @property
    def text(self) -> str | None: ...
    @property
    def before(self) -> ProjectionState: ...
    @property
    def stage(self) -> Literal["read", "decode", "project"]: ...
    @property
    def error_type(self) -> str: ...
    @property
    def message(self) -> str: ...


class DiagnosisLike(Protocol):
    """What the diagnosis views read of a ``replay.Diagnosis``."""

    @property
    def items(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def state(self) -> ProjectionState: ...
    @property
    def failure(self) -> FailedStepLike | None: ...
    @property
    def finished(self) -> bool: ...
    def event_counts(self) -> Mapping[str, int]: ...


# -- the conversation ---------------------------------------------------------------------

def _events_of(source: Any) -> Iterable[BaseEvent]:
    if isinstance(source, (ProjectionState, HarnessAguiObserver)):
        return source.snapshot()
    return source  # type: ignore[no-any-return]


def _conversation_of(source: Any) -> Conversation:
    """The conversation of a state, an observer or AG-UI events: folded from
    a state's records (or the one a live-only log that tracks messages
    keeps) without building their events. Raises EventsNotRetainedError for
    a live-only state that keeps neither."""
    if isinstance(source, Conversation):
        return source
    state = source.state if isinstance(source, HarnessAguiObserver) else source
    if not isinstance(state, ProjectionState):
        return fold_events(EMPTY_CONVERSATION, source)
    events = state.events
    if not isinstance(events, LiveLog):
        return fold_records(EMPTY_CONVERSATION, events)
    if events.messages is None:
        raise EventsNotRetainedError("the conversation of a live-only observer (retain_events=False) that does "
                                     "not track messages (track_messages=False)")
    return events.messages


def _plain(value: JsonValue) -> str:
    """A JSON value on one line; a string as it is."""
    plain = value.value
    return plain if isinstance(plain, str) else _compact(plain)


def _indented(value: JsonValue) -> str:
    """A JSON value for reading; a string holding JSON is indented as JSON."""
    plain = value.value
    return _pretty_json_text(plain) if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False, indent=2)


def _usage_text(usage: tuple[TokenUsage, ...]) -> str:
    names = (("input_tokens", "input"), ("output_tokens", "output"), ("reasoning_tokens", "reasoning"),
             ("cached_input_tokens", "cached input"), ("total_tokens", "total"))
    parts = [", ".join(f"{label} {getattr(u, k)}" for k, label in names if getattr(u, k) is not None)
             for u in usage]
    return "; ".join(p for p in parts if p)


def _outcome_title(o: Outcome) -> str:
    if o.status == "error":
        return f"run error{f' [{o.code}]' if o.code else ''}"
    if o.status == "interrupt":
        return "run finished: interrupted, waiting for the host"
    return f"run finished: {o.status}"


def _interrupt_line(i: Interrupt) -> str:
    return f"{i.reason or 'interrupt'} {i.id or '?'}: {i.message or ''}".rstrip(": ")


# -- conversation as text ---------------------------------------------------------------

def conversation_text(source: Any, width: int = WIDTH, *, notices: bool = False) -> str:
    """The projection as a plain-text conversation (``harness_agui.pretty``),
    every line at most ``width`` columns, the Harness's own notices left out
    unless ``notices``. ``source`` is a ProjectionState, an observer, or an
    iterable of AG-UI events (a snapshot, a step's events). Raises ValueError
    for a ``width`` below 20 and TypeError for a ``source`` that is not
    iterable."""
    return render_conversation(_events_of(source), width=width, notices=notices).rstrip("\n")


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
.hagui .subagent{border-color:#6366f1;margin-left:.6em}
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
    return html.escape(escape_terminal(str(text), multiline=True), quote=True)


def _frame(body: str) -> str:
    return f'<div class="hagui"><style>{_CSS}</style>{body}</div>'


def _pre(text: str) -> str:
    return f"<pre>{_e(text)}</pre>"


def _result_html(result: ToolResult) -> str:
    cls = "failed" if result.outcome == "failed" else "good" if result.outcome == "success" else "muted"
    return f'<div class="{cls}">result: {_e(result.outcome or "answered")}</div>{_pre(_indented(result.content))}'


def _subagent_html(e: Subagent, inner: str) -> str:
    status = {"running": "running", "finished": "finished", "error": "failed"}[e.status]
    head = (f'subagent <code>{_e(e.name or "?")}</code> <span class="muted">{_e(e.subagent_run_id)}</span>'
            f' · {_e(status)}')
    parts = [f'<details open class="row subagent"><summary class="who">{head}</summary>', inner]
    if e.status == "finished":
        parts.append('<div class="good">finished' + ("" if e.result is None else ":") + "</div>")
        if e.result is not None:
            parts.append(_pre(_indented(e.result)))
    elif e.status == "error":
        code = f" [{e.code}]" if e.code else ""
        parts.append(f'<div class="bad">failed{_e(code)}: {_e(e.message or "")}</div>')
    return "".join(parts) + "</details>"


def _entry_html(e: object, results: dict[str, ToolResult], inner: str = "") -> str:
    match e:
        case RunStart():
            return (f'<div class="head">run <code>{_e(e.run_id)}</code> '
                    f'<span class="muted">thread <code>{_e(e.thread_id)}</code></span></div>')
        case Input():
            who = ("user" if e.source == "user" else f"input ({e.source})") + ("" if e.whole else " (incomplete)")
            text = e.text
            media = e.media if e.media is not None else JsonValue("null")
            body = f'<div class="tx">{_e(text)}</div>' if text is not None else _pre(_indented(media))
            if e.metadata is not None and e.metadata.value:
                body += f'<div class="muted">metadata</div>{_pre(_indented(e.metadata))}'
            return f'<div class="row input"><div class="who">{_e(who)}</div>{body}</div>'
        case Message(kind="reasoning"):
            flags = [f for f, on in (("signed", e.signed), ("still streaming", not e.ended)) if on]
            summary = f"reasoning · {len(e.text)} chars" + "".join(f" · {f}" for f in flags)
            return (f'<details class="row reasoning"><summary class="who">{_e(summary)}</summary>'
                    f'<div class="tx">{_e(e.text)}</div></details>')
        case Message():
            flag = "" if e.ended else ' <span class="muted">still streaming</span>'
            return (f'<div class="row assistant"><div class="who">{_e(e.role or "assistant")}{flag}</div>'
                    f'<div class="tx">{_e(e.text)}</div></div>')
        case ToolCall():
            head = f'tool call <code>{_e(e.name or "?")}</code> <span class="muted">{_e(e.tool_call_id)}</span>'
            if not e.ended:
                head += ' <span class="muted">args still streaming</span>'
            parts = [f'<div class="row tool"><div class="who">{head}</div>']
            if e.args:
                parts.append(_pre(_pretty_json_text(e.args)))
            parts.append(inner)
            result = results.get(e.tool_call_id)
            if result is not None:
                parts.append(_result_html(result))
            elif e.ended:
                parts.append('<div class="muted">no result yet</div>')
            return "".join(parts) + "</div>"
        case ToolResult():
            note = "" if e.in_run else ' <span class="muted">no call for it in this run</span>'
            head = (f'tool result <code>{_e(e.tool_name or "?")}</code> '
                    f'<span class="muted">{_e(e.tool_call_id)}</span>{note}')
            return f'<div class="row tool"><div class="who">{head}</div>{_result_html(e)}</div>'
        case ModelRequest():
            return f'<div class="sep">model request {_e(_plain(e.index))}</div>'
        case Notice():
            label = {"observation": "observation ", "extension": "extension ", "custom": "custom "}.get(e.category, "")
            return (f'<details class="notice"><summary>{_e(label + e.name)}</summary>'
                    f'{_pre(_indented(e.value))}</details>')
        case Outcome():
            cls = "good" if e.status == "success" else "bad" if e.status == "error" else "head"
            title = _outcome_title(e) + (f": {e.message}" if e.status == "error" else "")
            parts = [f'<div class="row"><div class="head {cls}">{_e(title)}</div>']
            if e.result is not None:
                parts.append(_pre(_indented(e.result)))
            if e.interrupts:
                parts.append("<ul>" + "".join(f"<li>{_e(_interrupt_line(i))}</li>" for i in e.interrupts) + "</ul>")
            if e.usage:
                parts.append(f'<div class="muted">usage: {_e(_usage_text(e.usage))}</div>')
            return "".join(parts) + "</div>"
        case Subagent():
            return _subagent_html(e, inner)
    return f'<div class="muted">{_e(repr(e))}</div>'


def _conversation_body(conv: Conversation, notices: bool = True, last: int | None = None) -> str:
    # A result is drawn under its call when the call came first; any other result gets a row of its own.
    results: dict[str, ToolResult] = {}
    under_call: set[int] = set()
    calls: set[str] = set()
    entries = conv.entries
    for pos, e in enumerate(entries):
        if isinstance(e, ToolCall):
            calls.add(e.tool_call_id)
        elif isinstance(e, ToolResult) and e.in_run and e.tool_call_id in calls and e.tool_call_id not in results:
            results[e.tool_call_id] = e
            under_call.add(pos)
    # Each Run's entries are drawn in its own scope: the root Run's at the top, a subagent's inside its
    # block, and that block under the tool call that started it (or where it started, when that call is not
    # among the events). Entries of a subagent whose start is not among the events stay at the top.
    scopes: dict[str | None, list[int]] = {}
    for pos, e in enumerate(entries):
        if isinstance(e, Message) and e.holder:  # holds tool calls, which are drawn on their own
            continue
        if isinstance(e, Notice) and not notices:  # the Harness's bookkeeping, not the turn
            continue
        owner = owner_of(e)
        scopes.setdefault(owner if owner is None or conv.subagent(owner) is not None else None, []).append(pos)
    left_out = 0
    if last is not None and len(scopes.get(None, ())) > last:  # the Run's own entries: only the last ones
        left_out = len(scopes[None]) - last
        scopes[None] = scopes[None][left_out:]

    def scope(owner: str | None) -> list[str]:
        html_parts = []
        for pos in scopes.get(owner, ()):
            e = entries[pos]
            if pos in under_call:
                continue
            if isinstance(e, Subagent):
                call = conv.call(e.parent_tool_call_id) if e.parent_tool_call_id else None
                if isinstance(call, ToolCall) and owner_of(call) == owner:
                    continue  # drawn under its call
                html_parts.append(_subagent_html(e, "".join(scope(e.subagent_run_id))))
            elif isinstance(e, ToolCall):
                inner = "".join(_subagent_html(sub, "".join(scope(sub.subagent_run_id)))
                                for sub in (entries[p] for p in conv.subagents_of(e.tool_call_id, owner))
                                if isinstance(sub, Subagent))
                html_parts.append(_entry_html(e, results, inner))
            else:
                html_parts.append(_entry_html(e, results))
        return html_parts

    out = scope(None)
    if left_out:
        out.insert(0, f'<div class="muted left-out">{left_out} earlier entries not shown</div>')
    if conv.fragments:
        first = conv.fragments[0]
        out.append(f'<div class="muted">{_e(first.name)}: {len(conv.fragments)} of {first.count} fragments, '
                   "the rest is not among these events</div>")
    if not out:
        out.append('<div class="muted">(no events)</div>')
    return "".join(out)


def conversation_html(source: Any, *, notices: bool = False, last: int | None = None) -> str:
    """The projection as an HTML conversation: inputs, reasoning (collapsed),
    assistant text, tool calls with args and results, and the outcome; the
    Harness's own notices only with ``notices``. Takes what
    ``conversation_text`` takes, or a folded ``Conversation``; all Run text is
    escaped. With ``last``, only the last ``last`` entries of the Run's own
    scope are drawn (with what hangs under them: results, subagents), after a
    line saying how many were left out."""
    return _frame(_conversation_body(_conversation_of(source), notices, last))


# -- states ----------------------------------------------------------------------------------

def _part_line(p: OpenPart) -> str:
    name = f" {p.tool_name}" if p.kind == "tool_call" and p.tool_name else ""
    waiting = "" if p.started else f", name unknown, {len(p.pending)} chars held"
    if p.ended:
        waiting += ", ended (its END waits for the end of its response)"
    return f"{p.index} {p.kind}{name} [{p.message_id}] streamed {p.streamed} chars{waiting}"


def _calls_line(state: ProjectionState) -> str:
    return ", ".join(f"{n} {s}" for s, n in sorted(Counter(state.calls.values()).items())) or "none"


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
    if state.open_parts:
        lines.append("open parts:")
        lines += [clip(_INDENT + _part_line(p), width) for p in state.open_parts]
    if state.subagents:
        lines.append("subagent runs:")
        lines += [clip(_INDENT + _subagent_line(sub), width) for sub in _subagents(state)]
    if state.run_id is not None:
        lines.append("")
        lines.append(conversation_text(state, width))
    return "\n".join(lines)


def _subagents(state: ProjectionState) -> list[SubagentState]:
    return sorted(state.subagents.values(), key=lambda s: (s.order < 0, s.order, s.run_id))


def _subagent_line(sub: SubagentState) -> str:
    parts = ", ".join(f"{p.index}:{p.kind}" for p in sub.run.open_parts) or "none"
    parent = "" if sub.parent_run_id is None else f" of {sub.parent_run_id} via {sub.parent_tool_call_id}"
    return (f"{sub.name or '?'} [{sub.run_id}] {sub.status}{parent}, last sequence {sub.run.last_sequence}, "
            f"open parts {parts}")


def _state_body(state: ProjectionState, *, conversation: bool = True, open_: bool = True) -> str:
    out = [f'<div class="head">{_e(_state_header(state)[0])}</div>']
    for line in _state_header(state)[1:]:
        out.append(f'<div class="muted">{_e(line)}</div>')
    if state.open_parts:
        rows = "".join(
            f"<tr><td>{p.index}</td><td>{_e(p.kind)}</td><td><code>{_e(p.message_id)}</code></td>"
            f"<td>{_e(p.tool_name)}</td><td>{p.streamed}</td><td>{'yes' if p.started else 'no'}</td></tr>"
            for p in state.open_parts
        )
        out.append("<table><tr><th>open part</th><th>kind</th><th>message id</th><th>tool</th>"
                   f"<th>chars streamed</th><th>started</th></tr>{rows}</table>")
    if state.subagents:
        items = "".join(f"<li>{_e(_subagent_line(sub))}</li>" for sub in _subagents(state))
        out.append(f'<div class="muted">subagent runs</div><ul>{items}</ul>')
    if conversation and state.run_id is not None:
        body = _conversation_body(_conversation_of(state))
        attr = " open" if open_ else ""
        out.append(f"<details{attr}><summary>conversation</summary>{body}</details>")
    return "".join(out)


def state_html(state: ProjectionState) -> str:
    """A ProjectionState as HTML: status, counts, open parts and the
    conversation so far."""
    return _frame(_state_body(state))


# -- steps -------------------------------------------------------------------------------------

def step_repr(step: StepLike) -> str:
    """A one-line repr of a step, at most ``WIDTH`` columns."""
    line = "" if step.line is None else f" line {step.line}"
    names = [event_type(r) for r in step.records]
    shown = ", ".join(names[:4]) + (f", +{len(names) - 4}" if len(names) > 4 else "")
    word = "event" if len(names) == 1 else "events"
    text = f"Step(#{step.position}{line} seq {step.item.sequence} {_item_kind(step.item)} -> {len(names)} {word}"
    return clip(text + (f": {shown})" if names else ")"), WIDTH)


def step_text(step: StepLike, width: int = WIDTH) -> str:
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


def _step_body(step: StepLike) -> str:
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


def step_html(step: StepLike) -> str:
    """A step as HTML: its source item beside the AG-UI events it produced."""
    return _frame(_step_body(step))


# -- the observer --------------------------------------------------------------------------------

def observer_text(observer: HarnessAguiObserver, width: int = WIDTH) -> str:
    """An observer as plain text: its repr, then its state."""
    return "\n".join([clip(repr(observer), width), state_text(observer.state, width)])


def observer_html(observer: HarnessAguiObserver) -> str:
    """An observer as HTML: its repr, then its state and conversation."""
    return _frame(f'<div class="head">{_e(repr(observer))}</div>{_state_body(observer.state)}')


# -- diagnoses -----------------------------------------------------------------------------------

def _where(f: FailedStepLike) -> str:
    bits = [f"item #{f.position}"]
    if f.line is not None:
        bits.append(f"line {f.line}")
    seq = getattr(f.item, "sequence", None)
    if isinstance(seq, int):
        bits.append(f"sequence {seq}")
    return ", ".join(bits)


_STAGES = {"read": "reading the history", "decode": "decoding a line", "project": "projecting the item"}


def failed_step_repr(f: FailedStepLike) -> str:
    """A one-line repr of a failed step, at most ``WIDTH`` columns."""
    return clip(f"FailedStep({_where(f)}, {f.stage}: {f.error_type}: {f.message})", WIDTH)


def diagnosis_repr(d: DiagnosisLike) -> str:
    """A one-line repr of a diagnosis, at most ``WIDTH`` columns."""
    if d.failure is None:
        end = "finished" if d.finished else "not finished"
        return clip(f"Diagnosis(ok: {d.items} items, {d.events} events, {end})", WIDTH)
    f = d.failure
    return clip(f"Diagnosis(failed at {_where(f)}: {f.error_type}: {f.message})", WIDTH)


def diagnosis_text(d: DiagnosisLike, width: int = WIDTH) -> str:
    """A diagnosis as plain text: the verdict and counts, and for a failure
    the error, the item and the state it met; lines at most ``width`` columns."""
    if d.failure is None:
        end = "the run finished" if d.finished else "no terminal item: the run is not finished"
        lines = _wrap(f"ok: {d.items} items replayed into {d.events} AG-UI events; {end}", width)
        if d.state.open_parts:
            lines += _wrap("open parts: " + ", ".join(f"{p.index}:{p.kind}" for p in d.state.open_parts), width)
        lines += _wrap(", ".join(f"{k}={n}" for k, n in sorted(d.event_counts().items())), width, "events: ")
        return "\n".join(lines)
    f = d.failure
    lines = _wrap(f"failed at {_where(f)} while {_STAGES[f.stage]}", width)
    lines += _wrap(f"{f.error_type}: {f.message}", width, "error: ")
    if f.text is not None:
        lines += _wrap(clip(f.text, _LONG), width, "line: ")
    elif f.item is not None:
        lines += _wrap(item_summary(f.item, _LONG), width, "item: ")
    lines += _wrap(f"{d.items} items replayed into {d.events} events before it", width)
    lines += ["", "state before the failure:"]
    lines += state_text(f.before, width).split("\n")
    return "\n".join(lines)


def diagnosis_html(d: DiagnosisLike) -> str:
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


# -- a view for Jupyter -------------------------------------------------------------------------------

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

