# What a real a13n-harness Run marks for the model only: a tool's ToolReturn supplements (described
# `display: false` in its result's metadata) and the Harness's trusted dynamic context (inputs with
# `display: false`). In both vocabularies the SSE bytes a Host serves contain neither; the journal holds both,
# and its items still turn back into the very a13n-harness items.

from __future__ import annotations

import asyncio
import base64
import json
from types import ModuleType
from typing import Any

import pytest

import harness_agui.compat.a13n_stream_protocol.vocabulary  # noqa: F401 - registers the compat vocabulary
from harness_agui import HarnessAguiObserver
from harness_agui.a13n import a13n_equal, from_a13n, to_a13n
from harness_agui.source import ContentList, InputEvent, ToolResultEvent
from harness_agui.wire.agui import sse_frame
from harness_agui.wire.codec import decode, encode

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

from a13n_harness import InputTextEvent  # noqa: E402
from a13n_harness.events import InputMediaEvent  # noqa: E402
from pydantic_ai.messages import BinaryImage, ToolReturn  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402

SUPPLEMENT = "model-only supplement 7f3a: the raw chart data"
PIXELS = b"\x89PNG\r\n\x1a\n model-only pixels 7f3a"
VOCABULARIES = ["harness-agui", "a13n-stream-protocol/0.21"]


@pytest.fixture(scope="module")
def run(generator: ModuleType) -> list[Any]:
    async def chart() -> ToolReturn:
        """Render a chart."""
        return ToolReturn(return_value={"rendered": True}, content=[SUPPLEMENT, BinaryImage(
            data=PIXELS, media_type="image/png")])

    async def respond(messages: Any, info: Any) -> Any:
        if generator.seen(messages).returns:
            yield "Here is the chart."
        else:
            for chunk in generator.tool_call(0, "chart", "{}", "call-chart", chunks=1):
                yield chunk

    agent = generator.build(FunctionModel(stream_function=respond, model_name="hidden"),
                            capabilities=generator.tools(chart))
    return asyncio.run(generator.collect(agent.stream("Chart it.")))


def hidden(items: list[Any]) -> list[str]:
    """Every text the Run marks for the model only: its context inputs and the tool's supplement."""
    inputs = [item.event for item in items[:-1] if isinstance(item.event, InputTextEvent | InputMediaEvent)]
    context = [event.content for event in inputs if not event.metadata.display]
    assert context and all(isinstance(text, str) and len(text) > 40 for text in context)
    return [*context, SUPPLEMENT, base64.b64encode(PIXELS).decode()]


def written(text: str) -> str:
    """``text`` as it stands inside a JSON string (what the served bytes would hold)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


@pytest.mark.parametrize("vocabulary", VOCABULARIES)
def test_the_served_bytes_of_either_vocabulary_hold_nothing_marked_for_the_model_only(
        run: list[Any], vocabulary: str) -> None:
    observer = HarnessAguiObserver(vocabulary=vocabulary)
    served = "".join(sse_frame(event) for item in run for event in observer.observe(from_a13n(item)))
    assert "rendered" in served  # the tool's execution value is public
    for text in hidden(run):
        assert written(text) not in served and text not in served
    shown = HarnessAguiObserver(vocabulary=vocabulary, show_hidden=True)
    debug = "".join(sse_frame(event) for item in run for event in shown.observe(from_a13n(item)))
    assert all(written(text) in debug for text in hidden(run)[:-2])  # a Host may ask for the context, to debug


def test_the_journal_holds_all_of_it_and_gives_the_same_a13n_items_back(run: list[Any]) -> None:
    journal = [encode(from_a13n(item)) for item in run]
    kept = [decode(line) for line in journal]
    events = [item.event for item in kept[:-1]]
    inputs = {event.content for event in events if isinstance(event, InputEvent)}
    assert set(hidden(run)[:-2]) <= inputs
    (result,) = [event for event in events if isinstance(event, ToolResultEvent)]
    assert isinstance(result.content, ContentList)
    assert result.content.items[1] == SUPPLEMENT and result.content.items[2].data == PIXELS
    for line, item in zip(journal, run, strict=True):
        assert a13n_equal(to_a13n(decode(line)), item)
