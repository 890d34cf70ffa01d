"""a13n-stream-protocol 0.5's content module: what of a tool result reaches a user interface, as 0.5 draws the
boundary (``RELEASE_05`` of the 0.21 package's content module, whose comment says what differs)."""

from __future__ import annotations

from ag_ui.core import ContentPart

from ..a13n_stream_protocol import content as _content

__all__ = ["public_tool_value", "tool_result_content"]


def tool_result_content(value: object) -> str | list[ContentPart]:
    """The public content of a tool's execution value: text, or AG-UI content
    parts when it is (or lists) native content. Raises what pydantic raises
    for a value that has no JSON form."""
    return _content.tool_result_content(value, release=_content.RELEASE_05)


def public_tool_value(value: object) -> object:
    """``value`` with every native payload replaced by its public description and containers rebuilt."""
    return _content.public_tool_value(value, release=_content.RELEASE_05)
