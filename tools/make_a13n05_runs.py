"""Run real a13n-harness 0.5 agents offline: the Runs tests/a13n05 checks.

a13n-service 0.0.94 pins a13n-harness 0.5.4, whose API differs from the 0.21
release ``tools/make_a13n_fixtures.py`` drives (no ``ToolExecutionRuntime``;
a suspended Run's deferred calls are pydantic-ai's ``ToolCallPart`` values),
so its scenarios are written here against 0.5's own API. Each builds a real
``a13n_harness`` agent whose model is a pydantic-ai ``FunctionModel`` stream
function with fixed content: nothing touches the network. What changes
between two runs is what the Harness stamps itself (ids, clocks), so tests
compare the items of one generation with each other, never with a file.

Usage (in the venv ``make test-a13n-05`` builds)::

    python tools/make_a13n05_runs.py            # run every scenario, print a summary of each
"""

from __future__ import annotations

import asyncio
import base64
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from a13n_harness import (
    AgentDefinition,
    AgentSpec,
    DeferredToolResume,
    HarnessBuilder,
    HarnessRunResultEvent,
    SubagentDefinition,
)
from a13n_harness.capabilities import SubagentCapability
from pydantic import BaseModel
from pydantic_ai import RunContext, Tool
from pydantic_ai.capabilities import Capability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry
from pydantic_ai.messages import BinaryContent, ModelMessage, ModelRequest, ModelResponse, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel
from pydantic_ai.tools import ToolDenied

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Weather(BaseModel):
    """The structured output of ``structured_output``."""

    city: str
    temp_c: int


@dataclass
class Scenario:
    """The Runs of one scenario, in order, each the list of items its stream yielded."""

    name: str
    runs: list[list[Any]] = field(default_factory=list)
    output_type: Any = str

    @property
    def items(self) -> list[Any]:
        return [item for run in self.runs for item in run]


def responses(messages: list[ModelMessage]) -> int:
    return sum(isinstance(m, ModelResponse) for m in messages)


def returns(messages: list[ModelMessage]) -> dict[str, list[ToolReturnPart]]:
    out: dict[str, list[ToolReturnPart]] = {}
    for m in messages:
        if isinstance(m, ModelRequest):
            for part in m.parts:
                if isinstance(part, ToolReturnPart):
                    out.setdefault(part.tool_name, []).append(part)
    return out


def tool_call(index: int, name: str, args: str, call_id: str) -> list[dict[int, DeltaToolCall]]:
    """A tool call streamed as its start (name and the first half of the args) and the rest of its args."""
    half = len(args) // 2
    return [{index: DeltaToolCall(name=name, json_args=args[:half], tool_call_id=call_id)},
            {index: DeltaToolCall(json_args=args[half:])}]


def build(respond: Any, name: str, *tools: Any, output_type: Any = str) -> Any:
    capabilities = (Capability(id="fixture-tools", tools=list(tools)),) if tools else ()
    return HarnessBuilder().build(AgentSpec(), output_type=output_type, capabilities=capabilities,
                                  model=FunctionModel(stream_function=respond, model_name=name))


OnItem = Callable[[Any, Any], Awaitable[None]]


async def collect(stream_context: Any, on_item: OnItem | None = None) -> list[Any]:
    items: list[Any] = []
    async with stream_context as stream:
        async for item in stream:
            items.append(item)
            if on_item is not None:
                await on_item(stream, item)
    if not items or not isinstance(items[-1], HarnessRunResultEvent):
        raise RuntimeError("the Run ended without its terminal item")
    return items


# -- scenarios -------------------------------------------------------------------------------------

async def tools_and_reasoning() -> Scenario:
    """Signed reasoning, streamed text, and tool calls that succeed, ask for a
    retry and fail argument validation."""
    attempts = {"flaky": 0}

    async def double(value: int) -> int:
        """Twice the value."""
        return value * 2

    async def flaky(x: str) -> dict[str, Any]:
        """Works on the second call."""
        attempts["flaky"] += 1
        if attempts["flaky"] == 1:
            raise ModelRetry("Temporarily unavailable, call again.")
        return {"x": x, "attempt": attempts["flaky"]}

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        n = responses(messages)
        if n == 0:
            yield {0: DeltaThinkingPart(content="I should ")}
            yield {0: DeltaThinkingPart(content="use the tools.", signature="sig-part1")}
            yield "Let me "
            yield "call some tools."
            for i, (name, args, call_id) in enumerate([("double", '{"value": 21}', "call-double"),
                                                       ("flaky", '{"x": "hello"}', "call-flaky-1"),
                                                       ("double", '{"value": "many"}', "call-double-bad")]):
                for chunk in tool_call(10 + i, name, args, call_id):
                    yield chunk
        elif n == 1:
            for chunk in tool_call(0, "flaky", '{"x": "hello"}', "call-flaky-2"):
                yield chunk
        else:
            yield "Done: 42, "
            yield "and flaky worked on retry."

    agent = build(respond, "fixture-tools", double, flaky)
    return Scenario("tools_and_reasoning", [await collect(agent.stream("Exercise the tools."))])


async def approval_denied() -> Scenario:
    """A tool that needs approval suspends the Run; the next Run resumes it with the approval denied."""

    async def deploy(env: str) -> str:
        """Deploy to an environment (needs approval)."""
        return f"deployed to {env}"

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        done = returns(messages).get("deploy")
        if done:
            yield "Deployment was not done: "
            yield str(done[-1].content)
        else:
            yield "I will deploy."
            for chunk in tool_call(1, "deploy", '{"env": "prod"}', "call-deploy"):
                yield chunk

    agent = build(respond, "fixture-approval", Tool(deploy, requires_approval=True))
    first = await collect(agent.stream("Deploy to prod."))
    suspended = first[-1].result
    assert suspended.status == "suspended", suspended
    answers = suspended.deferred.build_results(
        approvals={c.tool_call_id: ToolDenied("Not allowed on Fridays.") for c in suspended.deferred.approvals})
    second = await collect(agent.stream(previous_state=suspended.state,
                                        deferred_resume=DeferredToolResume(suspended.deferred, answers)))
    return Scenario("approval_denied", [first, second])


async def deferred_call_and_approval() -> Scenario:
    """One tool is run by the client (an external call), another needs approval; the next Run is resumed with
    the client's answer and the approval granted."""

    async def ask_client(question: str) -> str:
        """Ask the client application (it answers, not this process)."""
        raise CallDeferred({"ui": "prompt", "question": question})

    async def delete_file(ctx: RunContext[Any], path: str) -> str:
        """Delete a file (needs approval)."""
        if not ctx.tool_call_approved:
            raise ApprovalRequired({"reason": "destructive", "path": path})
        return f"deleted {path}"

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        done = returns(messages)
        if done:
            yield "The client said: "
            yield str(done["ask_client"][-1].content)
            yield "; and: "
            yield str(done["delete_file"][-1].content)
        else:
            for chunk in [*tool_call(0, "ask_client", '{"question": "Which file?"}', "call-ask"),
                          *tool_call(1, "delete_file", '{"path": "/tmp/x.txt"}', "call-delete")]:
                yield chunk

    agent = build(respond, "fixture-deferred", ask_client, delete_file)
    first = await collect(agent.stream("Ask the client, then delete the file."))
    suspended = first[-1].result
    assert suspended.status == "suspended", suspended
    answers = suspended.deferred.build_results(
        calls={c.tool_call_id: "x.txt, please" for c in suspended.deferred.calls},
        approvals={c.tool_call_id: True for c in suspended.deferred.approvals})
    second = await collect(agent.stream(previous_state=suspended.state,
                                        deferred_resume=DeferredToolResume(suspended.deferred, answers)))
    return Scenario("deferred_call_and_approval", [first, second])


async def cancel_during_tool() -> Scenario:
    """The Run is cancelled while a tool runs; a new Run continues the Thread."""

    async def long_task(n: int) -> str:
        """A tool that takes long."""
        await asyncio.sleep(30)
        return "never"

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if responses(messages):  # the second Run: the first one's response is in its history
            yield "The long task was interrupted."
            return
        yield "Starting the long task."
        for chunk in tool_call(1, "long_task", '{"n": 1}', "call-long"):
            yield chunk

    agent = build(respond, "fixture-cancel", long_task)

    async def on_item(stream: Any, item: Any) -> None:
        if type(getattr(item, "event", None)).__name__ == "FunctionToolCallEvent":
            await asyncio.sleep(0.3)
            stream.cancel()

    first = await collect(agent.stream("Run the long task."), on_item)
    cancelled = first[-1].result
    assert cancelled.status == "cancelled", cancelled
    second = await collect(agent.stream("Are you done?", previous_state=cancelled.state))
    return Scenario("cancel_during_tool", [first, second])


async def failed_run() -> Scenario:
    """The model raises after some text."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        yield "Partial text before "
        yield "the crash"
        raise RuntimeError("model exploded")

    agent = build(respond, "fixture-failed")
    return Scenario("failed_run", [await collect(agent.stream("Fail, please."))])


async def multimodal() -> Scenario:
    """A tool returns an image (binary content) and another returns a list with text and an image."""

    async def snapshot() -> BinaryContent:
        """A picture."""
        return BinaryContent(PNG, media_type="image/png")

    async def album() -> list[Any]:
        """A caption and a picture."""
        return ["a caption", BinaryContent(PNG, media_type="image/png")]

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if responses(messages) == 0:
            for chunk in [*tool_call(0, "snapshot", "{}", "call-snap"), *tool_call(1, "album", "{}", "call-album")]:
                yield chunk
        else:
            yield "Two pictures."

    agent = build(respond, "fixture-multimodal", snapshot, album)
    return Scenario("multimodal", [await collect(agent.stream("Show me."))])


async def structured_output() -> Scenario:
    """A pydantic output type, given through the output tool, after one invalid attempt."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        output = info.output_tools[0].name
        if responses(messages) == 0:
            yield "Checking the weather."
            for chunk in tool_call(1, output, '{"city": "Oslo", "temp_c": "cold"}', "call-out-1"):
                yield chunk
        else:
            for chunk in tool_call(0, output, '{"city": "Oslo", "temp_c": 4}', "call-out-2"):
                yield chunk

    agent = build(respond, "fixture-structured", output_type=Weather)
    return Scenario("structured_output", [await collect(agent.stream("Weather in Oslo?"))], output_type=Weather)


def _child_model(name: str, text: str) -> FunctionModel:
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        yield f"[{name}] "
        yield text

    return FunctionModel(stream_function=respond, model_name=f"fixture-{name}")


def _delegating_model(name: str, subagent: str, task: str) -> FunctionModel:
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        done = returns(messages).get("delegate")
        if done:
            yield f"[{name}] the subagent said: "
            yield str(done[-1].content)[:80]
        else:
            yield f"[{name}] delegating. "
            for chunk in tool_call(1, "delegate", f'{{"subagent": "{subagent}", "prompt": "{task}"}}',
                                   f"call-delegate-{name}"):
                yield chunk

    return FunctionModel(stream_function=respond, model_name=f"fixture-{name}")


def _delegating(model: FunctionModel, name: str, description: str, child: AgentDefinition) -> AgentDefinition:
    return AgentDefinition(agent=AgentSpec(), output_type=str, model=model, capabilities=(SubagentCapability(),),
                           subagents=(SubagentDefinition(name=name, description=description, agent=child),))


async def nested_subagents() -> Scenario:
    """The root delegates to a child that delegates to a grandchild: one root stream with the children's
    forwarded items interleaved (each child with its own run id and sequences)."""
    grandchild = AgentDefinition(agent=AgentSpec(), output_type=str, model=_child_model("grandchild", "deep result"))
    middle = _delegating(_delegating_model("middle", "worker", "Do the deep work"), "worker", "Does deep work.",
                         grandchild)
    root = HarnessBuilder().build(_delegating(_delegating_model("root", "planner", "Plan and delegate"), "planner",
                                              "Plans.", middle))
    return Scenario("nested_subagents", [await collect(root.stream("Delegate twice."))])


async def failed_child() -> Scenario:
    """The root delegates to a child whose model raises."""

    async def broken(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        yield "[broken] starting "
        raise RuntimeError("child model exploded")

    child = AgentDefinition(agent=AgentSpec(), output_type=str,
                            model=FunctionModel(stream_function=broken, model_name="fixture-broken"))
    root = HarnessBuilder().build(_delegating(_delegating_model("root", "broken", "Try"), "broken", "Always fails.",
                                              child))
    return Scenario("failed_child", [await collect(root.stream("Delegate to a broken child."))])


SCENARIOS: dict[str, Callable[[], Awaitable[Scenario]]] = {
    "tools_and_reasoning": tools_and_reasoning,
    "approval_denied": approval_denied,
    "deferred_call_and_approval": deferred_call_and_approval,
    "cancel_during_tool": cancel_during_tool,
    "failed_run": failed_run,
    "multimodal": multimodal,
    "structured_output": structured_output,
    "nested_subagents": nested_subagents,
    "failed_child": failed_child,
}


async def run_scenarios(names: list[str] | None = None) -> list[Scenario]:
    out = []
    for name in names or list(SCENARIOS):
        out.append(await asyncio.wait_for(SCENARIOS[name](), timeout=60))
    return out


def main() -> int:
    logging.getLogger("a13n_harness").setLevel(logging.ERROR)  # the failing scenarios fail on purpose
    for scenario in asyncio.run(run_scenarios(sys.argv[1:] or None)):
        statuses = [run[-1].result.status for run in scenario.runs]
        print(f"{scenario.name}: {len(scenario.items)} items, Runs {statuses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
