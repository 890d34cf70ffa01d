# AG-UI output: the two forms AG-UI transports use, one JSON object
# per line and Server-Sent Events frames. Both carry the camelCase wire names
# that AG-UI clients read.

from __future__ import annotations

import json
from typing import Any

from pydantic_core import PydanticSerializationError

from ..core._json import escape_surrogates

__all__ = ["agui_to_json", "sse_frame"]


def agui_to_json(event: Any) -> str:
    """One AG-UI event as compact JSON with camelCase wire names (fields that
    are unset are left out). The text is always UTF-8 encodable. Raises
    whatever pydantic raises for an object that is not an AG-UI event."""
    try:
        return event.model_dump_json(by_alias=True)
    except PydanticSerializationError:
        # Only a lone surrogate in some text gets here: pydantic refuses it.
        text = json.dumps(event.model_dump(mode="json", by_alias=True), separators=(",", ":"), ensure_ascii=False)
        return escape_surrogates(text)


def sse_frame(event: Any, *, event_id: str | int | None = None) -> str:
    """One Server-Sent Events frame (``id:`` line when given, ``data:`` line,
    blank line) for an AG-UI event. Raises ValueError for an id containing a
    line break, which would end the field early."""
    if event_id is None:
        head = ""
    else:
        head = str(event_id)
        if "\n" in head or "\r" in head or "\0" in head:
            raise ValueError(f"an SSE event id cannot contain a line break or NUL: {head!r}")
        head = f"id: {head}\n"
    return f"{head}data: {agui_to_json(event)}\n\n"
