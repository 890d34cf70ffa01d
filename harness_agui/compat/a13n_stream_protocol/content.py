# What of a tool result reaches a user interface.
#
# The visibility boundary: a tool's execution value is public, its model-only
# supplements are not (the caller passes the execution value; see
# ``_harness.tool_execution_value``), content items marked ``display: false``
# are left out, and native media is described, never carried: bytes become
# ``{"payload_omitted": true, "size_bytes": n}``, a URL or an uploaded file
# becomes an AG-UI content part that points at it.
#
# ``tool_result_content`` gives what a TOOL_CALL_RESULT carries: plain text for
# an ordinary value (a string as is, anything else as compact JSON with sorted
# keys), or AG-UI content parts in order when the value holds native content.
# ``public_tool_value`` gives the JSON-ready public form of any value, which
# is also what a non-success result's CUSTOM event carries.
#
# a13n-stream-protocol 0.5 (``RELEASE_05``, for the 0.5 compat package) draws
# the same boundary with two differences: a record (a pydantic model or a
# dataclass) is left to pydantic as it is, not projected by the Harness nor
# withheld whole when it holds media, and the text of a value is pydantic's
# JSON of any value (``TypeAdapter(Any)``) rather than the Harness's
# ``project_json`` (a13n-harness 0.5's differs for some values).

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

import attrs
from ag_ui.core import AudioPart, ContentPart, DocumentPart, FileSource, ImagePart, TextPart, UrlSource, VideoPart
from pydantic import BaseModel, TypeAdapter

from ._harness import harness, project_json

__all__ = ["RELEASE_05", "RELEASE_021", "ContentRelease", "public_tool_value", "tool_result_content"]

_OMITTED: dict[str, Any] = {"payload_omitted": True}
_ANY = TypeAdapter(Any)


@attrs.frozen
class ContentRelease:
    """How one a13n-stream-protocol release draws the boundary: whether a
    record is projected (or withheld when it holds media), and the JSON of a
    value whose text is published."""

    projects_records: bool
    to_json: Callable[[Any], Any]


RELEASE_021 = ContentRelease(projects_records=True, to_json=project_json)
RELEASE_05 = ContentRelease(projects_records=False, to_json=lambda value: _ANY.dump_python(value, mode="json"))


def tool_result_content(value: object, *, release: ContentRelease = RELEASE_021) -> str | list[ContentPart]:
    """The public content of a tool's execution value: text, or AG-UI content
    parts when it is (or lists) native content. Raises what the Harness's JSON
    projection raises for a value that has no JSON form."""
    native = harness().native_content
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not any(isinstance(item, native) for item in items):
        return _text(value, release)
    parts: list[ContentPart] = []
    for item in items:
        if isinstance(item, (*native, str)):
            part = _content_part(item, release)
            if part is not None:
                parts.append(part)
        else:
            parts.append(TextPart(text=_text(item, release)))
    return parts


def public_tool_value(value: object, *, release: ContentRelease = RELEASE_021) -> object:
    """``value`` with every native payload replaced by its public description,
    containers rebuilt, and records projected to JSON by the Harness (a record
    that holds media anywhere becomes ``{"payload_omitted": true}`` whole,
    since its own serializer could rename or flatten the media fields)."""
    if isinstance(value, bytes | bytearray):
        return {"payload_omitted": True, "size_bytes": len(value)}
    if isinstance(value, harness().native_content):
        projected = harness().project_input_content(value)
        if projected is None or not projected[1].display:
            return dict(_OMITTED)
        return projected[0]
    if isinstance(value, dict):
        return {key: public_tool_value(item, release=release) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [public_tool_value(item, release=release) for item in value]
    if release.projects_records and _is_record(value):
        return dict(_OMITTED) if _holds_media(value, set()) else project_json(value)
    return value


def _content_part(item: object, release: ContentRelease) -> ContentPart | None:
    """The AG-UI part of one native item or string; None when it is not shown
    (hidden by its metadata, or a cache point)."""
    projected = harness().project_input_content(item)
    if projected is None:
        return None
    content, metadata = projected
    if not metadata.display:
        return None
    if isinstance(content, str):
        return TextPart(text=content)
    mime = content.get("media_type")
    mime = mime if isinstance(mime, str) else None
    url, file_id, provider = content.get("url"), content.get("file_id"), content.get("provider_name")
    source: UrlSource | FileSource
    if isinstance(url, str):
        source = UrlSource(value=url, mime_type=mime)
    elif isinstance(file_id, str):
        source = FileSource(value=file_id, provider=provider if isinstance(provider, str) else None, mime_type=mime)
    else:
        return TextPart(text=_text(content, release))  # bytes: described, never carried
    kind = content.get("kind")
    if kind == "image-url" or (mime or "").startswith("image/"):
        return ImagePart(source=source)
    if kind == "audio-url" or (mime or "").startswith("audio/"):
        return AudioPart(source=source)
    if kind == "video-url" or (mime or "").startswith("video/"):
        return VideoPart(source=source)
    return DocumentPart(source=source)


def _is_record(value: object) -> bool:
    return isinstance(value, BaseModel) or (is_dataclass(value) and not isinstance(value, type))


def _children(value: object) -> list[object]:
    if isinstance(value, BaseModel):
        return [*(getattr(value, name) for name in type(value).model_fields), *(value.model_extra or {}).values()]
    if is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, field.name) for field in fields(value)]
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list | tuple):
        return list(value)
    return []


def _holds_media(value: object, seen: set[int]) -> bool:
    if isinstance(value, (bytes, bytearray, *harness().native_content)):
        return True
    if id(value) in seen:
        return False
    seen.add(id(value))
    return any(_holds_media(child, seen) for child in _children(value))


def _text(value: object, release: ContentRelease) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(release.to_json(public_tool_value(value, release=release)), ensure_ascii=False,
                      separators=(",", ":"), sort_keys=True)
