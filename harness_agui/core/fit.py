# Events that fit a Host's transport.
#
# Real Hosts cap a frame (a13n-harness-ui drops any live frame over 64 KiB),
# while a real Run can carry a 2 MiB prompt or tool result. So every event
# the projection emits is held to ``ProjectionOptions.max_event_bytes`` (64
# KiB by default; None for no limit), counted as the UTF-8 bytes of its
# compact wire JSON (``core.encode.record_json``: what ``agui_to_json`` and
# ``EventEncoder`` write). ``fit(records, item, limit)`` cuts the records of
# one item that are larger, after the processor, in one of three ways:
#
#   - a delta (TEXT_MESSAGE_CONTENT, REASONING_MESSAGE_CONTENT,
#     TOOL_CALL_ARGS, a subagent's too) becomes consecutive deltas of the
#     same message or call, each within the limit: what AG-UI itself allows,
#     so any client shows the whole content;
#   - a CUSTOM event becomes ordered fragments of the same name, each value
#     ``{<the item's correlation>, "fragment": {index, count}, "data"}``
#     with ``data`` a slice of the original value's JSON text;
#   - any other event (a tool result, a run's result, an error message, an
#     encrypted value) is carried whole, its JSON in slices, by fragments of a
#     CUSTOM named ``harness.event``, followed by a stand-in that a client can
#     apply on its own: the same event with its large content left out (a
#     tool result's content and its multimodal parts, a run's or subagent's
#     result, and when still too large a suspended run's interrupts down to
#     their ids, reasons and calls) or cut (an error message), so a call is
#     still answered and a run still finishes; an encrypted value, an event
#     of another kind, or a stand-in that would not fit either, has none.
#
# ``custom.assemble_custom(events)`` joins every run of fragments back into
# the event it was cut from (a ``harness.event`` run replaces the stand-in
# that follows it), byte for byte: reassembled, the events are those of a
# projection without a limit. Cutting depends only on the records and the
# item, so replay cuts alike. The checks first bound an event's size from
# the lengths of its values (6 bytes a character is the most JSON escaping
# takes, plus the fields), and measure exactly only an event that might not
# fit: a token costs a few comparisons.
#
# Each piece repeats the ids of what it is cut from (a delta its message or
# call id, a fragment the item's Thread and Run ids and its CUSTOM name, both
# their subagent Run id), so the room left for content is the limit less
# those. The source model bounds ids and names (``MAX_SOURCE_ID_LENGTH``) and
# the options bound the limit from below (``MIN_EVENT_BYTES``) so that room is
# always some kilobytes; were it ever too small to hold one character,
# ``fit`` raises rather than emit pieces over the limit, one character each.

from __future__ import annotations

import json

from . import _json
from . import records as ev
from .custom import EVENT_FRAGMENT, correlation
from .encode import record_json
from .records import Record
from .source import HarnessStreamEvent

__all__ = ["fit", "fits", "EVENT_FRAGMENT", "delta_chars", "DELTAS"]


_esc = json.encoder.encode_basestring  # type: ignore[attr-defined]  # the string writer of record_json
_FIELDS = 512  # bytes enough for any event's names, fixed fields and ids of ordinary length
DELTAS = frozenset(("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS"))
"""The root Run's delta kinds: a record of one holds two texts, an id and a delta."""


def delta_chars(limit: int | None) -> int:
    """The characters a delta may hold without being measured: a delta no
    longer than this always fits ``limit`` (no limit: any length)."""
    return (limit - _FIELDS) // 6 if limit is not None else 1 << 62


def fits(records: list[Record], limit: int | None) -> bool:
    """Whether every record surely fits ``limit`` by the lengths of its
    values alone (False: some must be measured); None: no limit, True."""
    if limit is None:
        return True
    budget = (limit - _FIELDS) // 6
    for record in records:
        n = 0
        for value in record[2:]:
            if type(value) is str:
                n += len(value)
        if n > budget:
            return False
    return True


def fit(records: list[Record], item: HarnessStreamEvent, limit: int) -> list[Record]:
    """``records`` (one item's, processed) with every event larger than
    ``limit`` bytes cut as this module's comment says; the same list when all
    fit. Raises ValueError when the fields an event's pieces repeat (ids,
    names) leave ``limit`` no room for content: never for an item the source
    model accepts under a limit of at least ``state.MIN_EVENT_BYTES``."""
    if fits(records, limit):
        return records
    out: list[Record] = []
    for record in records:
        if _size(record) <= limit:
            out.append(record)
            continue
        name = ev.event_type(record)
        if name in DELTAS:
            out.extend(_deltas(record, limit))
        elif name == "CUSTOM":
            out.extend(_fragments(record, item, limit, ev.field_of(record, "name"), ev.field_of(record, "value")))
        else:
            stand_in = _stand_in(record, limit)
            out.extend(_fragments(record, item, limit, EVENT_FRAGMENT, record_json(record),
                                  stand_in=stand_in is not None))
            if stand_in is not None:
                out.append(stand_in)
    return out


def _size(record: Record) -> int:
    return len(record_json(record).encode("utf-8", "surrogatepass"))


def _text_size(text: str) -> int:
    """The bytes of ``text`` as a JSON string in the wire JSON, quotes included."""
    return len(_esc(text).encode("utf-8", "surrogatepass"))


_PIECE = 8  # bytes of the shortest JSON string that holds any one character: its quotes and a six-byte escape


def _slices(text: str, budget: int) -> list[str]:
    """``text`` cut into consecutive pieces whose JSON strings each take at
    most ``budget`` bytes. Raises ValueError if ``budget`` cannot hold any
    one character: the fields a piece repeats left no room (a limit below
    MIN_EVENT_BYTES, or ids longer than the source model takes), and pieces
    of one character each would all be too large."""
    if budget < _PIECE:
        raise ValueError(f"no room for content: the fields each piece repeats leave {budget} bytes of the limit")
    out: list[str] = []
    at = 0
    while at < len(text):
        n = min(len(text) - at, budget)
        while True:
            size = _text_size(text[at:at + n])
            if size <= budget or n == 1:
                break
            n = max(1, n * budget // size - 1)
        out.append(text[at:at + n])
        at += n
    return out


def _deltas(record: Record, limit: int) -> list[Record]:
    """A delta record as consecutive deltas within ``limit``."""
    empty = ev.with_content(record, "")
    budget = limit - (_size(empty) - 2)
    return [ev.with_content(record, piece) for piece in _slices(ev.content_of(record), budget)]


def _fragments(record: Record, item: HarnessStreamEvent, limit: int, name: str, text: str, *,
               stand_in: bool | None = None) -> list[Record]:
    """``text`` (a CUSTOM value's JSON, or a whole event's) carried in order
    by CUSTOM fragments named ``name``, each within ``limit``, with the
    record's timestamp and subagent; the fragments of a whole event say
    whether a stand-in follows them (``stand_in``)."""
    ts, subagent = record[1], ev.subagent_of(record)
    source = correlation(item)
    if stand_in is not None:
        source["stand_in"] = stand_in

    def fragment(index: int, count: int, data: str) -> Record:
        value = _json.dumps(dict(source, fragment={"index": index, "count": count}, data=data))
        made = ev.custom(ts, name, value)
        return ev.attributed(made, subagent) if subagent is not None else made

    widest = fragment(10 ** 9, 10 ** 9, "")  # room for any index and count
    pieces = _slices(text, limit - (_size(widest) - 2))
    return [fragment(i, len(pieces), piece) for i, piece in enumerate(pieces)]


def _stand_in(record: Record, limit: int) -> Record | None:
    """What a client applies in the place of an event carried in fragments:
    the event with its large content left out or cut (see the module
    comment); None for a kind without one."""
    name = ev.event_type(record)
    if name == "TOOL_CALL_RESULT":
        metadata = ev.field_of(record, "metadata")
        harness = _json.loads(metadata).get("harness", {}) if metadata is not None else {}
        harness = {k: v for k, v in harness.items() if k != "content"}
        harness["fragmented"] = True
        shown = ev.with_field(ev.with_content(record, ""), "metadata", _json.dumps({"harness": harness}))
    elif name == "RUN_FINISHED":
        shown = ev.with_content(record, None)
        outcome = _json.loads(ev.field_of(shown, "outcome"))
        if _size(shown) > limit and outcome.get("type") == "interrupt":
            # A suspended run's interrupts name what a client answers: each keeps its id, reason and call.
            outcome["interrupts"] = [{k: v for k, v in i.items() if k in ("id", "reason", "toolCallId")}
                                     for i in outcome["interrupts"]]
            shown = ev.with_field(shown, "outcome", _json.dumps(outcome))
    elif name == "SUBAGENT_FINISHED":
        shown = ev.with_content(record, None)
    elif name in ("RUN_ERROR", "SUBAGENT_ERROR"):
        message = ev.content_of(record)
        shown = ev.with_content(record, "")
        budget = limit - _size(shown) - 16
        shown = ev.with_content(record, _slices(message, budget)[0] + "…")
    else:
        return None
    return shown if _size(shown) <= limit else None
