# A Thread's message history, stored once: the stored form of a terminal result whose state carries it.
#
# An a13n-harness Run ends with a result whose ``HarnessState`` holds the
# Thread's whole message history (``state.message_history``), and
# ``RunResult.history`` holds the same messages again (``all_messages()``).
# Stored as its wire line, each turn of a Thread of N messages wrote 2 N
# messages: a 270-byte turn after a 9.7 MB first request added 47 MB. The
# journal stores such a result in a form of its own instead, which it
# expands back into the wire line's object on every read (so what a reader
# gets is the item that was appended, ``decode(encode(x)) == x`` as before):
#
#   {"$history": {"count": N, "digest": D},  <- first: read from a prefix
#    "v": 2, "kind": "result", ...,
#    "result": {..., "state": {..., "message_history":
#                                 {"base": {"run_id": B, "count": K}, "tail": [messages K..N-1]}},
#               "history": {"messages": "$state", "new_message_index": I}}}
#
# ``base`` names the terminal result of an earlier root Run of the same
# Thread whose history is the first K messages of this one (null: the
# tail is the whole history); ``"$state"`` says that the result's
# ``history.messages`` are the state's messages (else they are stored as
# they are). ``count`` is N and ``digest`` the SHA-256 of the N messages'
# compact JSON texts, each followed by a newline (compact JSON holds none):
# when a result is stored, the earlier results of its Thread are looked up
# by their header alone, and the one with the longest history whose
# (count, digest) is that of this history's first K messages becomes the
# base. Equal texts are equal values, types and key order included, so the
# expanded history is exactly the appended one. A turn then stores what it
# added, whatever the length of the Thread; reading a result follows the
# chain of bases back to a result stored whole (one row per earlier turn).
#
# A line that does not start with ``{"$history":`` is a wire line, read as
# it always was (every line of an older journal is one).
#
# The base is in the same journal: a Run whose result is the base of a
# later one cannot be pruned on its own (prune a Thread from its newest Run
# back, or whole); a reader that meets a missing base raises
# ``DamagedStoreError``.

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ..core import _json
from ..core.source import HarnessRunResultEvent, HarnessStreamEvent
from ..wire.codec import to_json

__all__ = ["MARK", "HEAD_CHARS", "HistoryHead", "stored_form", "read_head", "expand"]

MARK = '{"$history":'
"""How a stored line in the shared form starts."""

HEAD_CHARS = 160
"""How many characters of a stored line hold its header (``{"$history":{"count":N,"digest":"<64 hex>"}``)."""

_STATE = "$state"


@attrs.frozen
class HistoryHead:
    """A stored result's history, as its header says: the root Run it ends, how many messages, their digest."""

    run_id: str
    count: int
    digest: str


def _messages(item: HarnessStreamEvent) -> list[Any] | None:
    # The state's message history of a result item, when it has one to share.
    if type(item) is not HarnessRunResultEvent:
        return None
    state = item.result.state
    if not isinstance(state, dict):
        return None
    messages = state.get("message_history")
    return messages if isinstance(messages, list) else None


def stored_form(item: HarnessStreamEvent, bases: Iterable[HistoryHead]) -> str | None:
    """The stored line of ``item`` in the shared form, its history based on the longest of ``bases`` (the
    stored results of its Thread) that it continues; None for an item whose state holds no message history
    (it is stored as its wire line)."""
    messages = _messages(item)
    if messages is None:
        return None
    texts = [_json.dumps(m) for m in messages]
    wanted: dict[int, HistoryHead] = {}
    for head in bases:
        if head.run_id != item.run_id and 0 < head.count <= len(texts):
            best = wanted.get(head.count)
            if best is None or head.run_id < best.run_id:  # one choice for equal counts, whatever the order
                wanted[head.count] = head
    digest = hashlib.sha256()
    base: HistoryHead | None = None
    for count, text in enumerate(texts, 1):
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
        candidate = wanted.get(count)
        if candidate is not None and candidate.digest == digest.hexdigest():
            base = candidate
    data = to_json(item)
    result = dict(data["result"])
    state = dict(result["state"])
    kept = 0 if base is None else base.count
    state["message_history"] = {"base": None if base is None else {"run_id": base.run_id, "count": base.count},
                                "tail": messages[kept:]}
    result["state"] = state
    history = result.get("history")
    if isinstance(history, dict) and isinstance(history.get("messages"), list) \
            and len(history["messages"]) == len(texts) \
            and all(_json.dumps(m) == t for m, t in zip(history["messages"], texts, strict=True)):
        result["history"] = {**history, "messages": _STATE}
    data["result"] = result
    return _json.dumps({"$history": {"count": len(texts), "digest": digest.hexdigest()}, **data})


def read_head(prefix: str) -> tuple[int, str] | None:
    """(count, digest) from the first characters of a stored line in the shared form, None for a wire line
    or a header that cannot be read (such a result is never a base)."""
    if not prefix.startswith(MARK):
        return None
    try:
        head, _ = json.JSONDecoder().raw_decode(prefix, len(MARK))
    except ValueError:
        return None
    count, digest = (head.get("count"), head.get("digest")) if isinstance(head, dict) else (None, None)
    if type(count) is not int or count < 0 or not isinstance(digest, str):
        return None
    return count, digest


class _SharedHistoryError(ValueError):
    """A stored line in the shared form that does not fit together with its bases (``reason``)."""


def expand(line: str, read_base: Callable[[str], str]) -> dict[str, Any]:
    """The wire JSON object of a stored line in the shared form; ``read_base(run_id)`` gives the stored line
    of the terminal result of root Run ``run_id`` (and raises if there is none). Raises _SharedHistoryError
    for a line, or a chain of bases, that does not fit together, ValueError for JSON it cannot parse."""
    data = _json.loads(line)
    chain: list[tuple[list[Any], int]] = []
    seen: set[str] = set()
    current = data
    while True:
        count = _count(current)
        shared = _shared(current)
        tail, base = shared.get("tail"), shared.get("base")
        if type(count) is not int or not isinstance(tail, list):
            raise _SharedHistoryError("a stored result's shared history is malformed")
        chain.append((tail, count))
        if base is None:
            break
        run_id, kept = base.get("run_id"), base.get("count")
        if not isinstance(run_id, str) or type(kept) is not int or run_id in seen:
            raise _SharedHistoryError(f"a stored result's history names a malformed or circular base ({run_id!r:.80})")
        seen.add(run_id)
        stored = read_base(run_id)
        if not stored.startswith(MARK):
            raise _SharedHistoryError(f"the history's base, the result of run {run_id!r:.80}, is not stored shared")
        current = _json.loads(stored)
        if _count(current) != kept:
            raise _SharedHistoryError(f"the history's base, the result of run {run_id!r:.80}, holds "
                                     f"{_count(current)!r} messages, not {kept}")
    messages: list[Any] = []
    for tail, count in reversed(chain):
        messages.extend(tail)
        if len(messages) != count:
            raise _SharedHistoryError(f"a stored result's history holds {len(messages)} messages, its header says "
                                     f"{count}")
    del data["$history"]
    result = data["result"]
    result["state"]["message_history"] = messages
    history = result.get("history")
    if isinstance(history, dict) and history.get("messages") == _STATE:
        history["messages"] = list(messages)
    return data  # type: ignore[no-any-return]


def _count(data: Any) -> Any:
    head = data.get("$history") if isinstance(data, dict) else None
    return head.get("count") if isinstance(head, dict) else None


def _shared(data: Any) -> dict[str, Any]:
    try:
        shared = data["result"]["state"]["message_history"]
    except (KeyError, TypeError):
        shared = None
    if not isinstance(shared, dict):
        raise _SharedHistoryError("a stored result in the shared form holds no shared history")
    return shared
