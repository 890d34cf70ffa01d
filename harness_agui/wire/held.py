# What a client already holds, taken out of the SSE frames sent to it.
#
# A client that POSTs a Run sends its whole message list, and a stock AG-UI
# client (``@ag-ui/client``) applies each event to that list: TEXT_MESSAGE_START
# (and REASONING_MESSAGE_START, TOOL_CALL_START) of an id it holds reuses the
# message, but every CONTENT or ARGS delta is appended to it and every
# TOOL_CALL_RESULT adds a tool message. So a stream that starts from the
# Run's first event must not repeat what the request shows the client holds:
#
#   - the user messages it sent, which the projection publishes under the
#     client's own ids so that other viewers see them;
#   - on a retried POST of the same run id (a connection that dropped
#     mid-answer), the part of each message, reasoning message and tool call's
#     arguments that it received before the drop, and the tool results.
#
# ``HeldByClient(messages)`` is told the request's messages; called with a
# chunk of frames it returns the chunk less those deltas: the first N
# characters of the deltas of a message (or call) whose held text is N
# characters long are dropped (a delta across that boundary keeps its tail,
# under the same SSE id), and a TOOL_CALL_RESULT whose message id the client
# holds is dropped. Starts and ends pass, so each message is opened and
# closed as the AG-UI verifier wants. A chunk with none of these event types
# is returned as it is, without a parse.

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["HeldByClient"]

_TRIMMED = re.compile(rb'"type":"(TEXT_MESSAGE_CONTENT|REASONING_MESSAGE_CONTENT|TOOL_CALL_ARGS|TOOL_CALL_RESULT)"')
_MESSAGE_ID = re.compile(rb'"messageId":"((?:[^"\\]|\\.)*)"')
_CALL_ID = re.compile(rb'"toolCallId":"((?:[^"\\]|\\.)*)"')
_KINDS = frozenset(("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TOOL_CALL_RESULT"))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a user message's parts: its text parts make its text
        return "".join(getattr(part, "text", "") or "" for part in content if getattr(part, "type", None) == "text")
    return ""


class HeldByClient:
    """The messages a request shows its client holds, as a filter of the frames sent back to it (see the
    module comment). ``messages`` are the request's ``RunAgentInput.messages``."""

    def __init__(self, messages: Iterable[Any]) -> None:
        self._chars: dict[str, int] = {}  # message or call id -> characters held, not yet matched by deltas
        self._results: set[str] = set()
        for message in messages:
            if message.role == "tool":
                self._results.add(message.id)
                continue
            held = len(_text(getattr(message, "content", None)))
            if held:
                self._chars[message.id] = held
            for call in getattr(message, "tool_calls", None) or ():
                if call.function.arguments:
                    self._chars[call.id] = len(call.function.arguments)

    @property
    def active(self) -> bool:
        """Whether a frame may still be changed."""
        return bool(self._chars or self._results)

    def __call__(self, chunk: bytes) -> bytes:
        """``chunk`` (whole SSE frames) less what the client holds."""
        if not self.active or _TRIMMED.search(chunk) is None:
            return chunk
        frames = chunk.split(b"\n\n")
        kept = [frame for frame in map(self._frame, frames[:-1]) if frame is not None]
        return b"".join(frame + b"\n\n" for frame in kept) + frames[-1]

    def event(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """One event (its JSON object) less what the client holds: the event itself, a copy with the tail
        of its delta, or None when the client holds all of it (for a Host that sends events as objects)."""
        kind = event.get("type")
        if kind not in _KINDS:
            return event
        key = event.get("toolCallId" if kind == "TOOL_CALL_ARGS" else "messageId")
        if not isinstance(key, str):
            return event
        keep = self._kept(kind == "TOOL_CALL_RESULT", key, event.get("delta"))
        if keep is None or keep is True:
            return None if keep is None else event
        return {**event, "delta": keep}

    def _kept(self, result: bool, key: str, delta: Any) -> str | bool | None:
        # True: send the event as it is; None: drop it; a str: send it with this delta.
        if result:
            if key not in self._results:
                return True
            self._results.discard(key)
            return None
        held = self._chars.get(key)
        if held is None:
            return True
        size = len(delta) if isinstance(delta, str) else 0
        if size <= held:
            if size == held:
                del self._chars[key]
            else:
                self._chars[key] = held - size
            return None
        del self._chars[key]
        return delta[held:]  # type: ignore[no-any-return, index]

    def _frame(self, frame: bytes) -> bytes | None:
        typed = _TRIMMED.search(frame)
        if typed is None:
            return frame
        kind = typed.group(1)
        named = (_CALL_ID if kind == b"TOOL_CALL_ARGS" else _MESSAGE_ID).search(frame)
        if named is None:
            return frame
        raw = named.group(1)
        key = json.loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode("utf-8", "surrogatepass")
        if kind != b"TOOL_CALL_RESULT" and key not in self._chars:
            return frame  # the common case, a delta of a message the client does not hold: no parse
        lines = frame.split(b"\n")
        at = next(i for i, line in enumerate(lines) if line.startswith(b"data: "))
        event = json.loads(lines[at][6:])
        keep = self._kept(kind == b"TOOL_CALL_RESULT", key, event.get("delta"))
        if keep is None or keep is True:
            return None if keep is None else frame
        event["delta"] = keep
        lines[at] = b"data: " + json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass")
        return b"\n".join(lines)
