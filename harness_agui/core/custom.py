# CUSTOM events that the projection emits, and their reassembly.
#
# Every CUSTOM value is an object with the source correlation (thread_id,
# run_id, sequence, occurred_at). An ordinary one adds "payload" (the source
# payload's wire JSON) and, for input text, "chunk" {index, count}. A value
# whose compact JSON would exceed CUSTOM_MAX_CHARS is instead sent as several
# events of the same name, each with "fragment" {index, count} and "data", a
# slice of the original value's JSON text. ``custom_records`` cuts them (the
# reducer's only way to emit a CUSTOM event) and ``assemble_custom`` joins
# them, so both halves of the format live here.

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ag_ui.core import BaseEvent, CustomEvent

from . import _json
from . import records as ev
from .records import Record

__all__ = ["assemble_custom", "is_fragment", "custom_records", "CUSTOM_MAX_CHARS", "CUSTOM_FRAGMENT_CHARS"]

CUSTOM_MAX_CHARS = 65536
"""A CUSTOM value whose compact JSON is longer than this is sent in fragments."""

CUSTOM_FRAGMENT_CHARS = 30000
"""Characters of the original value's JSON text carried by one fragment."""


def custom_records(ts: int, name: str, value: dict[str, Any], correlation: dict[str, Any]) -> list[Record]:
    """The records of one CUSTOM event ``name`` carrying ``value``: one record,
    or fragments of at most CUSTOM_FRAGMENT_CHARS of its JSON text, each with
    ``correlation`` (the source item's) so a reader can tell whose they are."""
    text = _json.dumps(value)
    if len(text) <= CUSTOM_MAX_CHARS:
        return [ev.custom(ts, name, text)]
    pieces = [text[i:i + CUSTOM_FRAGMENT_CHARS] for i in range(0, len(text), CUSTOM_FRAGMENT_CHARS)]
    out = []
    for i, piece in enumerate(pieces):
        fragment = dict(correlation, fragment={"index": i, "count": len(pieces)}, data=piece)
        out.append(ev.custom(ts, name, _json.dumps(fragment)))
    return out


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
    """Yield ``events`` with every run of CUSTOM fragments joined back into
    the one CUSTOM event they were cut from (same name, timestamp and value).

    Raises ValueError for fragments that are out of order, incomplete, or
    interleaved with another event. A subagent's fragments join into its
    CUSTOM event (same ``subagent_run_id``).
    """
    pending: list[CustomEvent] = []
    for event in events:
        if is_fragment(event):
            assert isinstance(event, CustomEvent)
            pending.append(event)
            count = event.value["fragment"]["count"]
            if len(pending) == count:
                yield _join(pending)
                pending = []
            continue
        if pending:
            raise ValueError(f"incomplete fragments of CUSTOM {pending[0].name!r} before a {event.type.value} event")
        yield event
    if pending:
        raise ValueError(f"incomplete fragments of CUSTOM {pending[0].name!r} at the end of the events")


def _join(fragments: list[CustomEvent]) -> CustomEvent:
    first = fragments[0]
    key = {k: first.value.get(k) for k in ("run_id", "sequence")}
    for i, f in enumerate(fragments):
        meta = f.value["fragment"]
        if f.name != first.name or meta.get("index") != i or {k: f.value.get(k) for k in key} != key:
            raise ValueError(f"CUSTOM fragment {i} of {first.name!r} is out of order or from another item")
    value = _json.loads("".join(f.value["data"] for f in fragments))
    return CustomEvent(name=first.name, value=value, timestamp=first.timestamp,
                       subagent_run_id=first.subagent_run_id)
