# AG-UI output: the two forms AG-UI transports use, one JSON object
# per line and Server-Sent Events frames. Both carry the camelCase wire names
# that AG-UI clients read.
#
# The JSON of an event is ``event.model_dump_json(by_alias=True)``, the very
# text ``ag_ui.encoder.EventEncoder`` writes after ``data: `` (ag-ui-protocol
# leaves optional fields without a value out by itself, so for the events
# this library emits ``exclude_none=True`` gives the same bytes), except
# that text holding a lone surrogate, which pydantic refuses, is written
# with ``\udXXX`` escapes instead of failing. ``core.encode`` writes it
# without pydantic where it can: from the projection's records
# (``HarnessAguiObserver.observe_encoded``, ``encoded(snapshot)``), or from
# an event that holds only what a record would; the result is the same text.

from __future__ import annotations

from typing import Any

from ..core.encode import EncodedEvent, event_json

__all__ = ["agui_to_json", "sse_frame", "json_line", "SSE_KEEPALIVE", "sse_retry"]

SSE_KEEPALIVE = ": keep-alive\n\n"
"""The comment frame a server sends after a silence, so that proxies and clients keep the stream open."""


def agui_to_json(event: Any) -> str:
    """One AG-UI event as compact JSON with camelCase wire names (fields that
    are unset are left out). The text is always UTF-8 encodable. An
    ``EncodedEvent`` gives its ``json``. Raises whatever pydantic raises for
    an object that is not an AG-UI event."""
    if type(event) is EncodedEvent:
        return event.json
    return event_json(event)


def json_line(event: Any) -> str:
    """``agui_to_json(event)`` and a line feed: one line of a JSON lines stream."""
    return agui_to_json(event) + "\n"


def sse_frame(event: Any, *, event_id: str | int | None = None) -> str:
    """One Server-Sent Events frame (``id:`` line when given, ``data:``
    line, blank line): the one place frames are written, by the delivery
    logs, the server and the command line. ``event`` is an AG-UI event, an
    ``EncodedEvent``, or the event's JSON text as a delivery log stores it
    (compact JSON holds no line break, so it is one ``data:`` line). Without
    an id, exactly what ``ag_ui.encoder.EventEncoder().encode(event)``
    writes. Raises ValueError for an id containing a line break or NUL,
    which would end the field early."""
    data = event if type(event) is str else agui_to_json(event)
    if event_id is None:
        return f"data: {data}\n\n"
    head = str(event_id)
    if "\n" in head or "\r" in head or "\0" in head:
        raise ValueError(f"an SSE event id cannot contain a line break or NUL: {head!r}")
    return f"id: {head}\ndata: {data}\n\n"


def sse_retry(seconds: float) -> str:
    """The frame that tells a client how long to wait before it reconnects (``retry:``, in milliseconds)."""
    return f"retry: {max(1, round(seconds * 1000))}\n\n"
