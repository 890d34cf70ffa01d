# A Host that follows a13n-harness's producer tap (RunBindings.producer_observer), as a13n-harness-ui does:
# every item the producer makes, numbered by the producer from 1 (a child's announcement before its own
# run_started), then the public terminal item with its public sequence. A real Run with a tool retried once,
# a subagent and a final answer, tapped so, projects onto a valid AG-UI run under the "tap" order policy in
# this library's vocabulary, and the compat observer publishes what a13n-stream-protocol publishes for it.

from __future__ import annotations

import asyncio
import json
from types import ModuleType
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from harness_agui import HarnessAguiObserver
from harness_agui.a13n import from_a13n
from harness_agui.core.errors import HistoryError
from harness_agui.wire.agui import agui_to_json

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

from a13n_harness import (  # noqa: E402
    AgentDefinition,
    AgentSpec,
    HarnessBuilder,
    HarnessRunResultEvent,
    RunBindings,
    SubagentDefinition,
)
from a13n_harness.capabilities import SubagentCapability  # noqa: E402
from pydantic_ai.exceptions import ModelRetry  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402

from harness_agui.compat.a13n_stream_protocol.observer import HarnessAguiStreamObserver  # noqa: E402


@pytest.fixture(scope="module")
def tapped(generator: ModuleType) -> tuple[list[Any], list[Any]]:
    """A real Run, as its producer tap gave it followed by the public terminal item, and as its stream did."""
    attempts = {"lookup": 0}

    async def lookup(key: str) -> str:
        """Look a key up (works on the second call)."""
        attempts["lookup"] += 1
        if attempts["lookup"] == 1:
            raise ModelRetry("Busy, call again.")
        return f"{key} = 42"

    async def respond(messages: Any, info: Any) -> Any:
        history = generator.seen(messages)
        if not history.returns:
            yield "Looking it up. "
            for chunk in generator.tool_call(1, "lookup", '{"key": "answer"}', "call-lookup-1"):
                yield chunk
        elif len(history.returns["lookup"]) == 1:
            for chunk in generator.tool_call(0, "lookup", '{"key": "answer"}', "call-lookup-2"):
                yield chunk
        elif "delegate" not in history.returns:
            args = '{"subagent": "checker", "prompt": "Check 42"}'
            for chunk in generator.tool_call(0, "delegate", args, "call-delegate"):
                yield chunk
        else:
            yield "The answer is 42, "
            yield "and the checker agrees."

    child = AgentDefinition(agent=AgentSpec(), output_type=str, model=generator._child_model("checker", "42 holds"))
    root = HarnessBuilder().build(AgentDefinition(
        agent=AgentSpec(), output_type=str, model=FunctionModel(stream_function=respond, model_name="tap-root"),
        capabilities=(SubagentCapability(), *generator.tools(lookup)),
        subagents=(SubagentDefinition(name="checker", description="Checks answers.", agent=child),)))
    tap: list[Any] = []

    async def run() -> list[Any]:
        bindings = RunBindings.embedded(producer_observer=tap.append)
        return await generator.collect(root.stream("What is the answer?", bindings=bindings))

    stream = asyncio.run(run())
    assert isinstance(stream[-1], HarnessRunResultEvent)
    return [*tap, stream[-1]], stream


def test_the_tap_numbers_from_1_announces_a_child_first_and_ends_with_the_public_terminal(
        tapped: tuple[list[Any], list[Any]]) -> None:
    tap, stream = tapped
    root = stream[0].run_id
    assert [item.sequence for item in tap if item.run_id == root][0] == 1
    children = {item.run_id for item in tap if item.run_id != root}
    assert children
    firsts = [next(item for item in tap if item.run_id == child) for child in children]
    assert all(item.event.kind == "delegation" and item.event.payload["action"] == "started" for item in firsts)
    assert tap[-1] is stream[-1] and tap[-1].sequence <= max(i.sequence for i in tap[:-1] if i.run_id == root)


def test_the_tap_followed_by_the_terminal_projects_onto_a_valid_agui_run_under_the_tap_order(
        tapped: tuple[list[Any], list[Any]]) -> None:
    tap, _ = tapped
    items = [from_a13n(item) for item in tap]
    with pytest.raises(HistoryError):
        for item in items:
            HarnessAguiObserver().observe(item)
    observer = HarnessAguiObserver(order="tap")
    events = [json.loads(agui_to_json(event)) for item in items for event in observer.observe(item)]
    report = validate_agui(events)
    assert [d for d in report.diagnostics if d.severity in ("error", "warning")] == []
    types = [event["type"] for event in events]
    assert types.count("RUN_STARTED") == 1 and types[-1] == "RUN_FINISHED"
    assert types.count("SUBAGENT_STARTED") == types.count("SUBAGENT_FINISHED") == 1
    results = [event for event in events if event["type"] == "TOOL_CALL_RESULT"]
    assert [r["metadata"]["harness"]["outcome"] for r in results if "lookup" in r["toolCallId"]] == [
        "retried", "success"]


def test_the_compat_observer_publishes_upstreams_events_for_the_tap(tapped: tuple[list[Any], list[Any]]) -> None:
    upstream = pytest.importorskip("a13n_stream_protocol", reason="needs a13n-stream-protocol 0.21.0")
    tap, _ = tapped

    def published(observer: Any) -> list[str]:
        return [json.dumps(event.model_dump(mode="json", by_alias=True)) for item in tap
                for event in observer.observe(item)]

    assert published(HarnessAguiStreamObserver()) == published(upstream.HarnessAguiStreamObserver())
