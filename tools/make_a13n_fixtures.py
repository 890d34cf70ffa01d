"""Run real a13n-harness agents offline and write their Runs as wire-format journals.

Usage (Python 3.13 with the extra: ``pip install -e '.[a13n]'``)::

    python tools/make_a13n_fixtures.py                     # every scenario into tests/fixtures/a13n/
    python tools/make_a13n_fixtures.py --out DIR [NAME ...]
    python tools/make_a13n_fixtures.py --out DIR large_tool_result   # a limit scenario, by name only

Each scenario builds a real ``a13n_harness`` agent whose model is a pydantic-ai
``FunctionModel`` stream function with fixed content: nothing touches the
network and the same content streams every time. What still changes between
two generations is what a real Harness stamps itself: ids (thread, run, model
attempt, usage record), wall-clock times, and the order in which concurrent
tool results complete. So fresh Runs are compared by shape, never byte for
byte, with the committed ones.

One file per scenario, ``<scenario>.jsonl``: every item the scenario's Runs
yielded, converted with ``harness_agui.a13n.from_a13n`` and written with
``harness_agui.wire.codec.encode``, one per line, in arrival order.

- A scenario of two Runs (a suspended Run and the Run that resumes it, a
  cancelled Run and the Run that continues its Thread) writes the first Run's
  items, then the second Run's: each Run is contiguous, and a reader picks one
  with ``Journal(path, run_id=...)``.
- A delegating Run's file holds the root stream exactly as it arrived:
  the root's items and its children's forwarded items (each child with its own
  run id, thread id and sequences from 0), interleaved. Only the root has a
  terminal item.

Scenarios (see ``SCENARIOS``): text, signed reasoning and tool calls with
success, failed, retried and validation-retry results; immediate and queued
steering; an approval denied on resume; an external call and an approval
answered on resume; a cancel during a tool, then a new Run on the Thread; a
failed Run (the model raises); a provider error, exhausted and recovered;
multimodal tool results and an image input; one subagent, nested subagents and
a failed child; structured output with a builtin tool call and return, a file
part and an output-validation retry; tool call ids numbered per response (the
same id in two responses); deltas that arrive after their part ended; a
response whose text parts interleave with a tool call and with each other.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a13n_harness import (
    AgentContext,
    AgentDefinition,
    AgentSpec,
    DeferredToolResume,
    HarnessBuilder,
    HarnessRunResultEvent,
    RunBindings,
    SubagentDefinition,
    ToolExecutionRuntime,
)
from a13n_harness.capabilities import SubagentCapability
from a13n_harness.recovery import ModelRecoveryPolicy
from pydantic import BaseModel
from pydantic_ai import RunContext, Tool
from pydantic_ai.capabilities import Capability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelHTTPError, ModelRetry, ToolFailed
from pydantic_ai.messages import (
    BinaryContent,
    BinaryImage,
    FilePart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    ToolReturn,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingPart,
    DeltaToolCall,
    FunctionModel,
    FunctionStreamedResponse,
)
from pydantic_ai.tools import ToolDenied

from harness_agui.a13n import from_a13n
from harness_agui.wire.codec import encode

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "a13n"

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Weather(BaseModel):
    """The structured output of ``structured_output``."""

    city: str
    temp_c: int


@dataclass
class Scenario:
    """The Runs of one scenario, in order, each a list of a13n stream items.
    ``tool_types`` names the tools whose results are Python objects (for
    ``to_a13n(..., tool_types=...)``)."""

    name: str
    runs: list[list[Any]] = field(default_factory=list)
    output_type: Any = str
    tool_types: dict[str, Any] = field(default_factory=dict)

    @property
    def items(self) -> list[Any]:
        return [item for run in self.runs for item in run]


# -- helpers -------------------------------------------------------------------------------------

@dataclass
class Seen:
    """What a model function needs to know about the history it is given."""

    responses: int = 0
    returns: dict[str, list[ToolReturnPart]] = field(default_factory=dict)
    prompts: list[str] = field(default_factory=list)


def seen(messages: list[ModelMessage]) -> Seen:
    out = Seen()
    for message in messages:
        if isinstance(message, ModelResponse):
            out.responses += 1
        elif isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    out.returns.setdefault(part.tool_name, []).append(part)
                elif isinstance(part, UserPromptPart):
                    out.prompts.append(part.content if isinstance(part.content, str) else repr(part.content))
    return out


def tool_call(index: int, name: str, args: str, call_id: str, chunks: int = 2) -> list[dict[int, DeltaToolCall]]:
    """A tool call streamed as a start with the name and ``chunks`` pieces of args."""
    size = max(1, -(-len(args) // chunks))
    pieces = [args[i:i + size] for i in range(0, len(args), size)] or [""]
    first = {index: DeltaToolCall(name=name, json_args=pieces[0], tool_call_id=call_id)}
    return [first, *({index: DeltaToolCall(json_args=piece)} for piece in pieces[1:])]


def tools(*functions: Any) -> tuple[Capability, ...]:
    return (Capability(id="fixture-tools", tools=list(functions)),)


def build(model: FunctionModel, *, capabilities: tuple[Any, ...] = (), output_type: Any = str, **options: Any) -> Any:
    return HarnessBuilder().build(AgentSpec(), output_type=output_type, model=model, capabilities=capabilities,
                                  **options)


OnItem = Callable[[Any, Any], Awaitable[None]]


async def collect(stream_context: Any, on_item: OnItem | None = None) -> list[Any]:
    """Every item of one Run's stream; ``on_item(stream, item)`` sees each as it arrives."""
    items: list[Any] = []
    async with stream_context as stream:
        async for item in stream:
            items.append(item)
            if on_item is not None:
                await on_item(stream, item)
    if not items or not isinstance(items[-1], HarnessRunResultEvent):
        raise RuntimeError("the Run ended without its terminal item")
    return items


def result_of(run: list[Any]) -> Any:
    return run[-1].result


@dataclass
class DeltaText:
    """Text for the text part of a key of its own (``{key: DeltaText(...)}``): FunctionModel streams all its
    text into one part, a real provider may stream several text parts of one response."""

    content: str


class _FileStreamedResponse(FunctionStreamedResponse):
    """A FunctionModel stream that can also yield ``{index: FilePart}`` and
    ``{key: DeltaText}``, which FunctionModel itself cannot: such an item
    becomes a part start, or text for the part of that key, through the
    response's parts manager; every other item goes through FunctionModel's
    own handling, one at a time, in order."""

    async def _get_event_iterator(self) -> AsyncIterator[Any]:
        script = self._iter
        async for item in script:
            if isinstance(item, dict) and item and all(isinstance(p, FilePart) for p in item.values()):
                for index, part in item.items():
                    yield self._parts_manager.handle_part(vendor_part_id=index, part=part)
                continue
            if isinstance(item, dict) and item and all(isinstance(p, DeltaText) for p in item.values()):
                for key, text in item.items():
                    for event in self._parts_manager.handle_text_delta(vendor_part_id=key, content=text.content):
                        yield event
                continue
            self._iter = _one(item)
            async for event in super()._get_event_iterator():
                yield event
        self._iter = script


async def _one(item: Any) -> AsyncIterator[Any]:
    yield item


class FileFunctionModel(FunctionModel):
    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with super().request_stream(*args, **kwargs) as response:
            yield _FileStreamedResponse(model_request_parameters=response.model_request_parameters,
                                        _model_name=response._model_name, _iter=response._iter)


# -- scenarios -------------------------------------------------------------------------------------

async def tools_and_reasoning() -> Scenario:
    """Signed reasoning (a signature-only delta too), text, and tool calls
    that succeed, fail, ask for a retry and fail argument validation."""
    attempts = {"flaky": 0}

    async def double(value: int) -> int:
        """Twice the value."""
        return value * 2

    async def lookup(key: str) -> str:
        """Look a key up (it never exists)."""
        raise ToolFailed(f"Key {key!r} does not exist.")

    async def flaky(x: str) -> dict[str, Any]:
        """Works on the second call."""
        attempts["flaky"] += 1
        if attempts["flaky"] == 1:
            raise ModelRetry("Temporarily unavailable, call again.")
        return {"x": x, "attempt": attempts["flaky"]}

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        history = seen(messages)
        if history.responses == 0:
            yield {0: DeltaThinkingPart(content="I should ")}
            yield {0: DeltaThinkingPart(content="use the tools.", signature="sig-part1")}
            yield {0: DeltaThinkingPart(signature="-part2")}
            yield "Let me "
            yield "call some tools."
            calls = [("double", '{"value": 21}', "call-double"), ("lookup", '{"key": "missing"}', "call-lookup"),
                     ("flaky", '{"x": "hello"}', "call-flaky-1"), ("double", '{"value": "many"}', "call-double-bad")]
            for i, (name, args, call_id) in enumerate(calls):
                for chunk in tool_call(10 + i, name, args, call_id):
                    yield chunk
        elif history.responses == 1:
            for chunk in [*tool_call(0, "flaky", '{"x": "hello"}', "call-flaky-2"),
                          *tool_call(1, "double", '{"value": 5}', "call-double-2")]:
                yield chunk
        else:
            yield "Done: 42, the lookup failed, "
            yield "flaky worked on retry, and 10."

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-tools"),
                  capabilities=tools(double, lookup, flaky))
    return Scenario("tools_and_reasoning", [await collect(agent.stream("Exercise the tools."))])


async def steering() -> Scenario:
    """Immediate steering preempts a streaming response; queued steering
    arrives while a tool runs."""

    async def slow_tool(seconds: float) -> str:
        """Sleep a little."""
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        history = seen(messages)
        prompts = " | ".join(history.prompts)
        if "ALSO_QUEUED" in prompts:
            yield "Final answer after "
            yield "both steering inputs."
        elif "STEER_NOW" in prompts:
            if "slow_tool" in history.returns:
                yield "Tool done, "
                yield "waiting for more."
            else:
                yield "Switching as asked. "
                for chunk in tool_call(1, "slow_tool", '{"seconds": 1.0}', "call-slow"):
                    yield chunk
        else:
            yield "Starting a long essay: "
            for i in range(50):
                await asyncio.sleep(0.1)
                yield f"paragraph {i}. "

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-steering"),
                  capabilities=tools(slow_tool))
    sent = {"immediate": False, "queued": False}
    tasks: list[asyncio.Task[str]] = []

    async def on_item(stream: Any, item: Any) -> None:
        kind = type(getattr(item, "event", None)).__name__
        if not sent["immediate"] and kind == "PartDeltaEvent":
            sent["immediate"] = True
            tasks.append(asyncio.create_task(stream.steer("STEER_NOW: do it differently", immediate=True)))
        elif not sent["queued"] and kind == "FunctionToolCallEvent":
            sent["queued"] = True
            tasks.append(asyncio.create_task(stream.steer("ALSO_QUEUED: and mention this")))

    bindings = RunBindings.embedded(tool_execution=ToolExecutionRuntime())
    run = await collect(agent.stream("Write a long essay.", bindings=bindings), on_item)
    await asyncio.gather(*tasks)
    return Scenario("steering", [run])


async def approval_denied() -> Scenario:
    """A tool that needs approval suspends the Run; the next Run is resumed
    with the approval denied."""

    async def deploy(env: str) -> str:
        """Deploy to an environment (needs approval)."""
        return f"deployed to {env}"

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        history = seen(messages)
        if "deploy" in history.returns:
            yield "Deployment was not done: "
            yield str(history.returns["deploy"][-1].content)
        else:
            yield "I will deploy."
            for chunk in tool_call(1, "deploy", '{"env": "prod"}', "call-deploy"):
                yield chunk

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-approval"),
                  capabilities=tools(Tool(deploy, requires_approval=True)))
    first = await collect(agent.stream("Deploy to prod."))
    suspended = result_of(first)
    assert suspended.status == "suspended", suspended
    call_id = suspended.deferred.approvals[0].target_call.tool_call_id
    answers = suspended.deferred.build_results(approvals={call_id: ToolDenied("Not allowed on Fridays.")})
    second = await collect(agent.stream(previous_state=suspended.state,
                                        deferred_resume=DeferredToolResume(suspended.deferred, answers)))
    return Scenario("approval_denied", [first, second])


async def deferred_call_and_approval() -> Scenario:
    """One tool is run by the client (an external call), another needs
    approval; the next Run is resumed with the client's answer and the approval."""

    async def ask_client(question: str) -> str:
        """Ask the client application (it answers, not this process)."""
        raise CallDeferred({"ui": "prompt", "question": question})

    async def delete_file(ctx: RunContext[AgentContext], path: str) -> str:
        """Delete a file (needs approval)."""
        if not ctx.tool_call_approved:
            raise ApprovalRequired({"reason": "destructive", "path": path})
        return f"deleted {path}"

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        history = seen(messages)
        if history.returns:
            yield "The client said: "
            yield str(history.returns["ask_client"][-1].content)
            yield "; and: "
            yield str(history.returns["delete_file"][-1].content)
        else:
            for chunk in [*tool_call(0, "ask_client", '{"question": "Which file?"}', "call-ask"),
                          *tool_call(1, "delete_file", '{"path": "/tmp/x.txt"}', "call-delete")]:
                yield chunk

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-deferred"),
                  capabilities=tools(ask_client, delete_file))
    first = await collect(agent.stream("Ask the client, then delete the file."))
    suspended = result_of(first)
    assert suspended.status == "suspended", suspended
    answers = suspended.deferred.build_results(
        calls={c.target_call.tool_call_id: "x.txt, please" for c in suspended.deferred.calls},
        approvals={c.target_call.tool_call_id: True for c in suspended.deferred.approvals})
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
        history = seen(messages)
        if any("Are you done" in p for p in history.prompts):
            yield "The long task was interrupted: "
            yield str([r.content for r in history.returns.get("long_task", [])])[:200]
            return
        yield "Starting the long task."
        for chunk in tool_call(1, "long_task", '{"n": 1}', "call-long"):
            yield chunk

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-cancel"),
                  capabilities=tools(long_task))

    async def on_item(stream: Any, item: Any) -> None:
        # Cancel from the consumer, between two items, once the tool has started.
        if type(getattr(item, "event", None)).__name__ == "FunctionToolCallEvent":
            await asyncio.sleep(0.3)
            stream.cancel()

    first = await collect(agent.stream("Run the long task."), on_item)
    cancelled = result_of(first)
    assert cancelled.status == "cancelled", cancelled
    second = await collect(agent.stream("Are you done?", previous_state=cancelled.state))
    return Scenario("cancel_during_tool", [first, second])


async def failed_run() -> Scenario:
    """The model raises after some text."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        yield "Partial text before "
        yield "the crash"
        raise RuntimeError("model exploded")

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-failed"))
    return Scenario("failed_run", [await collect(agent.stream("Fail, please."))])


def _recovery(attempts: int) -> ModelRecoveryPolicy:
    return ModelRecoveryPolicy(enabled=True, max_attempts=attempts, backoff_initial_seconds=0.01,
                               backoff_max_seconds=0.02)


async def provider_error_exhausted() -> Scenario:
    """Every attempt ends in a provider error (HTTP 503) until recovery gives up."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        yield "Partial "
        raise ModelHTTPError(status_code=503, model_name="fixture-overloaded", body={"error": "overloaded"})

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-overloaded"),
                  model_recovery=_recovery(2))
    return Scenario("provider_error_exhausted", [await collect(agent.stream("Fail with a provider error."))])


async def provider_error_recovered() -> Scenario:
    """The first attempt ends in a provider error (HTTP 529), the retry succeeds."""
    calls = {"n": 0}

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            yield "Partial "
            raise ModelHTTPError(status_code=529, model_name="fixture-recovered", body={"error": "overloaded"})
        yield "Recovered "
        yield "answer."

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-recovered"),
                  model_recovery=_recovery(3))
    return Scenario("provider_error_recovered", [await collect(agent.stream("Recover from a provider error."))])


async def multimodal() -> Scenario:
    """An image input; tools returning an image, a document, an image typed as
    plain BinaryContent, a ToolReturn with content and metadata, and a caption list."""

    async def screenshot() -> BinaryImage:
        """Take a screenshot."""
        return BinaryImage(data=PNG, media_type="image/png")

    async def pdf() -> BinaryContent:
        """Export a document."""
        return BinaryContent(data=b"%PDF-1.4 fixture", media_type="application/pdf")

    async def photo() -> BinaryContent:
        """Take a photo (an image, but typed as plain binary content)."""
        return BinaryContent(data=PNG, media_type="image/png")

    async def chart() -> ToolReturn:
        """Render a chart."""
        return ToolReturn(return_value={"rendered": True, "points": 3},
                          content=["Chart attached:", BinaryImage(data=PNG, media_type="image/png")],
                          metadata={"renderer": "fixture"})

    async def captioned() -> list[Any]:
        """A caption and an image."""
        return ["A caption", BinaryImage(data=PNG, media_type="image/png")]

    names = ["screenshot", "pdf", "photo", "chart", "captioned"]

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if seen(messages).returns:
            yield "I see the images and the document."
        else:
            for i, name in enumerate(names):
                for chunk in tool_call(i, name, "{}", f"call-{name}", chunks=1):
                    yield chunk

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-multimodal"),
                  capabilities=tools(screenshot, pdf, photo, chart, captioned))
    prompt = ["Look at this image and use the tools.", BinaryImage(data=PNG, media_type="image/png")]
    return Scenario("multimodal", [await collect(agent.stream(prompt))])


def _child_model(name: str, text: str) -> FunctionModel:
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        yield f"[{name}] "
        yield text

    return FunctionModel(stream_function=respond, model_name=f"fixture-{name}")


def _delegating_model(name: str, subagent: str, task: str, then: str) -> FunctionModel:
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        history = seen(messages)
        if "delegate" in history.returns:
            yield f"[{name}] {then}: "
            yield str(history.returns["delegate"][-1].content)[:80]
        else:
            yield f"[{name}] delegating. "
            args = f'{{"subagent": "{subagent}", "prompt": "{task}"}}'
            for chunk in tool_call(1, "delegate", args, f"call-delegate-{name}"):
                yield chunk

    return FunctionModel(stream_function=respond, model_name=f"fixture-{name}")


def _delegating(model: FunctionModel, name: str, description: str, child: AgentDefinition) -> AgentDefinition:
    return AgentDefinition(agent=AgentSpec(), output_type=str, model=model, capabilities=(SubagentCapability(),),
                           subagents=(SubagentDefinition(name=name, description=description, agent=child),))


async def subagent() -> Scenario:
    """The root delegates to one child."""
    child = AgentDefinition(agent=AgentSpec(), output_type=str, model=_child_model("child", "child result"))
    root = HarnessBuilder().build(_delegating(_delegating_model("root", "researcher", "Find facts", "child said"),
                                              "researcher", "Finds facts.", child))
    return Scenario("subagent", [await collect(root.stream("Delegate to the researcher."))])


async def nested_subagents() -> Scenario:
    """The root delegates to a child that delegates to a grandchild."""
    grandchild = AgentDefinition(agent=AgentSpec(), output_type=str,
                                 model=_child_model("grandchild", "deep result"))
    middle = _delegating(_delegating_model("middle", "worker", "Do the deep work", "worker said"),
                         "worker", "Does deep work.", grandchild)
    root = HarnessBuilder().build(_delegating(_delegating_model("root", "planner", "Plan and delegate",
                                                                "planner said"), "planner", "Plans.", middle))
    return Scenario("nested_subagents", [await collect(root.stream("Delegate twice."))])


async def failed_child() -> Scenario:
    """The root delegates to a child whose model raises."""

    async def broken(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        yield "[broken] starting "
        raise RuntimeError("child model exploded")

    child = AgentDefinition(agent=AgentSpec(), output_type=str,
                            model=FunctionModel(stream_function=broken, model_name="fixture-broken"))
    root = HarnessBuilder().build(_delegating(_delegating_model("root", "broken", "Try", "child failed"),
                                              "broken", "Always fails.", child))
    return Scenario("failed_child", [await collect(root.stream("Delegate to a broken child."))])


async def structured_output() -> Scenario:
    """Structured output (a Weather), a builtin tool call and return, a file
    part, and output args that fail validation once."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        output_tool = info.output_tools[0].name if info.output_tools else "final_result"
        if seen(messages).responses == 0:
            yield {0: NativeToolCallPart(tool_name="web_search", args={"query": "weather paris"},
                                         tool_call_id="builtin-search-1", provider_name="function")}
            yield {1: NativeToolReturnPart(tool_name="web_search",
                                           content={"results": [{"title": "Paris weather", "temp": 21}]},
                                           tool_call_id="builtin-search-1", provider_name="function")}
            yield {2: FilePart(content=BinaryImage(data=PNG, media_type="image/png"))}
            yield "Searching done. "
            for chunk in tool_call(3, output_tool, '{"city": "Paris", "temp_c": "warm"}', "call-output-1"):
                yield chunk
        else:
            for chunk in tool_call(0, output_tool, '{"city": "Paris", "temp_c": 21}', "call-output-2"):
                yield chunk

    agent = build(FileFunctionModel(stream_function=respond, model_name="fixture-structured"), output_type=Weather)
    run = await collect(agent.stream("What's the weather in Paris? Answer structured."))
    return Scenario("structured_output", [run], output_type=Weather)


async def reused_call_ids() -> Scenario:
    """An OpenAI-compatible server's numbering: each response numbers its calls from ``call_0``, so the
    second response calls a tool under an id the first already answered."""

    async def add(a: int, b: int) -> int:
        """The sum of a and b."""
        return a + b

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        responses = seen(messages).responses
        if responses < 2:
            for chunk in [*tool_call(0, "add", f'{{"a": {responses}, "b": 1}}', "call_0"),
                          *tool_call(1, "add", f'{{"a": {responses}, "b": 2}}', "call_1")]:
                yield chunk
        else:
            yield "The sums are 1, 2, 2 and 3."

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-reused-ids"), capabilities=tools(add))
    return Scenario("reused_call_ids", [await collect(agent.stream("Add some numbers."))])


async def late_deltas() -> Scenario:
    """pydantic-ai ends a part when the next one starts, and still takes deltas for the earlier index: tool args
    after a thinking part began, and thinking after the text that followed it."""

    async def echo(text: str) -> str:
        """The text, as given."""
        return text

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if seen(messages).responses == 0:
            yield {0: DeltaToolCall(name="echo", json_args='{"text": ', tool_call_id="call-echo")}
            yield {1: DeltaThinkingPart(content="While the call ")}
            yield {0: DeltaToolCall(json_args='"late"}')}  # args of part 0, after part 1 began
            yield "Calling echo."
            yield {1: DeltaThinkingPart(content="streams, I think.")}  # thinking of part 1, after the text
        else:
            yield "Echoed."

    agent = build(FunctionModel(stream_function=respond, model_name="fixture-late-deltas"), capabilities=tools(echo))
    return Scenario("late_deltas", [await collect(agent.stream("Echo something."))])


async def interleaved_parts() -> Scenario:
    """A response whose parts interleave, as real providers stream them: text continued after a tool call of the
    same response began, and text part A continued after text part B began. pydantic-ai ends a part when the next
    one starts, so every continuation is a delta after its part's end; the response's final text holds it."""

    async def lookup(what: str) -> str:
        """What there is to know about ``what``."""
        return f"nothing open about {what}"

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if seen(messages).responses == 0:
            yield {"a": DeltaText("Let me look ")}
            yield {1: DeltaToolCall(name="lookup", json_args='{"what": ', tool_call_id="call-look")}
            yield {"a": DeltaText("at two things. ")}  # text of part 0, after the tool call (part 1) began
            yield {1: DeltaToolCall(json_args='"tasks"}')}
            yield {"b": DeltaText("First, the tasks")}
            yield {"a": DeltaText("Then the notes.")}  # text of part 0 again, after text part 2 began
            yield {"b": DeltaText(".")}
        else:
            yield "Nothing is open about the tasks."

    agent = build(FileFunctionModel(stream_function=respond, model_name="fixture-interleaved-parts"),
                  capabilities=tools(lookup))
    return Scenario("interleaved_parts", [await collect(agent.stream("Look at the tasks and the notes."))])


SCENARIOS: dict[str, Callable[[], Awaitable[Scenario]]] = {
    "tools_and_reasoning": tools_and_reasoning,
    "steering": steering,
    "approval_denied": approval_denied,
    "deferred_call_and_approval": deferred_call_and_approval,
    "cancel_during_tool": cancel_during_tool,
    "failed_run": failed_run,
    "provider_error_exhausted": provider_error_exhausted,
    "provider_error_recovered": provider_error_recovered,
    "multimodal": multimodal,
    "subagent": subagent,
    "nested_subagents": nested_subagents,
    "failed_child": failed_child,
    "structured_output": structured_output,
    "reused_call_ids": reused_call_ids,
    "late_deltas": late_deltas,
    "interleaved_parts": interleaved_parts,
}


# -- the limits of real Runs ------------------------------------------------------------------------
# Runs at the edges of what a13n-harness itself carries, made afresh for
# tests/a13n and never written as committed fixtures (one is tens of MB):
# ``LIMIT_SCENARIOS``.

DEEPEST = 196
"""The deepest tool result a13n-harness 0.21 carries end to end: from 197 levels its own
``all_messages()`` fails (pydantic's JSON parser stops at 200)."""

MiB = 1024 * 1024


class Report(BaseModel):
    """A tool result that is a pydantic model: a13n-harness keeps it whole (no preview)."""

    title: str
    body: str


def nested_json(depth: int) -> Any:
    """A JSON value nested ``depth`` arrays/objects deep."""
    value: Any = "bottom"
    for i in range(depth):
        value = [value] if i % 2 else {"level": value}
    return value


def one_tool_call(name: str, model_name: str, answer: str = "Done.") -> FunctionModel:
    """A model that calls ``name`` once without args, then answers."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if seen(messages).returns:
            yield answer
        else:
            for chunk in tool_call(0, name, "{}", f"call-{name}", chunks=1):
                yield chunk

    return FunctionModel(stream_function=respond, model_name=model_name)


def _returning(name: str, value: Callable[[], Any], returns: Any) -> Tool[Any]:
    async def tool() -> Any:
        return value()

    tool.__name__ = name
    tool.__doc__ = f"Return the {name.replace('_', ' ')}."
    tool.__annotations__["return"] = returns
    return Tool(tool, name=name)


async def deep_tool_result(depth: int = DEEPEST, name: str = "deep_tool_result") -> Scenario:
    """A tool returns JSON nested ``depth`` levels; the terminal item then holds it deeper still."""
    agent = build(one_tool_call("read_tree", "fixture-deep"),
                  capabilities=tools(_returning("read_tree", lambda: nested_json(depth), dict)))
    return Scenario(name, [await collect(agent.stream("Read the tree."))])


async def too_deep_tool_result() -> Scenario:
    """One level deeper than a13n-harness carries: the Run completes, but its terminal result can no
    longer give its messages."""
    return await deep_tool_result(DEEPEST + 1, "too_deep_tool_result")


async def large_tool_result() -> Scenario:
    """A tool returns a 2 MiB pydantic model of control characters (six bytes each once JSON-escaped):
    a13n-harness keeps it whole, and the terminal item holds it twice more."""
    report = Report(title="large", body="\x01" * (2 * MiB))
    agent = build(one_tool_call("read_report", "fixture-large"),
                  capabilities=tools(_returning("read_report", lambda: report, Report)))
    return Scenario("large_tool_result", [await collect(agent.stream("Read the report."))],
                    tool_types={"read_report": Report})


async def bytes_tool_result() -> Scenario:
    """A tool returns raw bytes that are not UTF-8; a13n-harness completes the Run."""
    agent = build(one_tool_call("read_blob", "fixture-bytes"),
                  capabilities=tools(_returning("read_blob", lambda: b"\xff\x00", bytes)))
    return Scenario("bytes_tool_result", [await collect(agent.stream("Read the blob."))])


LIMIT_SCENARIOS: dict[str, Callable[[], Awaitable[Scenario]]] = {
    "deep_tool_result": deep_tool_result,
    "too_deep_tool_result": too_deep_tool_result,
    "large_tool_result": large_tool_result,
    "bytes_tool_result": bytes_tool_result,
}


# -- running and writing -------------------------------------------------------------------------

async def run_scenario(name: str, attempts: int = 3) -> Scenario:
    """Run one scenario; a real Harness under timing (steering, cancel) may
    miss its moment, so a scenario is tried up to ``attempts`` times."""
    for attempt in range(1, attempts + 1):
        try:
            return await asyncio.wait_for({**SCENARIOS, **LIMIT_SCENARIOS}[name](), timeout=60)
        except (AssertionError, RuntimeError, TimeoutError, asyncio.CancelledError) as e:
            if attempt == attempts:
                raise RuntimeError(f"scenario {name} failed {attempts} times; last: {type(e).__name__}: {e}") from e
            print(f"{name}: attempt {attempt} failed ({type(e).__name__}: {e}); trying again", file=sys.stderr)
    raise AssertionError("unreachable")  # pragma: no cover


async def run_scenarios(names: list[str] | None = None) -> list[Scenario]:
    return [await run_scenario(name) for name in (names or list(SCENARIOS))]


def journal_text(scenario: Scenario) -> str:
    """The scenario's wire-format journal: one line per item, Runs in order."""
    return "".join(encode(from_a13n(item)) + "\n" for item in scenario.items)


def write(scenario: Scenario, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{scenario.name}.jsonl"
    path.write_text(journal_text(scenario), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where to write (default {DEFAULT_OUT})")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"scenarios to run (default: all of {', '.join(SCENARIOS)}; by name only: "
                             f"{', '.join(LIMIT_SCENARIOS)})")
    args = parser.parse_args(argv)
    # The failing scenarios fail on purpose: keep the Harness's warning (with a traceback) about each out of the way.
    logging.getLogger("a13n_harness").setLevel(logging.ERROR)
    unknown = [name for name in args.names if name not in SCENARIOS and name not in LIMIT_SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {unknown[0]!r} (known: {', '.join([*SCENARIOS, *LIMIT_SCENARIOS])})")
    started = time.monotonic()
    for name in args.names or list(SCENARIOS):
        t0 = time.monotonic()
        scenario = asyncio.run(run_scenario(name))
        path = write(scenario, args.out)
        print(f"{path}: {len(scenario.runs)} run(s), {len(scenario.items)} items ({time.monotonic() - t0:.1f} s)",
              file=sys.stderr)
    print(f"done in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
