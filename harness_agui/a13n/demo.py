"""A real a13n-harness agent to serve over AG-UI, offline: ``harness-agui serve --demo`` serves it when the
``a13n`` extra is installed (Python 3.13), and ``examples/a13n_agent.py`` holds a conversation with it.

``agent`` is an a13n-harness ``ExecutableAgent`` with a tool, a subagent, a tool that needs the user's
approval and the client's tools. Its model is pydantic-ai's ``FunctionModel`` playing a scripted model, so
it runs without a network and the same way every time; put ``model="openai:gpt-5"`` (or any pydantic-ai
model) in its place for a real one.

What the scripted model does with the latest user message:
- "deploy ...": says so and calls ``deploy``, which needs the user's approval (the Run suspends);
- "ask me ..." when the client offers tools (``RunAgentInput.tools``): calls the first of them, which the
  client runs (the Run suspends until the client sends the tool's result);
- "... essay ...": writes a long text slowly (a token every 50 ms: something to cancel);
- anything else: calls ``weather`` for the city it names (Lyon by default) and delegates a question about
  it to the ``researcher`` subagent;
and once the tools answered, it sums their results up. ``weather`` returns, besides its value, a note for
the model only (``display: false``): the projection never shows it to a client.

The module imports without a13n-harness; ``agent`` (and ``researcher``) are built on first use, which
needs it (``pip install 'harness-agui[a13n]'``, Python 3.13): ImportError otherwise.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["weather", "deploy", "MODEL_NOTE", "ESSAY_TOKENS", "ESSAY_PACE"]  # and agent, researcher: see below

MODEL_NOTE = "Forecast source: internal ensemble run 7f3a, for the model only."
"""The supplement ``weather`` returns for the model only (``display: false``)."""

ESSAY_TOKENS = 200
ESSAY_PACE = 0.05
"""An essay is ``ESSAY_TOKENS`` tokens, one every ``ESSAY_PACE`` seconds."""


# -- the tools ------------------------------------------------------------------------------------

async def weather(city: str) -> Any:
    """Tomorrow's weather in a city."""
    from pydantic_ai import TextContent, ToolReturn

    return ToolReturn(return_value={"city": city, "temp_c": 18, "sky": "light rain"},
                      content=[TextContent(MODEL_NOTE, metadata={"display": False})])


async def deploy(env: str) -> str:
    """Deploy the application to an environment (asks the user first)."""
    return f"deployed to {env}"


# -- the scripted models --------------------------------------------------------------------------

def said(messages: list[Any]) -> str:
    """The text of the user's latest input (a13n-harness sends it as a list of content parts, and its
    own context blocks as plain strings)."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
                    return " ".join(str(getattr(c, "content", c)) for c in part.content)
    return ""


def args_for(schema: dict[str, Any], text: str) -> str:
    """Arguments for a client tool: the user's words for each string property."""
    properties = schema.get("properties") or {}
    return json.dumps({name: text for name, spec in properties.items() if (spec or {}).get("type") == "string"})


async def assistant(messages: list[Any], info: Any) -> AsyncIterator[Any]:
    from a13n_harness.tools.client import CLIENT_TOOL_MARKER_KEY
    from pydantic_ai.messages import ModelRequest, ToolReturnPart
    from pydantic_ai.models.function import DeltaToolCall

    last = messages[-1]
    results = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    if results:
        found = []
        for result in results:
            content = result.content
            if isinstance(content, list):  # the tool's value and its supplements: the value is the answer
                content = content[0]
            if isinstance(content, dict) and "output" in content:  # a subagent's answer
                content = content["output"]
            found.append(f"{result.tool_name}: {str(content).rstrip('.')}")
        yield "Here is what I found. "
        yield "; ".join(found) + "."
        return
    text = said(messages)
    client_tools = [t for t in info.function_tools if CLIENT_TOOL_MARKER_KEY in (t.metadata or {})]
    if "deploy" in text.lower():
        yield "Deploying needs your approval. "
        yield {1: DeltaToolCall(name="deploy", json_args='{"env": "production"}')}
    elif "ask me" in text.lower() and client_tools:
        tool = client_tools[0]
        yield f"Let me ask you through {tool.name}. "
        yield {1: DeltaToolCall(name=tool.name, json_args=args_for(tool.parameters_json_schema, text))}
    elif "essay" in text.lower():
        for n in range(ESSAY_TOKENS):
            await asyncio.sleep(ESSAY_PACE)
            yield f"word{n} "
    else:
        named = re.search(r"\bin ([A-Z][a-z]+)", text)
        city = named.group(1) if named else "Lyon"
        yield f"Let me check the weather in {city} and ask the researcher. "
        yield {1: DeltaToolCall(name="weather", json_args=f'{{"city": "{city}"}}')}
        yield {2: DeltaToolCall(name="delegate",
                                json_args=f'{{"subagent": "researcher", "prompt": "One fact about {city}"}}')}


async def researcher_model(messages: list[Any], info: Any) -> AsyncIterator[Any]:
    yield "Its old town has covered passageways, "
    yield "the traboules."


# -- the agent --------------------------------------------------------------------------------------

@functools.cache
def _built() -> tuple[Any, Any]:
    """(the agent, the researcher's definition), built once; ImportError naming the extra without it."""
    try:
        from a13n_harness import AgentDefinition, AgentSpec, HarnessBuilder, SubagentDefinition
        from a13n_harness.capabilities import SubagentCapability
        from a13n_harness.tools.client import ClientToolsCapability, ClientToolsSpec
        from pydantic_ai import Tool
        from pydantic_ai.capabilities import Capability
        from pydantic_ai.models.function import FunctionModel
    except ImportError as e:
        raise ImportError("the a13n-harness demo agent needs a13n-harness (Python 3.13): "
                          "pip install 'harness-agui[a13n]'") from e
    researcher = AgentDefinition(agent=AgentSpec(), output_type=str,
                                 model=FunctionModel(stream_function=researcher_model, model_name="demo-researcher"))
    agent = HarnessBuilder().build(AgentDefinition(
        agent=AgentSpec(), output_type=str,
        model=FunctionModel(stream_function=assistant, model_name="demo-assistant"),
        capabilities=(
            Capability(id="demo-tools", tools=[weather, Tool(deploy, requires_approval=True)]),
            SubagentCapability(),
            ClientToolsCapability(spec=ClientToolsSpec(allow_run_override=True)),  # the client's tools
        ),
        subagents=(SubagentDefinition(name="researcher", description="Finds facts about places.",
                                      agent=researcher),),
    ))
    return agent, researcher


def __getattr__(name: str) -> Any:
    if name == "agent":
        return _built()[0]
    if name == "researcher":
        return _built()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
