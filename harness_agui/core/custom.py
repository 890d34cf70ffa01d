# CUSTOM events that the projection emits, and their reassembly.
#
# Every CUSTOM value is an object with the source correlation (thread_id,
# run_id, sequence, occurred_at). An ordinary one adds "payload" (the source
# payload's wire JSON) and, for input text, "chunk" {index, count}. An event
# too large for the Host's transport (``ProjectionOptions.max_event_bytes``)
# is sent as several CUSTOM events, each with "fragment" {index, count} and
# "data", a slice of JSON text: of the original value, under the CUSTOM's own
# name, or of a whole event of another kind, under ``harness.event``
# (``core.fit`` cuts them). ``custom_records`` makes the reducer's CUSTOM
# records and ``assemble_custom`` joins fragments, so both halves of the
# format live in these two modules.

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ag_ui.core import BaseEvent, CustomEvent

from . import _json
from . import records as ev
from .records import Record

__all__ = ["assemble_custom", "join_fragments", "is_fragment", "custom_records", "correlation", "CUSTOM_MAX_CHARS",
           "CUSTOM_FRAGMENT_CHARS", "EVENT_FRAGMENT"]

EVENT_FRAGMENT = "harness.event"
"""The name of the CUSTOM fragments that carry an event of a kind AG-UI cannot cut (see ``core.fit``)."""

CUSTOM_MAX_CHARS = 65536
"""Deprecated: CUSTOM events are cut by ``ProjectionOptions.max_event_bytes`` (the event's whole JSON, in
bytes), whose default has this value."""

CUSTOM_FRAGMENT_CHARS = 30000
"""Deprecated: fragments are as large as ``max_event_bytes`` allows."""


def correlation(item: Any) -> dict[str, Any]:
    """The source correlation of ``item`` (a source item, or any object with its four fields: an a13n-harness
    item) as a CUSTOM value carries it: its Thread and Run ids, sequence and ISO 8601 time."""
    return {"thread_id": item.thread_id, "run_id": item.run_id, "sequence": item.sequence,
            "occurred_at": item.occurred_at.isoformat()}


def custom_records(ts: int, name: str, value: dict[str, Any], correlation: dict[str, Any]) -> list[Record]:
    """The record of one CUSTOM event ``name`` carrying ``value`` (the item's
    ``correlation`` is in it). One that is too large for the Host's transport
    is cut into fragments after the processor (``core.fit``)."""
    return [ev.custom(ts, name, _json.dumps(value))]


def is_fragment(event: Any) -> bool:
    """Whether ``event`` is one fragment of an oversized harness CUSTOM event."""
    return (
        isinstance(event, CustomEvent)
        and event.name.startswith("harness.")
        and isinstance(event.value, dict)
        and isinstance(event.value.get("fragment"), dict)
        and isinstance(event.value.get("data"), str)
    )


def assemble_custom(events: Iterable[BaseEvent]) -> Iterator[BaseEvent]:
    """Yield ``events`` with every run of fragments joined back into the
    event it was cut from (see ``core.fit``): a CUSTOM event's fragments into
    that CUSTOM event (same name, timestamp, value and subagent), the
    fragments of ``harness.event`` into the event they carry, in the place of
    the stand-in that follows them. Reassembled, the events are those of a
    projection without a size limit.

    Raises ValueError for fragments that are out of order, incomplete,
    interleaved with another event, or missing the stand-in they announce.
    """
    pending: list[CustomEvent] = []
    restored: BaseEvent | None = None  # an event whose stand-in comes next
    for event in events:
        if restored is not None:
            if event.type != restored.type:
                raise ValueError(f"a {restored.type.value} carried in {EVENT_FRAGMENT} fragments is not followed by "
                                 f"its stand-in but by a {event.type.value} event")
            yield restored
            restored = None
            continue
        if is_fragment(event):
            assert isinstance(event, CustomEvent)
            pending.append(event)
            count = event.value["fragment"]["count"]
            if len(pending) == count:
                joined = join_fragments(pending)
                pending = []
                if joined.name != EVENT_FRAGMENT:
                    yield joined
                    continue
                whole = _event(joined.value)
                if event.value.get("stand_in"):
                    restored = whole
                else:
                    yield whole
            continue
        if pending:
            raise ValueError(f"incomplete fragments of CUSTOM {pending[0].name!r} before a {event.type.value} event")
        yield event
    if pending:
        raise ValueError(f"incomplete fragments of CUSTOM {pending[0].name!r} at the end of the events")
    if restored is not None:
        raise ValueError(f"a {restored.type.value} carried in {EVENT_FRAGMENT} fragments has no stand-in after them")


def _event(value: Any) -> BaseEvent:
    """The AG-UI event whose wire JSON (as a dict) ``value`` is."""
    kind = ev.KINDS.get(str(value.get("type"))) if isinstance(value, dict) else None
    if kind is None:
        raise ValueError(f"{EVENT_FRAGMENT} fragments that carry no event of a known type")
    return kind.cls.model_validate(value)


def join_fragments(fragments: list[CustomEvent]) -> CustomEvent:
    """The CUSTOM event one whole run of fragments was cut from, as it is:
    for ``harness.event`` fragments, that CUSTOM with the carried event's
    wire JSON as its value (``assemble_custom`` makes the event of it).
    Raises ValueError for fragments out of order, from two items, or whose
    data is not JSON."""
    first = fragments[0]
    key = {k: first.value.get(k) for k in ("run_id", "sequence")}
    for i, f in enumerate(fragments):
        meta = f.value["fragment"]
        if f.name != first.name or meta.get("index") != i or {k: f.value.get(k) for k in key} != key:
            raise ValueError(f"CUSTOM fragment {i} of {first.name!r} is out of order or from another item")
    value = _json.loads("".join(f.value["data"] for f in fragments))
    return CustomEvent(name=first.name, value=value, timestamp=first.timestamp,
                       subagent_run_id=first.subagent_run_id)
