# A conversation view of an AG-UI projection, for people reading a terminal.
#
# This module only renders: ``core.conversation.fold_event`` interprets each
# event, and the renderer turns the entries of the resulting conversation
# into blocks
# (the user's input, each reasoning and assistant message, each tool call
# with its args, each tool result, one-line notes, the run's outcome). The
# view is an append-only log, so a block is printed once, as soon as its
# entry can no longer change: a message or tool call at its END, an input
# when its last chunk arrived or another entry followed it, everything else
# at once. Blocks therefore come out in the order entries complete (the
# HTML view shows the same entries in the order they started), and
# ``iter_conversation`` can follow a live replay. Whatever is still open
# when the outcome arrives or the events run out is shown marked
# "(unfinished)" or "(incomplete)".
#
# A subagent's work is nested under the tool call that started it: its
# start prints a "┌─ subagent ..." line naming that call, its blocks follow
# behind a "│ " gutter per level of nesting (a narrower block inside the
# same width), and its end prints a "└─ subagent ..." line with its result
# or error. Concurrent subagents interleave, each block in its own gutter.
#
# Every line fits ``width`` columns as ``text.display_width`` counts them,
# and all text goes through ``text.escape_terminal`` (via ``text.wrap`` and
# ``text.clip``): a Run cannot drive the terminal. Long JSON values (tool
# args, results, other payloads) are cut after ``max_value_lines`` lines;
# conversation text never is.

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from ag_ui.core import BaseEvent

from ..core.conversation import (
    EMPTY_CONVERSATION,
    Entry,
    Input,
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
    fold_event,
    owner_of,
)
from .text import WIDTH, clip, display_width, wrap

__all__ = ["render_conversation", "iter_conversation"]

_MIN_WIDTH = 20
_GUTTER = "│ "
_MIN_INNER = 12  # the narrowest block a gutter may leave


def render_conversation(events: Iterable[BaseEvent], *, width: int = WIDTH,
                        max_value_lines: int | None = 40, notices: bool = False) -> str:
    """The whole conversation of a projection as plain text, as a person reads
    it: the Harness's own notices (its ``harness.*`` CUSTOM events that are no
    input: observations, extensions, native events) are left out unless
    ``notices``.

    ``events`` are AG-UI events as the observer returns them (a snapshot, a
    list, any iterable). The text ends with a newline and no line is wider
    than ``width`` columns. Raises ValueError for a ``width`` below 20 or a
    ``max_value_lines`` below 1; events it does not recognise get a one-line
    note (shown with the notices), never an error.
    """
    blocks = iter_conversation(events, width=width, max_value_lines=max_value_lines, notices=notices)
    return "".join(block + "\n\n" for block in blocks).rstrip("\n") + "\n"


def iter_conversation(events: Iterable[BaseEvent], *, width: int = WIDTH,
                      max_value_lines: int | None = 40, notices: bool = False) -> Iterator[str]:
    """Yield the blocks of the conversation view (each one or more lines,
    without a trailing newline) as soon as each is complete. Raises as
    ``render_conversation`` does."""
    if not isinstance(width, int) or width < _MIN_WIDTH:
        raise ValueError(f"width must be an int of at least {_MIN_WIDTH}, got {width!r}")
    if max_value_lines is not None and (not isinstance(max_value_lines, int) or max_value_lines < 1):
        raise ValueError(f"max_value_lines must be a positive int or None, got {max_value_lines!r}")
    renderer = _Renderer(width, max_value_lines, notices)
    for event in events:
        yield from renderer.feed(event)
    yield from renderer.close()


# -- values for reading ------------------------------------------------------------------

def _rule(title: str, width: int, fill: str) -> str:
    head = f"{fill * 2} {clip(title, width - 4)} "
    return head + fill * max(0, width - display_width(head))


def _json_text(value: Any, width: int) -> str:
    """A JSON value for reading: on one line when it fits, else indented."""
    one = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if display_width(one) <= width or not isinstance(value, (dict, list)):
        return one
    return json.dumps(value, ensure_ascii=False, indent=2)


def _compact(value: JsonValue) -> str:
    """A JSON value on one line; a string as it is."""
    plain = value.value
    return plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False, separators=(", ", ": "))


def _parse_json(text: str) -> Any:
    """The object or array ``text`` holds, else None."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _time(at: int | None) -> str:
    if at is None:
        return ""
    try:
        moment = datetime.fromtimestamp(at / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d}  "


def _tokens(usage: tuple[TokenUsage, ...]) -> list[str]:
    lines = []
    for u in usage:
        parts = [(u.input_tokens, "in"), (u.output_tokens, "out"), (u.reasoning_tokens, "reasoning"),
                 (u.cached_input_tokens, "cached")]
        text = ", ".join(f"{n} {label}" for n, label in parts if n is not None)
        if text:
            lines.append(f"tokens: {text}")
    return lines


# -- the renderer ----------------------------------------------------------------------------

class _Renderer:
    def __init__(self, width: int, max_value_lines: int | None, notices: bool = True) -> None:
        self.width = width
        self.max_lines = max_value_lines
        self.notices = notices
        self.conv = EMPTY_CONVERSATION
        self.entries = self.conv.entries  # the conversation's entries, with what streamed so far
        self.pending: set[int] = set()  # positions of entries not printed yet
        self.running: dict[str, int] = {}  # subagents whose start was printed and end was not: their positions
        self.seen_any = False

    def feed(self, event: BaseEvent) -> list[str]:
        self.seen_any = True
        known = len(self.conv.settled)
        self.conv = fold_event(self.conv, event)
        self.entries = entries = self.conv.entries
        out: list[str] = []
        for pos in sorted(self.pending.union(range(known, len(entries)))):
            entry = entries[pos]
            if isinstance(entry, Message) and entry.holder:  # holds tool calls, drawn on their own
                continue
            if isinstance(entry, Notice) and not self.notices:  # the Harness's bookkeeping, not the turn
                self.pending.discard(pos)
                continue
            if isinstance(entry, Outcome):
                out += self.flush()
                out.append(self.outcome_block(entry))
            elif self.ready(entry, pos):
                self.pending.discard(pos)
                out.append(self.render(entry))
                if isinstance(entry, Subagent) and entry.status == "running":
                    self.running[entry.subagent_run_id] = pos
            else:
                self.pending.add(pos)
        for run_id, pos in list(self.running.items()):
            entry = entries[pos]
            if isinstance(entry, Subagent) and entry.status != "running":
                del self.running[run_id]
                out.append(self.render(entry, end=True))
        return out

    def depth(self, owner: str | None) -> int:
        """How many gutters the entries of Run ``owner`` get."""
        if owner is None:
            return 0
        sub = self.conv.subagent(owner)
        levels = sub.depth if sub is not None else 1
        return min(levels, max(0, (self.width - _MIN_INNER) // len(_GUTTER)))

    def render(self, entry: Entry, unfinished: bool = False, end: bool = False) -> str:
        """The block of an entry, behind the gutter of its Run."""
        depth = self.depth(owner_of(entry))
        if depth == 0:
            return self.subagent_line(entry, end) if isinstance(entry, Subagent) else self.entry_block(
                entry, unfinished)
        width = self.width
        self.width = width - depth * len(_GUTTER)
        try:
            text = self.subagent_line(entry, end) if isinstance(entry, Subagent) else self.entry_block(
                entry, unfinished)
        finally:
            self.width = width
        return "\n".join(_GUTTER * depth + line for line in text.split("\n"))

    def subagent_line(self, sub: Entry, end: bool = False) -> str:
        assert isinstance(sub, Subagent)
        who = f"subagent {sub.name or '?'} [{sub.subagent_run_id}]"
        if not end:
            call = self.conv.call(sub.parent_tool_call_id) if sub.parent_tool_call_id else None
            name = call.name if isinstance(call, ToolCall) and call.name else "?"
            via = f" for tool call {name} [{sub.parent_tool_call_id}]" if sub.parent_tool_call_id else ""
            return clip(f"┌─ {_time(sub.at)}{who}{via}", self.width)
        if sub.status == "running":
            return clip(f"└─ {who} still running", self.width)
        if sub.status == "error":
            code = f" [{sub.code}]" if sub.code else ""
            return clip(f"└─ {_time(sub.ended_at)}{who} failed{code}: {sub.message or ''}", self.width)
        result = f": {_compact(sub.result)}" if sub.result is not None else ""
        return clip(f"└─ {_time(sub.ended_at)}{who} finished{result}", self.width)

    def ready(self, entry: Entry, pos: int) -> bool:
        """Whether the entry can no longer change."""
        if isinstance(entry, (Message, ToolCall)):
            return entry.ended
        if isinstance(entry, Input):  # only the last entry can take another chunk
            return entry.complete or pos < len(self.entries) - 1
        return True

    def flush(self) -> list[str]:
        """Blocks for the entries still open, marked unfinished."""
        out = [self.render(self.entries[pos], unfinished=True) for pos in sorted(self.pending)]
        self.pending.clear()
        return out

    def close(self) -> list[str]:
        out: list[str] = []
        if self.conv.fragments:
            out.append(self.note(f"{self.conv.fragments[0].name}: incomplete fragments at the end"))
        out += self.flush()
        for pos in sorted(self.running.values(), reverse=True):
            out.append(self.render(self.entries[pos], end=True))
        self.running.clear()
        if self.conv.outcome is None and self.conv.run_id is not None:
            out.append(_rule("run not finished (no outcome yet)", self.width, "="))
        if not self.seen_any:
            out.append("(no events)")
        return out

    # blocks -------------------------------------------------------------------------------

    def block(self, header: str, body: list[str]) -> str:
        return "\n".join(wrap(header, self.width, "", "    ") + body)

    def text_body(self, text: str) -> list[str]:
        return wrap(text, self.width, "  ") if text else ["  (empty)"]

    def value_lines(self, value: JsonValue | str, indent: str) -> list[str]:
        """A JSON value, or text that may hold one, for reading."""
        room = self.width - display_width(indent)
        plain = value.value if isinstance(value, JsonValue) else value
        if isinstance(plain, str):
            parsed = _parse_json(plain)
            text = plain if parsed is None else _json_text(parsed, room)
        else:
            text = _json_text(plain, room)
        return wrap(text, self.width, indent)

    def value_body(self, value: JsonValue | str, indent: str = "  ") -> list[str]:
        """A JSON value (or text holding one) for reading, cut after the
        configured number of lines."""
        lines = self.value_lines(value, indent)
        if self.max_lines is not None and len(lines) > self.max_lines:
            hidden = len(lines) - (self.max_lines - 1)
            lines = lines[: self.max_lines - 1] + [clip(f"{indent}... {hidden} more lines", self.width)]
        return lines

    def labelled(self, label: str, value: JsonValue) -> list[str]:
        """``  label: value`` on one line when it fits, else the value below."""
        inline = self.value_lines(value, f"  {label}: ")
        if len(inline) == 1:
            return inline
        return [f"  {label}:"] + self.value_body(value, "    ")

    def note(self, text: str) -> str:
        return "- " + clip(text, self.width - 2)

    def entry_block(self, entry: Entry, unfinished: bool = False) -> str:
        open_tag = " (unfinished)" if unfinished else ""
        match entry:
            case RunStart():
                return _rule(f"run {entry.run_id} (thread {entry.thread_id}), times in UTC", self.width, "=")
            case Input():
                return self.input_block(entry)
            case ModelRequest():
                return _rule(f"model request {_compact(entry.index)}", self.width, "-")
            case Message(kind="reasoning"):
                label = "reasoning" + (" (signed)" if entry.signed else "") + open_tag
                return self.block(_time(entry.at) + label, self.text_body(entry.text))
            case Message():
                label = (entry.role or "assistant") + (" (signed)" if entry.signed else "") + open_tag
                return self.block(_time(entry.at) + label, self.text_body(entry.text))
            case ToolCall():
                body = self.value_body(entry.args) if entry.args else ["  (no arguments)"]
                head = f"{_time(entry.at)}tool call {entry.name or '?'} [{entry.tool_call_id}]{open_tag}"
                return self.block(head, body)
            case ToolResult():
                outcome = f": {entry.outcome}" if entry.outcome is not None else ""
                note = "" if entry.in_run else " (no call for it in this run)"
                empty = entry.content.value in ("", None)
                body = ["  (empty)"] if empty else self.value_body(entry.content)
                head = f"{_time(entry.at)}tool result {entry.tool_name or '?'} [{entry.tool_call_id}]{outcome}{note}"
                return self.block(head, body)
            case Notice():
                return self.note(self.notice_text(entry))
            case Outcome():
                return self.outcome_block(entry)
            case Subagent():
                return self.subagent_line(entry)
        raise AssertionError(f"an entry the conversation view does not know: {entry!r}")

    def notice_text(self, notice: Notice) -> str:
        match notice.category:
            case "observation":
                return f"observation {notice.name}: {_compact(notice.value)}"
            case "extension":
                return f"{notice.name} (schema {notice.schema_version}): {_compact(notice.value)}"
            case "event":
                return f"{notice.name}: {_compact(notice.value)}" if notice.value.value else f"{notice.name} event"
        return f"{notice.name}: {_compact(notice.value)}"

    def input_block(self, entry: Input) -> str:
        label = "user" if entry.source == "user" else f"input ({entry.source})"
        if not entry.whole:
            label += " (incomplete)"
        text = entry.text
        body = self.text_body(text) if text is not None else self.labelled("media", entry.media or JsonValue.of(None))
        if entry.metadata is not None and entry.metadata.value:
            body += self.labelled("metadata", entry.metadata)
        return self.block(_time(entry.at) + label, body)

    def outcome_block(self, outcome: Outcome) -> str:
        lines: list[str] = []
        if outcome.status == "error":
            head = f"failed: {outcome.code}" if outcome.code else "failed"
            lines += self.text_body(outcome.message or "")
        elif outcome.status == "interrupt":
            n = len(outcome.interrupts)
            head = f"suspended: waiting for {n} answer{'s' if n != 1 else ''}"
            for it in outcome.interrupts:
                call = f" [{it.tool_call_id}]" if it.tool_call_id else ""
                lines += wrap(f"{it.message or it.reason}{call}", self.width, "  * ", "    ")
                if it.args is not None and it.args.value not in (None, ""):
                    lines += self.value_body(it.args, "    ")
        else:
            head = "completed" if outcome.status == "success" else outcome.status
            if outcome.result is not None:
                lines += self.labelled("result", outcome.result)
        for line in _tokens(outcome.usage):
            lines += wrap(line, self.width, "  ")
        return "\n".join([_rule(head, self.width, "=")] + lines)
