"""A real a13n-harness agent to serve over AG-UI: a tool, a subagent, an approval and the client's tools.

    harness-agui serve examples.a13n_agent:agent   # serve it (AG-UI over HTTP; any AG-UI client)
    python examples/a13n_agent.py                  # three turns through the runner, on a SQLite journal

``agent`` is the a13n-harness ``ExecutableAgent`` of ``harness_agui.a13n.demo`` (what ``harness-agui serve
--demo`` serves): read that module for how it is built. Its model is pydantic-ai's ``FunctionModel``
playing a scripted model, so it runs offline and the same way every time; ``runner`` serves it
(``harness_agui.a13n.runner``).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from ag_ui.core import RunAgentInput

from harness_agui.a13n.demo import agent
from harness_agui.a13n.runner import A13nRunner

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
