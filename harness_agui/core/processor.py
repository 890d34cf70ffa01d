# The processor contract.
#
# A processor sees each AG-UI event built from a record and answers with an
# event or None. A replacement must be of the same class and keep every field
# except the kind's one content field; anything else is reported as an
# AguiObservationError naming the event and the field. The accepted event is
# captured back into a record at once (strings kept, JSON turned into text),
# so nothing the processor holds on to can reach the projection later. A
# replacement is held to the limits of ``_json`` that a source value is held
# to (depth, Unicode text, integer size): what a processor answers must be
# emittable too, or the call fails here instead of in a serialiser later.
# Records are read and rewritten only through the accessors of ``records``.
#
# A content delta that the processor empties is dropped like a None answer:
# an empty delta carries nothing and AG-UI clients warn about it.

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ag_ui.core import BaseEvent

from . import _json
from .errors import AguiObservationError
from .records import TOOL_RESULT, Kind, Record, kind_of, with_content

__all__ = ["apply_processor", "capture"]


def apply_processor(processor: Callable[[Any, BaseEvent], BaseEvent | None], item: Any,
                    records: list[Record]) -> list[Record]:
    """The records that remain after ``processor`` saw each one's event."""
    out = []
    for record in records:
        kind = kind_of(record)
        event = kind.build(record)
        # What the processor was shown, to recognise an answer that changed
        # nothing without building the event a second time. Only for kinds
        # without JSON fields: a shallow copy cannot see a JSON value that
        # was mutated in place, and capture() must report that.
        shown = None if kind.json_fields else event.__dict__.copy()
        result = processor(item, event)
        if result is None:
            continue
        if (shown is not None and type(result) is kind.cls and result.__dict__ == shown
                and not result.model_extra and _content_kept(kind, result)):
            out.append(record)
            continue
        kept = capture(record, result, item.sequence)
        if kept is not None:
            out.append(kept)
    return out


def _content_kept(kind: Kind, event: Any) -> bool:
    """Whether capture() would keep, as it is, the record of an ``event``
    whose fields all equal the ones it was built with (its content is then
    the record's own)."""
    if kind.content is None:
        return True
    content = getattr(event, kind.content)
    return type(content) is str and content != ""


def capture(record: Record, event: Any, sequence: int | None = None) -> Record | None:
    """The record of a processor's answer ``event`` to ``record``.

    Raises AguiObservationError if ``event`` changes the type or any field
    other than the content field, or gives the content field a value of the
    wrong type. Returns None for an emptied content delta.
    """
    kind = kind_of(record)
    if type(event) is not kind.cls:
        raise AguiObservationError(
            f"processor changed a {kind.name} event into {type(event).__name__}; it may only return the same "
            f"event class or None",
            sequence=sequence,
        )
    expected = kind.build(record)
    for name in ("timestamp",) + kind.fields:
        if name != kind.content and getattr(event, name) != getattr(expected, name):
            raise _structural(kind, name, getattr(expected, name), getattr(event, name), sequence)
    for name, default in kind.unset:
        if getattr(event, name) != default:
            raise _structural(kind, name, default, getattr(event, name), sequence)
    if event.model_extra:
        raise AguiObservationError(
            f"processor added fields {sorted(event.model_extra)} to a {kind.name} event", sequence=sequence
        )
    if kind.content is None:
        return record

    content = getattr(event, kind.content)
    if kind.content in kind.json_fields:  # RUN_FINISHED and SUBAGENT_FINISHED: the result, any JSON
        try:
            _json.check_json(content, f"{kind.name}.{kind.content}")  # the limits a source value is held to
            value = None if content is None else _json.dumps(content)
        except (TypeError, ValueError) as e:
            raise AguiObservationError(f"processor gave {kind.name} a result that is not JSON: {e}",
                                       sequence=sequence) from None
    else:
        if not isinstance(content, str):
            allowed = "str" if kind.name != TOOL_RESULT.name else "str (text or compact JSON)"
            raise AguiObservationError(
                f"processor set {kind.name}.{kind.content} to {type(content).__name__}; it must be {allowed}",
                sequence=sequence,
            )
        try:
            _json.check_text(content, f"processor's {kind.name}.{kind.content}")
        except ValueError as e:
            raise AguiObservationError(str(e), sequence=sequence) from None
        if content == "" and kind.content == "delta":
            return None
        # Keep an exact str: a subclass instance belongs to the processor.
        value = content if type(content) is str else str.__str__(content)
    return with_content(record, value)


def _structural(kind: Kind, name: str, before: Any, after: Any, sequence: int | None) -> AguiObservationError:
    return AguiObservationError(
        f"processor changed structural field {kind.name}.{name} from {before!r:.80} to {after!r:.80}; "
        f"only {kind.content or 'no field'} may change",
        sequence=sequence,
    )
