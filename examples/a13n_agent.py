"""A real a13n-harness agent to serve over AG-UI: a tool, a subagent, an approval and the client's tools.

    python examples/a13n_agent.py          # three turns through the runner, on a SQLite journal

``agent`` is an a13n-harness ``ExecutableAgent``; ``runner`` serves it (``harness_agui.serve_a13n``).
Its model is pydantic-ai's ``FunctionModel`` playing a scripted model, so it runs offline and the same
way every time; put ``model="openai:gpt-5"`` (or any pydantic-ai model) in its place for a real one.

What the scripted model does with the latest user message:
- "deploy ...": says so and calls ``deploy``, which needs the user's approval (the Run suspends);
- "ask me ..." when the client offers tools (``RunAgentInput.tools``): calls the first of them, which
  the client runs (the Run suspends until the client sends the tool's result);
- anything else: calls ``weather`` for the city it names (Lyon by default) and delegates a question
  about it to the ``researcher`` subagent;
and once the tools answered, it sums their results up.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from a13n_harness import AgentDefinition, AgentSpec, HarnessBuilder, SubagentDefinition
from a13n_harness.capabilities import SubagentCapability
from a13n_harness.tools.client import CLIENT_TOOL_MARKER_KEY, ClientToolsCapability, ClientToolsSpec
from ag_ui.core import RunAgentInput
from pydantic_ai import Tool
from pydantic_ai.capabilities import Capability
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from harness_agui.serve_a13n import A13nRunner

# -- the tools ------------------------------------------------------------------------------------


async def weather(city: str) -> dict[str, Any]:
    """Tomorrow's weather in a city."""
    return {"city": city, "temp_c": 18, "sky": "light rain"}


async def deploy(env: str) -> str:
    """Deploy the application to an environment (asks the user first)."""
    return f"deployed to {env}"


# -- the scripted models --------------------------------------------------------------------------


def said(messages: list[ModelMessage]) -> str:
    """The text of the user's latest input (a13n-harness sends it as a list of content parts, and its
    own context blocks as plain strings)."""
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


async def assistant(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    last = messages[-1]
    results = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    if results:
        found = []
        for result in results:
            content = result.content
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
    else:
        found = re.search(r"\bin ([A-Z][a-z]+)", text)
        city = found.group(1) if found else "Lyon"
        yield f"Let me check the weather in {city} and ask the researcher. "
        yield {1: DeltaToolCall(name="weather", json_args=f'{{"city": "{city}"}}')}
        yield {2: DeltaToolCall(name="delegate",
                                json_args=f'{{"subagent": "researcher", "prompt": "One fact about {city}"}}')}


async def researcher_model(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    yield "Its old town has covered passageways, "
    yield "the traboules."


# -- the agent --------------------------------------------------------------------------------------

researcher = AgentDefinition(agent=AgentSpec(), output_type=str,
                             model=FunctionModel(stream_function=researcher_model, model_name="example-researcher"))

agent = HarnessBuilder().build(AgentDefinition(
    agent=AgentSpec(), output_type=str,
    model=FunctionModel(stream_function=assistant, model_name="example-assistant"),
    capabilities=(
        Capability(id="example-tools", tools=[weather, Tool(deploy, requires_approval=True)]),
        SubagentCapability(),
        ClientToolsCapability(spec=ClientToolsSpec(allow_run_override=True)),  # the client's tools
    ),
    subagents=(SubagentDefinition(name="researcher", description="Finds facts about places.", agent=researcher),),
))

runner = A13nRunner(agent)


# -- three turns, as a server would run them ------------------------------------------------------


async def turn(journal: Any, body: dict[str, Any]) -> Any:
    """One request: the runner starts the Run, each item is journaled; returns the Run's result."""
    run = await runner.start(RunAgentInput.model_validate(body), journal=journal)
    async for item in run.items():
        journal.append(item, root_run_id=run.run_id)
    print(f"{body['runId']}: a13n run {run.run_id} on thread {run.thread_id}: {run.result.status}")
    return run.result


async def main() -> int:
    from harness_agui.host import SqliteSourceJournal

    thread = "6f1c6a40-5a43-4c58-9a3c-0d1b2f3e4a5b"  # @ag-ui/client's default: a uuid
    confirm = {"name": "confirm", "description": "Ask the user to confirm.",
               "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}
    with tempfile.TemporaryDirectory() as tmp:
        journal = SqliteSourceJournal(Path(tmp) / "host.db", synchronous="NORMAL")
        messages: list[dict[str, Any]] = [{"id": "u-1", "role": "user", "content": "Weather in Lyon tomorrow?"}]
        first = await turn(journal, {"threadId": thread, "runId": "r-1", "messages": messages})
        print("  answer:", first.output)
        messages += [{"id": "a-1", "role": "assistant", "content": first.output},
                     {"id": "u-2", "role": "user", "content": "Now deploy it."}]
        second = await turn(journal, {"threadId": thread, "runId": "r-2", "messages": messages})
        call = second.deferred.approvals[0].target_call.tool_call_id
        print("  waits for approval of", second.deferred.approvals[0].target_call.tool_name)
        approved = await turn(journal, {"threadId": thread, "runId": "r-3", "messages": messages, "resume": [
            {"interruptId": f"{call}:approval", "status": "resolved", "payload": {"approved": True}}]})
        print("  answer:", approved.output)
        messages += [{"id": "u-3", "role": "user", "content": "Ask me to confirm the release notes."}]
        third = await turn(journal, {"threadId": thread, "runId": "r-4", "messages": messages, "tools": [confirm]})
        client_call = third.deferred.calls[0].target_call
        print("  waits for the client's", client_call.tool_name, client_call.args)
        messages += [{"id": "a-4", "role": "assistant", "toolCalls": [{"id": client_call.tool_call_id,
                      "type": "function", "function": {"name": "confirm", "arguments": client_call.args}}]},
                     {"id": "t-4", "role": "tool", "toolCallId": client_call.tool_call_id, "content": "Confirmed."}]
        answered = await turn(journal, {"threadId": thread, "runId": "r-5", "messages": messages, "tools": [confirm]})
        print("  answer:", answered.output)
        runs = journal.runs()
        journal.close()
    ok = (first.status, second.status, approved.status, third.status, answered.status) == (
        "completed", "suspended", "completed", "suspended", "completed") and len(runs) == 5
    print("five a13n runs on one thread, each continuing the last:", ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
