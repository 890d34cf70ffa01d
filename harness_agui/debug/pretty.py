# A conversation view of an AG-UI projection, for people reading a terminal.
#
# The renderer walks the events once and turns them into blocks: the user's
# input (from the harness.input.* CUSTOM events), each reasoning and
# assistant message, each tool call with its args, each tool result, one-line
# notes for lifecycle, extension and observation events, and the run's
# outcome. Streamed messages are buffered by message id until their END
# event, so blocks come out in the order messages finish, and a block is
# yielded as soon as it is complete: ``iter_conversation`` can follow a live
# replay. Whatever is still open when the events run out is shown marked
# "(unfinished)".
#
# Output is plain text whose lines fit ``width`` terminal columns: wide East
# Asian characters count as two, combining marks as none. Text from the run is
# never trusted with the terminal: control characters and bidirectional
# overrides are shown as escapes, tabs as spaces. Long JSON values (tool args,
# results, other payloads) are cut after ``max_value_lines`` lines;
# conversation text never is.

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

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

from ..core.custom import assemble_custom, is_fragment

__all__ = ["render_conversation", "iter_conversation", "display_width", "WIDTH"]

WIDTH = 100
"""The default width of the view, in terminal columns."""

_MIN_WIDTH = 20


def render_conversation(events: Iterable[BaseEvent], *, width: int = WIDTH,
                        max_value_lines: int | None = 40) -> str:
    """The whole conversation of a projection as plain text.

    ``events`` are AG-UI events as the observer returns them (a snapshot, a
    list, any iterable). The text ends with a newline and no line is wider
    than ``width`` columns. Raises ValueError for a ``width`` below 20 or a
    ``max_value_lines`` below 1; events it does not recognise get a one-line
    note, never an error.
    """
    return "".join(block + "\n\n" for block in iter_conversation(events, width=width,
                                                                  max_value_lines=max_value_lines)).rstrip("\n") + "\n"


def iter_conversation(events: Iterable[BaseEvent], *, width: int = WIDTH,
                      max_value_lines: int | None = 40) -> Iterator[str]:
    """Yield the blocks of the conversation view (each one or more lines,
    without a trailing newline) as soon as each is complete. Raises as
    ``render_conversation`` does."""
    if not isinstance(width, int) or width < _MIN_WIDTH:
        raise ValueError(f"width must be an int of at least {_MIN_WIDTH}, got {width!r}")
    if max_value_lines is not None and (not isinstance(max_value_lines, int) or max_value_lines < 1):
        raise ValueError(f"max_value_lines must be a positive int or None, got {max_value_lines!r}")
    renderer = _Renderer(width, max_value_lines)
    for event in events:
        yield from renderer.feed(event)
    yield from renderer.close()


# -- text that fits -----------------------------------------------------------------

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _clean(text: str) -> str:
    """Text safe to print: newlines kept, tabs as spaces, controls escaped."""
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    return _UNSAFE.sub(lambda m: _escape(m.group()), text)


def _escape(ch: str) -> str:
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """The number of terminal columns ``text`` (one line) takes: wide East
    Asian characters count two, combining and format characters none."""
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


_TOKENS = re.compile(r"\s+|\S+")


def _wrap(text: str, width: int, indent: str = "", rest: str | None = None) -> list[str]:
    """Wrap cleaned ``text`` so every line, with its indent, fits ``width``.
    Line breaks in the text are kept; words longer than a line are split."""
    rest = indent if rest is None else rest
    out: list[str] = []
    for paragraph in text.split("\n"):
        prefix = indent if not out else rest
        line, used = "", 0
        avail = max(1, width - display_width(prefix))
        for token in _TOKENS.findall(paragraph):
            w = display_width(token)
            if used + w <= avail:
                line, used = line + token, used + w
                continue
            if token.isspace():
                out.append(prefix + line.rstrip())
                prefix, line, used = rest, "", 0
                avail = max(1, width - display_width(prefix))
                continue
            if line.strip():
                out.append(prefix + line.rstrip())
                prefix, line, used = rest, "", 0
                avail = max(1, width - display_width(prefix))
            for ch in token:
                cw = _char_width(ch)
                if used + cw > avail and line:
                    out.append(prefix + line)
                    prefix, line, used = rest, "", 0
                    avail = max(1, width - display_width(prefix))
                line, used = line + ch, used + cw
        out.append(prefix + line.rstrip())
    return out


def _clip(text: str, width: int) -> str:
    """One line of at most ``width`` columns, cut with '...' when longer."""
    text = _clean(text).replace("\n", " ")
    if display_width(text) <= width:
        return text
    out, used = "", 0
    for ch in text:
        w = _char_width(ch)
        if used + w > width - 3:
            break
        out, used = out + ch, used + w
    return out + "..."


def _rule(title: str, width: int, fill: str) -> str:
    head = f"{fill * 2} {_clip(title, width - 4)} "
    return head + fill * max(0, width - display_width(head))


def _json_text(value: Any, width: int) -> str:
    """A JSON value for reading: on one line when it fits, else indented."""
    one = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if display_width(one) <= width or not isinstance(value, (dict, list)):
        return one
    return json.dumps(value, ensure_ascii=False, indent=2)


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _parse_json(text: str) -> Any:
    """The object or array ``text`` holds, else None."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _time(event: BaseEvent) -> str:
    ts = event.timestamp
    if not isinstance(ts, int):
        return ""
    try:
        at = datetime.fromtimestamp(ts / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return at.strftime("%H:%M:%S.") + f"{at.microsecond // 1000:03d}  "


# -- the renderer ----------------------------------------------------------------------

class _Message:
    __slots__ = ("label", "time", "chunks", "signed", "name")

    def __init__(self, label: str, time: str, name: str = "") -> None:
        self.label = label
        self.time = time
        self.chunks: list[str] = []
        self.signed = False
        self.name = name


_LABELS = {"text": "assistant", "reasoning": "reasoning", "tool": "tool call"}


class _Renderer:
    def __init__(self, width: int, max_value_lines: int | None) -> None:
        self.width = width
        self.max_lines = max_value_lines
        self.open: dict[tuple[str, str], _Message] = {}
        self.tool_names: dict[str, str] = {}
        self.inputs: list[CustomEvent] = []
        self.fragments: list[CustomEvent] = []
        self.started = False
        self.finished = False
        self.seen_any = False

    # blocks ----------------------------------------------------------------------

    def block(self, header: str, body: list[str]) -> str:
        lines = _wrap(_clean(header), self.width, "", "    ")
        return "\n".join(lines + body)

    def text_body(self, text: str) -> list[str]:
        if not text:
            return ["  (empty)"]
        return _wrap(_clean(text), self.width, "  ")

    def value_lines(self, value: Any, indent: str) -> list[str]:
        room = self.width - display_width(indent)
        if isinstance(value, str):
            parsed = _parse_json(value)
            text = value if parsed is None else _json_text(parsed, room)
        else:
            text = _json_text(value, room)
        return _wrap(_clean(text), self.width, indent)

    def value_body(self, value: Any, indent: str = "  ") -> list[str]:
        """A JSON value (or text holding one) for reading, cut after the
        configured number of lines."""
        lines = self.value_lines(value, indent)
        if self.max_lines is not None and len(lines) > self.max_lines:
            hidden = len(lines) - (self.max_lines - 1)
            lines = lines[: self.max_lines - 1] + [_clip(f"{indent}... {hidden} more lines", self.width)]
        return lines

    def labelled(self, label: str, value: Any) -> list[str]:
        """``  label: value`` on one line when it fits, else the value below."""
        inline = self.value_lines(value, f"  {label}: ")
        if len(inline) == 1:
            return inline
        return [f"  {label}:"] + self.value_body(value, "    ")

    def note(self, text: str) -> str:
        return "- " + _clip(text, self.width - 2)

    # events ----------------------------------------------------------------------

    def feed(self, event: BaseEvent) -> list[str]:
        self.seen_any = True
        if is_fragment(event):
            assert isinstance(event, CustomEvent)
            self.fragments.append(event)
            if len(self.fragments) < event.value["fragment"]["count"]:
                return []
            pending, self.fragments = self.fragments, []
            try:
                (event,) = assemble_custom(pending)
            except ValueError as e:
                return [self.note(f"{pending[0].name}: fragments that do not join ({e})")]
        out = self.flush_inputs(event)
        out.extend(self.dispatch(event))
        return out

    def flush_inputs(self, event: BaseEvent | None) -> list[str]:
        """Input chunks arrive as consecutive CUSTOM events; anything else, or
        the first chunk of another input, ends the pending input."""
        if not self.inputs:
            return []
        if isinstance(event, CustomEvent) and _is_input(event) and _input_key(event) == _input_key(self.inputs[0]):
            return []
        chunks, self.inputs = self.inputs, []
        return [self.input_block(chunks, complete=False)]

    def dispatch(self, event: BaseEvent) -> list[str]:
        t = _time(event)
        match event:
            case RunStartedEvent():
                self.started = True
                return [_rule(f"run {event.run_id} (thread {event.thread_id}), times in UTC", self.width, "=")]
            case TextMessageStartEvent():
                self.open[("text", event.message_id)] = _Message(event.role or "assistant", t)
            case TextMessageContentEvent():
                self.message("text", event.message_id, t).chunks.append(event.delta)
            case TextMessageEndEvent():
                return [self.message_block(self.take("text", event.message_id, t))]
            case ReasoningMessageStartEvent():
                self.open[("reasoning", event.message_id)] = _Message("reasoning", t)
            case ReasoningMessageContentEvent():
                self.message("reasoning", event.message_id, t).chunks.append(event.delta)
            case ReasoningEncryptedValueEvent():
                signed = self.open.get(("reasoning", event.entity_id))
                if signed is None:
                    return [self.note(f"encrypted {event.subtype} value for {event.entity_id}")]
                signed.signed = True
            case ReasoningMessageEndEvent():
                return [self.message_block(self.take("reasoning", event.message_id, t))]
            case ToolCallStartEvent():
                self.tool_names[event.tool_call_id] = event.tool_call_name
                self.open[("tool", event.tool_call_id)] = _Message("tool call", t, event.tool_call_name)
            case ToolCallArgsEvent():
                self.message("tool", event.tool_call_id, t).chunks.append(event.delta)
            case ToolCallEndEvent():
                return [self.call_block(event.tool_call_id, self.take("tool", event.tool_call_id, t))]
            case ToolCallResultEvent():
                harness = (event.metadata or {}).get("harness") or {}
                name = harness.get("tool_name") or self.tool_names.get(event.tool_call_id, "")
                return [self.result_block(t, event.tool_call_id, name, harness.get("outcome"), event.content, "")]
            case CustomEvent():
                return self.custom(event, t)
            case RunFinishedEvent():
                return self.closing() + [self.finished_block(event)]
            case RunErrorEvent():
                head = f"failed: {event.code}" if event.code else "failed"
                return self.closing() + [_rule(head, self.width, "=") + "\n" + "\n".join(self.text_body(event.message))]
            case _:
                return [self.note(f"{event.type.value} event")]
        return []

    def message(self, kind: str, message_id: str, t: str) -> _Message:
        """The open message; content for one never started opens it."""
        msg = self.open.get((kind, message_id))
        if msg is None:
            msg = self.open[(kind, message_id)] = _Message(_LABELS[kind], t)
        return msg

    def take(self, kind: str, message_id: str, t: str) -> _Message:
        """The open message, closed; an end without a start gives an empty one."""
        msg = self.open.pop((kind, message_id), None)
        return _Message(_LABELS[kind], t) if msg is None else msg

    def message_block(self, msg: _Message, unfinished: bool = False) -> str:
        label = msg.label + (" (signed)" if msg.signed else "") + (" (unfinished)" if unfinished else "")
        return self.block(msg.time + label, self.text_body("".join(msg.chunks)))

    def call_block(self, call_id: str, msg: _Message, unfinished: bool = False) -> str:
        args = "".join(msg.chunks)
        body = self.value_body(args) if args else ["  (no arguments)"]
        tag = " (unfinished)" if unfinished else ""
        return self.block(f"{msg.time}tool call {msg.name} [{call_id}]{tag}", body)

    def result_block(self, t: str, call_id: str, name: str, outcome: Any, content: Any, note: str) -> str:
        outcome_text = f": {outcome}" if isinstance(outcome, str) else ""
        body = self.value_body(content) if content not in ("", None) else ["  (empty)"]
        return self.block(f"{t}tool result {name} [{call_id}]{outcome_text}{note}", body)

    def custom(self, event: CustomEvent, t: str) -> list[str]:
        name, value = event.name, event.value
        payload = value.get("payload") if isinstance(value, dict) else None
        if _is_input(event):
            self.inputs.append(event)
            chunk = value.get("chunk") if isinstance(value, dict) else None
            if isinstance(chunk, dict) and chunk.get("index", 0) + 1 < chunk.get("count", 1):
                return []
            chunks, self.inputs = self.inputs, []
            return [self.input_block(chunks, complete=True)]
        if not isinstance(payload, dict):
            return [self.note(f"{name}: {_compact(value)}")]
        if name == "harness.extension.lifecycle" and isinstance(payload.get("payload"), dict):
            body = payload["payload"]
            if body.get("type") == "model_request_started":
                return [_rule(f"model request {body.get('request_index')}", self.width, "-")]
        if name.startswith("harness.extension."):
            kind = name[len("harness.extension."):]
            return [self.note(f"{kind} (schema {payload.get('schema_version')}): {_compact(payload.get('payload'))}")]
        if name == "harness.observation":
            return [self.note(f"observation {payload.get('name')}: {_compact(payload.get('value'))}")]
        if name == "harness.tool_result":
            return [self.result_block(t, str(payload.get("tool_call_id")), str(payload.get("tool_name")),
                                      payload.get("outcome"), payload.get("content"),
                                      " (no call for it in this run)")]
        return [self.note(f"{name}: {_compact(value)}")]

    def input_block(self, chunks: list[CustomEvent], complete: bool) -> str:
        first = chunks[0]
        source = first.name[len("harness.input."):]
        label = "user" if source == "user" else f"input ({source})"
        if not complete:
            label += " (incomplete)"
        payloads = [c.value.get("payload") or {} for c in chunks]
        content = payloads[0].get("content")
        if isinstance(content, str):
            body = self.text_body("".join(str(p.get("content", "")) for p in payloads))
        else:
            body = self.labelled("media", content)
        metadata = payloads[0].get("metadata")
        if metadata:
            body += self.labelled("metadata", metadata)
        return self.block(_time(first) + label, body)

    def closing(self) -> list[str]:
        """Blocks for whatever is still open, before the run's outcome."""
        self.finished = True
        out = self.flush_inputs(None)
        for (kind, key), msg in list(self.open.items()):
            out.append(self.call_block(key, msg, True) if kind == "tool" else self.message_block(msg, True))
        self.open.clear()
        return out

    def finished_block(self, event: RunFinishedEvent) -> str:
        outcome = event.outcome
        kind = getattr(outcome, "type", "success")
        lines: list[str] = []
        if kind == "interrupt":
            interrupts = list(getattr(outcome, "interrupts", []) or [])
            head = f"suspended: waiting for {len(interrupts)} answer{'s' if len(interrupts) != 1 else ''}"
            for it in interrupts:
                what = it.message or it.reason
                call = f" [{it.tool_call_id}]" if it.tool_call_id else ""
                lines += _wrap(_clean(f"{what}{call}"), self.width, "  * ", "    ")
                args = ((it.metadata or {}).get("harness") or {}).get("args")
                if args not in (None, ""):
                    lines += self.value_body(args, "    ")
        else:
            head = "completed" if kind == "success" else str(kind)
            if event.result is not None:
                lines += self.labelled("result", event.result)
        for usage in event.usage or []:
            parts = [(usage.input_tokens, "in"), (usage.output_tokens, "out"), (usage.reasoning_tokens, "reasoning"),
                     (usage.cached_input_tokens, "cached")]
            text = ", ".join(f"{n} {label}" for n, label in parts if n is not None)
            if text:
                lines += _wrap(f"tokens: {text}", self.width, "  ")
        return "\n".join([_rule(head, self.width, "=")] + lines)

    def close(self) -> list[str]:
        out: list[str] = []
        if self.fragments:
            out.append(self.note(f"{self.fragments[0].name}: incomplete fragments at the end"))
        if not self.finished:
            out.extend(self.closing())
            if self.started:
                out.append(_rule("run not finished (no outcome yet)", self.width, "="))
        if not self.seen_any:
            out.append("(no events)")
        return out


def _is_input(event: CustomEvent) -> bool:
    return event.name.startswith("harness.input.") and isinstance(event.value, dict) \
        and isinstance(event.value.get("payload"), dict)


def _input_key(event: CustomEvent) -> Any:
    value = event.value
    return (event.name, value.get("run_id"), value.get("sequence"))
