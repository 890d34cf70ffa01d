"""Run a13n-harness-ui 0.21 offline through six scenarios and print what it stores and what it sends live.

Usage (in a venv with a13n-harness-ui 0.21 and a13n-stream-protocol 0.21, and harness-agui for ``--compat``;
``make test-harness-ui`` makes one)::

    python tools/harness_ui_transcript.py [--compat] [--scenario NAME ...] [--price-updates] OUT.json

One a13n-harness-ui App (``open_harness_ui_app``, its own Host object: the TUI and the web UI sit on it) is
opened on a configuration tree and a data root made afresh in a temporary folder. Its Agent's model is a
pydantic-ai ``FunctionModel`` that plays a script (a13n-harness-ui builds its models from the configured
route; that one function is replaced, nothing else). Each scenario is one new Thread and a Run of it:

- ``retry``: a call of ``task_list`` with an argument it does not take (the tool refuses it: the call is
  retried), the call again, properly, and the answer;
- ``subagent``: a ``delegate`` to the configured subagent ``agent-helper``, whose Run answers on its own,
  a ``wait_subagent`` for that answer, then the answer;
- ``approval``: a call of ``task_create``, which the Agent's ``ToolPermissionsCapability`` rule makes ask
  for approval, so the Run suspends; the driver approves it (``respond_decisions``), and the Run resumed runs
  the tool and answers;
- ``supplement``: a call of ``lookup``, a tool of a capability the driver gives the App as its Host
  (``HarnessUiIntegrations``), which returns a ``ToolReturn`` whose ``content`` is a supplement for the model
  only, then the answer;
- ``parallel``: one response with two calls of the Host capability's tools, ``hold`` and ``release``, the
  first of which ends only after the second, then the answer;
- ``cancel``: a response that says something and then never ends; the driver cancels the Run
  (``cancel_root_operation``) once the Host has sent that text live.

For each, three things are written: the display history a13n-harness-ui stored for the Thread (the
DisplayFold items it saves with its checkpoint), the transcript page it serves from it, and every live event
the App publishes for the Thread (``HarnessUiApp.live_events``, what its web UI and TUI follow: each AG-UI
event of the root Run and of its subagent's, with its envelope), in order, as JSON. What differs between two
Runs by nature is replaced by stable names: ids a13n-harness and a13n-harness-ui make (threads, runs, items,
model attempts, digests) become ``<id-1>``, ``<id-2>``, ... in order of appearance within the scenario, times
become ``<time>``, the temporary folder ``<root>``. The live events are grouped by Run (the root Run first,
then its subagent's), each Run's in the order sent, without the hub's sequence number: how a child's events
interleave with its parent's is the Host's scheduling, which varies from Run to Run.

Nothing reaches the network: the configuration turns a13n-harness-ui's price-table update off
(``process.pricing_auto_update: false``; on, it fetches genai-prices' table from raw.githubusercontent.com
when the App opens), the one other network client it starts by itself (the update check) belongs to its
CLI, which this driver does not use, and tracing stays off (``instrumentation=None``). ``--price-updates``
leaves the price-table update on (the test shows that its network guard catches it).

With ``--compat`` the compat package is put behind the name ``a13n_stream_protocol``
(``harness_agui.compat.install()``) before a13n-harness-ui is imported, so its producer tap, its display fold,
its live publication and its checkpoints run on harness-agui.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROMPTS = {
    "retry": "How many tasks are open? Then tell me 6 times 7.",
    "subagent": "Ask the helper to greet us.",
    "approval": "Create a task to water the plants.",
    "supplement": "Look up the answer.",
    "parallel": "Hold the door until you release it.",
    "cancel": "Count slowly to a million.",
}
CHILD_PROMPT = "Say hello to the user."

_CONFIG = 'schema_version: "1"\ndefaults:\n  agent: agent-offline\n'
_NO_PRICE_UPDATES = "process:\n  pricing_auto_update: false\n"
_MODEL = """schema_version: "1"
kind: model
id: model-offline
name: Offline
route: "openai:gpt-4o"
authentication:
  kind: api_key
  env: HARNESS_UI_OFFLINE_KEY
"""
_AGENT = """schema_version: "1"
kind: agent
id: agent-offline
name: Offline
model: model-offline
capabilities:
  - capability: offline_tools
  - capability: ToolPermissionsCapability
    configuration:
      rules:
        "tool/a13n-working-state-tools/task_create": ask
subagents:
  - agent: agent-helper
"""
_HELPER = """schema_version: "1"
kind: agent
id: agent-helper
name: Helper
model: model-offline
instructions: "Greet the user."
"""


def _parts(messages: list[Any]) -> list[Any]:
    from pydantic_ai.messages import ModelRequest

    return [part for message in messages if isinstance(message, ModelRequest) for part in message.parts]


def _scenario_of(parts: list[Any]) -> str:
    from pydantic_ai.messages import UserPromptPart

    said = " ".join(text for part in parts if isinstance(part, UserPromptPart)
                    for text in ([part.content] if isinstance(part.content, str) else part.content)
                    if isinstance(text, str))
    if CHILD_PROMPT in said:
        return "child"
    for name, prompt in PROMPTS.items():
        if prompt in said:
            return name
    raise AssertionError(f"no scenario's prompt in {parts!r}")


def _execution_id(content: Any) -> str:
    """The id of the child's execution in ``delegate``'s result."""
    found = re.search(r'"execution_id":\s*"([^"]+)"', content if isinstance(content, str) else json.dumps(content))
    assert found is not None, f"no execution id in {content!r}"
    return found.group(1)


def _offline_model() -> Any:
    from pydantic_ai.messages import RetryPromptPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    async def respond(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        parts = _parts(messages)
        returns = [part for part in parts if isinstance(part, ToolReturnPart)]
        answers = [part for part in parts if isinstance(part, RetryPromptPart | ToolReturnPart)]
        match _scenario_of(parts):
            case "retry" if not answers:
                yield "Let me look at the tasks. "
                yield {0: DeltaToolCall(name="task_list", json_args='{"status": "open"}', tool_call_id="call-1")}
            case "retry" if not any(part.outcome == "success" for part in returns):
                yield {0: DeltaToolCall(name="task_list", json_args="{}", tool_call_id="call-2")}
            case "retry":
                yield "There are no open tasks. "
                yield "And 6 times 7 is 42."
            case "subagent" if not returns:
                arguments = json.dumps({"subagent_name": "agent-helper", "prompt": CHILD_PROMPT})
                yield {0: DeltaToolCall(name="delegate", json_args=arguments, tool_call_id="call-1")}
            case "subagent" if len(returns) == 1:  # the child runs on its own: wait for its answer
                arguments = json.dumps({"execution_id": _execution_id(returns[0].content)})
                yield {0: DeltaToolCall(name="wait_subagent", json_args=arguments, tool_call_id="call-2")}
            case "subagent":
                yield "The helper said hello."
            case "child":
                yield "Hello from the helper!"
            case "approval" if not returns:
                arguments = json.dumps({"subject": "Water the plants", "description": "Before noon."})
                yield {0: DeltaToolCall(name="task_create", json_args=arguments, tool_call_id="call-1")}
            case "approval":
                yield "I created the task."
            case "supplement" if not returns:
                yield {0: DeltaToolCall(name="lookup", json_args='{"topic": "answer"}', tool_call_id="call-1")}
            case "supplement":
                yield "The answer is 42."
            case "parallel" if not returns:
                yield "Both at once. "
                yield {0: DeltaToolCall(name="hold", json_args='{"key": "door"}', tool_call_id="call-1")}
                yield {1: DeltaToolCall(name="release", json_args='{"key": "door"}', tool_call_id="call-2")}
            case "parallel":
                yield "The door was held until it was released."
            case "cancel":
                yield "One, two, "
                await asyncio.Event().wait()  # never set: the Run ends only by its cancellation
            case other:
                raise AssertionError(f"no script for {other}")

    return FunctionModel(stream_function=respond, model_name="offline")


def _offline_capability() -> type[Any]:
    """A Host capability with the tools a13n-harness-ui has no offline equivalent of.

    ``lookup`` returns a ``ToolReturn`` whose ``content`` is a supplement for the model only. ``hold`` returns
    only once ``release`` of the same key has run: two calls of them in one response end in a known order
    (the release first), where two calls of a13n-harness-ui's own tools end in either order from Run to Run.
    """
    from pydantic_ai import FunctionToolset, ToolReturn
    from pydantic_ai.capabilities import AbstractCapability

    released: dict[str, asyncio.Event] = {}

    @dataclass
    class OfflineTools(AbstractCapability[Any]):
        @classmethod
        def get_serialization_name(cls) -> str:
            return "offline_tools"

        def get_toolset(self) -> Any:
            toolset: FunctionToolset[Any] = FunctionToolset()

            @toolset.tool_plain
            def lookup(topic: str):  # no return hint: pydantic-ai would look this local ToolReturn up globally
                """Look a topic up."""
                return ToolReturn(return_value=f"{topic}: 42", content=[f"A note on {topic} for the model only."])

            @toolset.tool_plain
            async def hold(key: str) -> str:
                """Wait until the key is released."""
                await asyncio.wait_for(released.setdefault(key, asyncio.Event()).wait(), 60)
                # Once both are done, a13n-harness may send their results in either order: end well after.
                await asyncio.sleep(1)
                return f"{key} held until released"

            @toolset.tool_plain
            async def release(key: str) -> str:  # on the event loop: hold's Event is set where it waits
                """Release the key."""
                released.setdefault(key, asyncio.Event()).set()
                return f"{key} released"

            return toolset

    return OfflineTools


_LIVE_QUIET_SECONDS = 0.5  # the live events of a Run that ended are all sent once none came for this long


async def _scenario(app: Any, project_id: str, name: str) -> dict[str, Any]:
    """Run one scenario on a new Thread: what the App stored for it and what it sent live."""
    from a13n_harness_ui.surfaces import ApprovalDecision, DecisionResponseBatch, NewThreadDefaults

    thread = await app.create_thread(defaults=NewThreadDefaults(project_id=project_id, agent_id="agent-offline"))
    thread_id = thread.thread_id
    live: list[dict[str, Any]] = []
    said = asyncio.Event()  # the first text the model says, sent live

    async with app.live_events(root_thread_id=thread_id) as subscription:
        async def follow() -> None:
            async for event in subscription:
                live.append(event.model_dump(mode="json"))
                if event.event_type == "TEXT_MESSAGE_CONTENT":
                    said.set()

        follower = asyncio.create_task(follow())
        receipt = await app.submit_thread(thread_id=thread_id, prompt=PROMPTS[name])
        if name == "cancel":
            await asyncio.wait_for(said.wait(), 120)
            await app.cancel_root_operation(receipt.receipt_id)
        operations = [await app.wait_root_operation(receipt.receipt_id)]
        if name == "approval":
            detail = await app.get_thread(thread_id)
            decisions = await app.thread_decisions(thread_id=thread_id, expected_continuation_id=detail.continuation_id)
            assert decisions is not None, "the approval Run did not ask for a decision"
            response = DecisionResponseBatch(
                expected_continuation_id=decisions.continuation_id,
                responses=tuple(ApprovalDecision(request_id=request.request_id, approved=True)
                                for request in decisions.requests))
            receipt = await app.respond_decisions(thread_id=thread_id, response=response)
            operations.append(await app.wait_root_operation(receipt.receipt_id))
        seen = -1
        while seen != len(live):
            seen = len(live)
            await asyncio.sleep(_LIVE_QUIET_SECONDS)
        if follower.done():
            follower.result()  # a subscriber that fell behind its buffer raises here: events were lost
        follower.cancel()
        live.extend(event.model_dump(mode="json") for event in subscription.drain_pending())
    for operation in operations:
        print(name, operation.status.value, operation.failure, file=sys.stderr)
    runs: dict[str, dict[str, Any]] = {}  # each Run's events in order; a child's interleave with its parent's
    for event in live:
        del event["sequence"]  # the hub's counter over all Runs: it numbers the interleaving
        run = runs.setdefault(event["run_id"], {"run_kind": event["run_kind"], "events": []})
        run["events"].append(event)
    return {
        "operations": [operation.status.value for operation in operations],
        **await _stored(app, thread_id),
        "live_events": sorted(runs.values(), key=lambda run: run["run_kind"] != "root"),
    }


async def _stored(app: Any, thread_id: str) -> dict[str, Any]:
    """The stored display history of the Thread, and the transcript page served from it."""
    page = await app.get_thread_transcript(thread_id=thread_id, limit=100)
    # The checkpoint a13n-harness-ui stored for the Thread, with its display archive (no public read).
    thread = await app._projections._required_thread(thread_id)
    history = None if thread.continuation is None else (
        await app._store.read_continuation(thread_id, thread.continuation, include_display=True)).display_history
    return {
        "display_history": None if history is None else history.model_dump(mode="json"),
        "transcript": page.model_dump(mode="json"),
    }


async def _run(config: Path, data: Path, names: list[str], price_updates: bool) -> dict[str, Any]:
    from a13n_harness_ui.app import HarnessUiIntegrations, open_harness_ui_app
    from a13n_harness_ui.settings_loader import load_harness_ui_settings

    source = await load_harness_ui_settings(config, data_root=data)
    integrations = HarnessUiIntegrations(capabilities={"offline_tools": _offline_capability()})
    async with open_harness_ui_app(source.settings, configuration_path=source.path,
                                   configuration_error=source.candidate_error, host_mode="local",
                                   integrations=integrations, instrumentation=None) as app:
        status = await app.status()
        assert status.accepted_generation_digest and not status.capability_warnings, status
        if price_updates:  # wait for the first fetch of the price table to be tried
            import genai_prices

            try:
                await genai_prices.wait_prices_updated_async(timeout=60)
            except Exception as error:
                print(f"the price-table update failed: {error!r}", file=sys.stderr)
        project_id = await app.ensure_cwd_project(Path.cwd())
        return {name: normalized(await _scenario(app, project_id, name)) for name in names}


_IDS = re.compile(r"\b(?:[a-z][a-z-]*[-_])?[0-9a-f]{16,}\b"  # thread_<hex>, run-<hex>, itm_<hex>, usage-<hex>, ...
                  r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # invocations: uuid4
                  r"|\btask-change-[0-9A-Za-z_-]{12}(?![0-9A-Za-z_-])")  # a working-state change: url-safe random
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?$")
_TIME_KEYS = re.compile(r"(?:_at|At|timestamp|Timestamp|time)$")


def normalized(value: Any, names: dict[str, str] | None = None) -> Any:
    """``value`` with generated ids named in order of appearance and times replaced (see the module doc)."""
    names = {} if names is None else names
    if isinstance(value, dict):
        return {normalized(key, names): "<time>" if _TIME_KEYS.search(key) and isinstance(item, int | float | str)
                and item else normalized(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [normalized(item, names) for item in value]
    if isinstance(value, str):
        if _TIME.match(value):
            return "<time>"
        return _IDS.sub(lambda m: names.setdefault(m.group(0), f"<id-{len(names) + 1}>"), value)
    return value


def _replace_model(build: Callable[[], Any]) -> None:
    import a13n_harness_ui.model_runtime as model_runtime

    async def build_offline_model(*args: Any, **kwargs: Any) -> Any:
        return build()

    model_runtime.build_api_key_model = build_offline_model  # the one replaced function: no network, no key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compat", action="store_true", help="put harness-agui behind a13n_stream_protocol")
    parser.add_argument("--scenario", action="append", choices=list(PROMPTS), help="run only these (repeatable)")
    parser.add_argument("--price-updates", action="store_true", help="leave the price-table update on (network)")
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.compat:
        from harness_agui.compat import install

        install()
    _replace_model(_offline_model)
    import a13n_stream_protocol

    using = a13n_stream_protocol.__name__
    assert using.startswith("harness_agui.") == args.compat, using
    root = Path(tempfile.mkdtemp(prefix="harness-ui-"))
    config = root / "config" / "a13n-harness-ui.yaml"
    (config.parent / "models").mkdir(parents=True)
    (config.parent / "agents").mkdir()
    config.write_text(_CONFIG + ("" if args.price_updates else _NO_PRICE_UPDATES))
    (config.parent / "models" / "model-offline.yaml").write_text(_MODEL)
    (config.parent / "agents" / "agent-offline.yaml").write_text(_AGENT)
    (config.parent / "agents" / "agent-helper.yaml").write_text(_HELPER)
    (root / "work").mkdir()
    os.environ["HARNESS_UI_OFFLINE_KEY"] = "offline"
    os.environ["A13N_OFFICIAL_MODELS_AUTO_UPDATE"] = "0"  # a13n-harness's model catalog refresh (network)
    os.environ["HOME"] = str(root)
    os.chdir(root / "work")
    scenarios = asyncio.run(_run(config, root / "data", args.scenario or list(PROMPTS), args.price_updates))
    text = json.dumps({"a13n_stream_protocol": using, "scenarios": scenarios}, indent=1, sort_keys=True)
    args.out.write_text(text.replace(str(root), "<root>") + "\n")  # the folder of this Run, wherever it shows
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
