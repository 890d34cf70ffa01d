# The public tool-result content of the compat package against a13n-stream-protocol 0.21.0's: the same value
# gives the same text or the same AG-UI parts, and what the Harness marks model-only never appears.

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")
upstream = pytest.importorskip("a13n_stream_protocol.content", reason="needs a13n-stream-protocol 0.21.0")

from a13n_harness.content import ContentItem, ContentMetadata  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from pydantic_ai.messages import BinaryContent, DocumentUrl, ImageUrl, TextContent, UploadedFile  # noqa: E402

from harness_agui.compat.a13n_stream_protocol import content as compat  # noqa: E402

PNG = BinaryContent(data=b"\x89PNG-bytes", media_type="image/png")


@dataclass
class Record:
    name: str
    size: int


@dataclass
class WithMedia:
    caption: str
    image: BinaryContent


class Model(BaseModel):
    b: int = 2
    a: str = "x"


VALUES: dict[str, Any] = {
    "text": "plain text",
    "object, keys sorted": {"z": 1, "a": [1, 2, {"y": None, "b": True}]},
    "number": 42,
    "none": None,
    "bytes": {"bytes": b"secret-media-bytes"},
    "binary": PNG,
    "caption and binary": ["A caption", PNG],
    "image url": ImageUrl(url="https://example.com/cat.png"),
    "document url": DocumentUrl(url="https://example.com/a.pdf"),
    "uploaded file": UploadedFile(file_id="file-1", provider_name="openai", media_type="application/pdf"),
    "hidden item": [ContentItem(PNG, ContentMetadata(display=False)), "visible"],
    "text content": [TextContent(content="shown"), 7, {"k": "v"}],
    "record": Record("r", 3),
    "record holding media": {"x": WithMedia("c", PNG)},
    "pydantic model": [Model(), "tail"],
}


@pytest.mark.parametrize("name", list(VALUES))
def test_tool_result_content_equals_upstreams(name: str) -> None:
    value = VALUES[name]
    ours, theirs = compat.tool_result_content(value), upstream.tool_result_content(value)
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        assert [p.model_dump(mode="json") for p in ours] == [p.model_dump(mode="json") for p in theirs]


@pytest.mark.parametrize("name", list(VALUES))
def test_public_tool_value_equals_upstreams(name: str) -> None:
    assert compat.public_tool_value(VALUES[name]) == upstream.public_tool_value(VALUES[name])


def test_bytes_and_hidden_items_never_reach_the_public_content() -> None:
    text = str(compat.tool_result_content(VALUES["hidden item"])) + str(compat.tool_result_content(VALUES["bytes"]))
    assert "secret-media-bytes" not in text and "PNG-bytes" not in text
    assert compat.tool_result_content(VALUES["bytes"]) == '{"bytes":{"payload_omitted":true,"size_bytes":18}}'
