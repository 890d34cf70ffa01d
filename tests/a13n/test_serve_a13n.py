# harness_agui.a13n.runner on real a13n-harness Runs (pydantic-ai FunctionModel, offline).
#
# Each request goes through what the server does with a runner, spelt out on
# the Host kit (``Host`` below): ``runner.start``, every item journaled under
# the Harness's own run id, the Run projected into the delivery log by
# ``project_run``; the wire ids are kept beside the Harness's, as the
# server's mapping will be. The agents are the example's
# (examples/a13n_agent.py: a tool, a subagent, an approval, client tools) and
# small scripted ones whose model records every request it is sent.

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

from a13n_harness import AgentSpec, HarnessBuilder, RunBindings  # noqa: E402
from a13n_harness.tools.client import CLIENT_TOOL_MARKER_KEY, ClientToolsCapability, ClientToolsSpec  # noqa: E402
from ag_ui.core import RunAgentInput  # noqa: E402
from ag_ui_validate.pytest_plugin import validate_agui  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelRequest,
    ModelResponse,
    TextContent,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import FunctionModel  # noqa: E402

from harness_agui.a13n import from_a13n, to_a13n  # noqa: E402
from harness_agui.a13n.runner import (
    AGUI_MESSAGE_ID,
    CONTEXT_SOURCE_ID,
    MAX_CONTEXT_BYTES,  # noqa: E402
    A13nRequest,
    A13nRun,
    A13nRunner,
    RunInputError,
    ThreadConflictError,
    interrupt_ids,
    source_thread_id,
)
from harness_agui.core.source import (  # noqa: E402
    ExtensionEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    InputEvent,
    ToolResultEvent,
)
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run  # noqa: E402
from harness_agui.wire.codec import decode, encode  # noqa: E402
from harness_agui.wire.held import HeldByClient

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "tests" / "node"
CONFIRM = {"name": "confirm", "description": "Ask the user to confirm something.",
           "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """examples/a13n_agent.py, imported as a module."""
    spec = importlib.util.spec_from_file_location("a13n_agent_example", ROOT / "examples" / "a13n_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# -- what the server does with a runner ---------------------------------------------------------

class Served:
    """One request served: the Run, its journaled items and the AG-UI events recorded for it."""

    def __init__(self, run: A13nRun, items: list[Any], events: list[dict[str, Any]]) -> None:
        self.run = run
        self.items = items
        self.events = events

    @property
    def terminal(self) -> HarnessRunResultEvent:
        last = self.items[-1]
        assert isinstance(last, HarnessRunResultEvent)
        return last

    def payloads(self, kind: type) -> list[Any]:
        return [i.event for i in self.items
                if isinstance(i, HarnessEvent) and i.run_id == self.run.run_id and isinstance(i.event, kind)]


class Host:
    def __init__(self, path: Path, runner: A13nRunner) -> None:
        self.journal = SqliteSourceJournal(path, synchronous="NORMAL")
        self.deliveries = SqliteDeliveryLog(path, synchronous="NORMAL")
        self.runner = runner
        self.wire: dict[tuple[str, str], tuple[str, str]] = {}  # the server's mapping: wire ids -> Harness ids

    def post(self, body: dict[str, Any], *, running: Callable[[str], bool] | None = None,
             on_item: Callable[[A13nRun, Any], Any] | None = None) -> Served:
        return asyncio.run(self._post(body, running, on_item))

    async def _post(self, body: dict[str, Any], running: Any, on_item: Any) -> Served:
        run = await self.runner.start(RunAgentInput.model_validate(body), journal=self.journal, running=running)
        self.wire[(run.wire_thread_id, run.wire_run_id)] = (run.thread_id, run.run_id)
        items = []
        async for item in run.items():
            await asyncio.to_thread(self.journal.append, item, root_run_id=run.run_id)
            items.append(item)
            if on_item is not None:
                on_item(run, item)
        await project_run(run.run_id, self.journal, self.deliveries)
        events = [json.loads(d.data) for d in self.deliveries.replay(run.run_id)]
        return Served(run, items, events)

    def refused(self, body: dict[str, Any], **options: Any) -> Any:
        runs = self.journal.runs()
        with pytest.raises((RunInputError, ThreadConflictError)) as caught:
            self.post(body, **options)
        assert self.journal.runs() == runs  # nothing was started
        return caught.value

    def close(self) -> None:
        self.journal.close()
        self.deliveries.close()


@pytest.fixture
def host_for(tmp_path: Path) -> Any:
    hosts: list[Host] = []

    def make(agent: Any, **options: Any) -> Host:
        host = Host(tmp_path / f"host-{len(hosts)}.db", A13nRunner(agent, **options))
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()


def body(thread: str, run: str, messages: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": messages, **more}


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def valid(events: list[dict[str, Any]], earlier_calls: frozenset[str] = frozenset()) -> None:
    """``events`` pass ag-ui-validate, but for the results of calls an earlier Run of the Thread started
    (``earlier_calls``): a resumed Run answers them, which the validator, seeing one Run, reports (AGUI207);
    the client, which saw both Runs, holds the calls."""
    report = validate_agui(events)
    problems = [d for d in report.diagnostics if d.severity in ("error", "warning")
                and not (d.rule == "AGUI207" and events[d.event_index].get("toolCallId") in earlier_calls)]
    assert problems == [], problems


def started_calls(events: list[dict[str, Any]]) -> frozenset[str]:
    return frozenset(e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START")


class Scripted:
    """A FunctionModel stream function that a test scripts; it records the messages of every request."""

    def __init__(self, reply: Callable[[list[Any], Any], AsyncIterator[Any]]) -> None:
        self.reply = reply
        self.requests: list[list[Any]] = []
        self.tools: list[list[str]] = []

    async def __call__(self, messages: list[Any], info: Any) -> AsyncIterator[Any]:
        self.requests.append(list(messages))
        self.tools.append([t.name for t in info.function_tools])
        async for chunk in self.reply(messages, info):
            yield chunk


async def echo(messages: list[Any], info: Any) -> AsyncIterator[Any]:
    yield "You said: "
    yield prompts(messages[-1])[-1] if prompts(messages[-1]) else "nothing"


def prompts(message: Any) -> list[str]:
    """The user's own prompts in a request (a13n-harness's context blocks are plain strings)."""
    out = []
    for part in getattr(message, "parts", ()):
        if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
            out.append("".join(c.content if isinstance(c, TextContent) else str(c) for c in part.content))
    return out


def scripted(reply: Any = echo, *, client_tools: bool = False) -> tuple[Any, Scripted]:
    model = Scripted(reply)
    capabilities = (ClientToolsCapability(spec=ClientToolsSpec(allow_run_override=True)),) if client_tools else ()
    agent = HarnessBuilder().build(AgentSpec(), output_type=str, model=FunctionModel(stream_function=model),
                                   capabilities=capabilities)
    return agent, model


# -- ids ---------------------------------------------------------------------------------------

def test_a_uuid_thread_gets_a_harness_thread_id_and_an_id_the_harness_accepts_is_kept() -> None:
    from a13n_harness.state import HarnessState

    wire = str(uuid.UUID(int=7))
    derived = source_thread_id(wire)
    assert derived.startswith("thread-") and len(derived) == 39 and derived == source_thread_id(wire)
    assert source_thread_id(str(uuid.UUID(int=8))) != derived
    assert HarnessState.new(thread_id=derived).thread_id == derived  # a13n-harness accepts it
    for kept in ("thread-" + "0123456789abcdef" * 2, "thread_0a1b2c", "support_chat"):
        assert source_thread_id(kept) == kept
    for other in ("Thread-1", "thread-XYZ", "x" * 300, "chat", "t" + "_a" * 200):
        assert source_thread_id(other).startswith("thread-") and source_thread_id(other) != other
    with pytest.raises(ValueError):
        source_thread_id("  ")


def test_the_run_is_journaled_under_the_harness_ids_while_the_request_names_it_on_the_wire(host_for) -> None:
    agent, _ = scripted()
    host = host_for(agent)
    thread, run_id = str(uuid.uuid4()), str(uuid.uuid4())
    served = host.post(body(thread, run_id, [user("u-1", "Hello there")]))
    run = served.run
    assert (run.wire_thread_id, run.wire_run_id) == (thread, run_id)
    assert run.thread_id == source_thread_id(thread) and run.run_id.startswith("run-")
    assert {(i.thread_id, i.run_id) for i in served.items} == {(run.thread_id, run.run_id)}
    assert host.journal.runs(thread_id=run.thread_id) == (run.run_id,)
    assert served.terminal.result.status == "completed" and served.terminal.result.output == "You said: Hello there"
    valid(served.events)


def test_a_delegating_run_is_journaled_as_one_stream_that_round_trips_with_to_a13n(host_for, example) -> None:
    host = host_for(example.agent)
    served = host.post(body(str(uuid.uuid4()), "r-1", [user("u-1", "What's the weather in Lyon tomorrow?")]))
    children = {i.run_id for i in served.items} - {served.run.run_id}
    assert len(children) == 1  # the researcher's Run, under its own ids, in the root's stream
    assert host.journal.root_of(children.pop()) == served.run.run_id
    for item in served.items:
        assert from_a13n(to_a13n(decode(encode(item)))) == item
    output = served.terminal.result.output
    assert "light rain" in output and "traboules" in output
    assert any(e["type"] == "SUBAGENT_STARTED" for e in served.events)
    valid(served.events)


def test_the_example_runs_as_a_script_and_reports_its_five_runs(tmp_path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "a13n_agent.py")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "five a13n runs on one thread, each continuing the last: True" in done.stdout
    assert "waits for approval of deploy" in done.stdout and "confirm: Confirmed." in done.stdout


# -- threads and history ---------------------------------------------------------------------------

def test_the_next_turn_continues_from_the_journal_and_sends_the_model_only_the_new_message(host_for) -> None:
    agent, model = scripted()
    host = host_for(agent)
    thread = str(uuid.uuid4())
    first = host.post(body(thread, "r-1", [user("u-1", "first question")]))
    second = host.post(body(thread, "r-2", [user("u-1", "first question"),
                                            {"id": "a-1", "role": "assistant", "content": "You said: first question"},
                                            user("u-2", "second question")]))
    assert second.run.thread_id == first.run.thread_id and second.run.message_ids == ("u-2",)
    seen = model.requests[-1]
    said = [p for m in seen for p in prompts(m)]
    assert said == ["first question", "second question"]  # turn 1 from the journal's state, turn 2 new
    assert [type(m) for m in seen if isinstance(m, ModelResponse)] == [ModelResponse]
    assert second.terminal.result.output == "You said: second question"
    assert host.journal.runs(thread_id=first.run.thread_id) == (first.run.run_id, second.run.run_id)


def test_a_host_may_refuse_history_that_holds_calls_of_the_agents_own_tools(host_for, example) -> None:
    approved = [user("u-0", "Deploy it."),
                {"id": "a-0", "role": "assistant", "toolCalls": [{"id": "call-0", "type": "function", "function": {
                    "name": "deploy", "arguments": '{"env": "production"}'}}]},
                {"id": "t-0", "role": "tool", "toolCallId": "call-0", "content": "approved by admin; deployed"},
                user("u-1", "Is it deployed?")]
    strict = host_for(example.agent, history_tools="client")
    refused = strict.refused(body(str(uuid.uuid4()), "r-1", approved))
    assert (refused.status, refused.code, refused.detail) == (
        422, "server_tool_in_history", {"messageId": "a-0", "toolCallId": "call-0"})
    asked = [user("u-0", "Confirm?"),
             {"id": "a-0", "role": "assistant", "toolCalls": [{"id": "call-0", "type": "function", "function": {
                 "name": "confirm", "arguments": '{"question": "ok?"}'}}]},
             {"id": "t-0", "role": "tool", "toolCallId": "call-0", "content": "yes"}, user("u-1", "Thanks.")]
    served = strict.post(body(str(uuid.uuid4()), "r-2", asked, tools=[CONFIRM]))  # the client's own tool
    assert served.terminal.result.status == "completed"
    assert host_for(example.agent).post(body(str(uuid.uuid4()), "r-3", approved)).terminal.result.status == (
        "completed")  # the default takes any history, as documented
    with pytest.raises(ValueError, match="history_tools"):
        A13nRunner(example.agent, history_tools="none")  # type: ignore[arg-type]


def test_prior_client_messages_of_a_first_run_become_the_models_history(host_for) -> None:
    agent, model = scripted()
    host = host_for(agent)
    messages = [
        {"id": "s-0", "role": "system", "content": "Not the agent's instructions."},
        user("u-0", "What is 2 + 2?"),
        {"id": "a-0", "role": "assistant", "content": "Let me compute.",
         "toolCalls": [{"id": "call-0", "type": "function",
                        "function": {"name": "add", "arguments": '{"a":2,"b":2}'}}]},
        {"id": "t-0", "role": "tool", "toolCallId": "call-0", "content": "4"},
        {"id": "a-1", "role": "assistant", "content": "It is 4."},
        user("u-1", "And times 3?"),
    ]
    served = host.post(body(str(uuid.uuid4()), "r-1", messages))
    seen = model.requests[0]
    assert [p for m in seen for p in prompts(m)] == ["What is 2 + 2?", "And times 3?"]
    returns = [p for m in seen if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [(r.tool_name, r.content, r.tool_call_id, r.metadata) for r in returns] == [
        ("add", "4", "call-0", {AGUI_MESSAGE_ID: "t-0"})]
    responses = [m for m in seen if isinstance(m, ModelResponse)]
    assert [[getattr(p, "content", None) or p.tool_name for p in r.parts] for r in responses] == [
        ["Let me compute.", "add"], ["It is 4."]]
    assert not any("Not the agent's instructions." in str(m) for m in seen)
    assert served.run.message_ids == ("u-1",)


def test_the_user_input_carries_the_clients_message_id_into_the_journal(host_for) -> None:
    agent, _ = scripted()
    host = host_for(agent)
    served = host.post(body(str(uuid.uuid4()), "r-1", [
        {"id": "u-7", "role": "user", "content": [
            {"type": "text", "text": "What is on "}, {"type": "text", "text": "this image?"},
            {"type": "image", "source": {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}}]}]))
    inputs = [p for p in served.payloads(InputEvent) if p.source == "user"]
    assert [(p.content if isinstance(p.content, str) else p.content["kind"], p.metadata[AGUI_MESSAGE_ID])
            for p in inputs] == [("What is on ", "u-7"), ("this image?", "u-7"), ("binary", "u-7")]
    assert served.run.message_ids == ("u-7",)


def test_media_parts_reach_the_model_and_media_it_cannot_take_is_refused(host_for) -> None:
    from pydantic_ai.messages import BinaryContent, ImageUrl

    agent, model = scripted()
    host = host_for(agent)

    def media(kind: str, source: dict[str, Any]) -> dict[str, Any]:
        return user("u-1", "") | {"content": [{"type": "text", "text": "Look:"}, {"type": kind, "source": source}]}

    host.post(body(str(uuid.uuid4()), "r-1", [
        media("image", {"type": "url", "value": "https://example.com/a.png", "mimeType": "image/png"})]))
    host.post(body(str(uuid.uuid4()), "r-1", [
        media("document", {"type": "data", "value": "JVBERi0xLjQ=", "mimeType": "application/pdf"})]))
    sent = [c for request in model.requests for m in request if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, UserPromptPart) and not isinstance(p.content, str) for c in p.content]
    assert [type(c).__name__ for c in sent] == ["TextContent", "ImageUrl", "TextContent", "BinaryContent"]
    assert isinstance(sent[1], ImageUrl) and sent[1].url == "https://example.com/a.png"
    assert isinstance(sent[3], BinaryContent) and sent[3].data == b"%PDF-1.4"
    for source in ({"type": "data", "value": "not base64!", "mimeType": "image/png"},
                   {"type": "file", "value": "file-123", "mimeType": "image/png"}):
        refused = host.refused(body(str(uuid.uuid4()), "r-1", [media("image", source)]))
        assert (refused.status, refused.code, refused.detail) == (422, "bad_message", {"messageId": "u-1"})


def test_earlier_messages_that_cannot_be_a_history_are_refused(host_for) -> None:
    agent, _ = scripted()
    host = host_for(agent)
    call = {"id": "a-0", "role": "assistant", "toolCalls": [
        {"id": "call-0", "type": "function", "function": {"name": "add", "arguments": "{}"}}]}
    unanswered = host.refused(body(str(uuid.uuid4()), "r-1", [user("u-0", "hi"), call, user("u-1", "and?")]))
    assert (unanswered.code, unanswered.detail) == ("bad_history", {"toolCallIds": ["call-0"]})
    orphan = {"id": "t-0", "role": "tool", "toolCallId": "call-9", "content": "4"}
    assert host.refused(body(str(uuid.uuid4()), "r-1", [orphan, user("u-1", "and?")])).code == "bad_history"


def test_messages_that_lack_the_threads_last_client_message_are_a_conflict(host_for) -> None:
    agent, _ = scripted()
    host = host_for(agent)
    thread = str(uuid.uuid4())
    host.post(body(thread, "r-1", [user("u-1", "one")]))
    host.post(body(thread, "r-2", [user("u-1", "one"), user("u-2", "two")]))
    behind = host.refused(body(thread, "r-3", [user("u-1", "one"), user("u-3", "three")]))
    assert (behind.status, behind.code, behind.detail) == (409, "history_conflict", {"messageId": "u-2"})
    edited = host.refused(body(thread, "r-3", [user("u-1", "one"), user("u-2", "TWO"), user("u-3", "three")]))
    assert (edited.status, edited.code) == (409, "history_conflict")
    assert edited.body() == {"error": "history_conflict", "message": edited.message, "detail": {"messageId": "u-2"}}


def test_a_request_with_nothing_new_is_refused(host_for) -> None:
    agent, _ = scripted()
    host = host_for(agent)
    thread = str(uuid.uuid4())
    first = host.post(body(thread, "r-1", [user("u-1", "one")]))
    again = [user("u-1", "one"), {"id": "x", "role": "assistant", "content": first.terminal.result.output}]
    refused = host.refused(body(thread, "r-2", again))
    assert (refused.status, refused.code) == (422, "nothing_new")
    assert host.refused(body(str(uuid.uuid4()), "r-3", again)).code == "nothing_new"  # a new thread, no question


def test_user_messages_the_projection_made_of_inputs_are_not_new_input(host_for) -> None:
    agent, model = scripted()
    host = host_for(agent)
    thread = str(uuid.uuid4())
    first = host.post(body(thread, "r-1", [user("u-1", "one")]))
    made = [e["messageId"] for e in first.events if e["type"] == "TEXT_MESSAGE_START" and e["role"] == "user"]
    assert made == ["u-1"]  # the client's question, under its own id, for the viewers that lack it
    messages = [user("u-1", "one"), *(user(i, "one") for i in made if i != "u-1"),
                {"id": "a-1", "role": "assistant", "content": "You said: one"}, user("u-2", "two")]
    second = host.post(body(thread, "r-2", messages))
    assert second.run.message_ids == ("u-2",)
    assert prompts(model.requests[-1][-1]) == ["two"]


def test_a_running_run_makes_the_thread_busy_and_a_lost_one_is_skipped(host_for) -> None:
    agent, model = scripted()
    host = host_for(agent)
    thread = str(uuid.uuid4())
    host.post(body(thread, "r-1", [user("u-1", "one")]))

    async def lose_a_run() -> str:  # a Run whose process died: journaled in part, never ended
        run = await host.runner.start(RunAgentInput.model_validate(
            body(thread, "r-2", [user("u-1", "one"), user("u-2", "two")])), journal=host.journal)
        items = run.items()
        for _ in range(3):
            host.journal.append(await anext(items), root_run_id=run.run_id)
        await items.aclose()
        return run.run_id

    lost = asyncio.run(lose_a_run())
    busy = host.refused(body(thread, "r-3", [user("u-1", "one"), user("u-2", "two")]))
    assert (busy.status, busy.code, busy.detail) == (409, "thread_busy", {"runId": lost})
    retried = host.post(body(thread, "r-3", [user("u-1", "one"), user("u-2", "two")]), running=lambda r: False)
    assert retried.run.message_ids == ("u-2",)  # the lost Run's message is new again
    assert [p for m in model.requests[-1] for p in prompts(m)] == ["one", "two"]


# -- human in the loop -------------------------------------------------------------------------

def test_an_approval_is_answered_through_resume_and_the_approved_tool_runs(host_for, example) -> None:
    host = host_for(example.agent)
    thread = str(uuid.uuid4())
    messages = [user("u-1", "Please deploy it.")]
    asked = host.post(body(thread, "r-1", messages))
    assert asked.terminal.result.status == "suspended"
    finished = asked.events[-1]
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt"
    ids = interrupt_ids(asked.terminal.result)
    assert [i["id"] for i in finished["outcome"]["interrupts"]] == list(ids)  # the ids the projection gives
    (interrupt_id,) = ids
    done = host.post(body(thread, "r-2", messages, resume=[
        {"interruptId": interrupt_id, "status": "resolved", "payload": {"approved": True}}]))
    (result,) = done.payloads(ToolResultEvent)
    assert (result.tool_name, result.outcome, result.content) == ("deploy", "success", "deployed to production")
    assert done.terminal.result.status == "completed" and done.run.message_ids == ()
    valid(done.events, started_calls(asked.events))


def test_a_denied_approval_gives_the_model_the_users_reason(host_for, example) -> None:
    host = host_for(example.agent)
    thread = str(uuid.uuid4())
    messages = [user("u-1", "Please deploy it.")]
    (interrupt_id,) = interrupt_ids(host.post(body(thread, "r-1", messages)).terminal.result)
    denied = host.post(body(thread, "r-2", messages, resume=[
        {"interruptId": interrupt_id, "status": "resolved", "payload": {"approved": False, "reason": "Not today."}}]))
    (result,) = denied.payloads(ToolResultEvent)
    assert (result.outcome, result.content) == ("denied", "Not today.")
    assert "Not today." in denied.terminal.result.output


def test_a_suspended_thread_refuses_answers_that_do_not_fit_its_waits(host_for, example) -> None:
    host = host_for(example.agent)
    thread = str(uuid.uuid4())
    messages = [user("u-1", "Please deploy it.")]
    (interrupt_id,) = interrupt_ids(host.post(body(thread, "r-1", messages)).terminal.result)
    cases = [
        ([user("u-2", "never mind")], None, "unanswered_interrupts"),
        ([], [{"interruptId": "nope", "status": "resolved", "payload": True}], "unknown_interrupt"),
        ([], [{"interruptId": interrupt_id, "status": "resolved", "payload": "yes"}], "bad_resume_payload"),
        ([], [{"interruptId": interrupt_id, "status": "resolved", "payload": True}] * 2, "duplicate_answer"),
    ]
    for more, resume, code in cases:
        refused = host.refused(body(thread, "r-2", messages + more, **({"resume": resume} if resume else {})))
        assert (refused.status, refused.code) == (422, code)
    cancelled = host.post(body(thread, "r-2", messages, resume=[{"interruptId": interrupt_id, "status": "cancelled"}]))
    assert [r.outcome for r in cancelled.payloads(ToolResultEvent)] == ["denied"]
    late = host.refused(body(thread, "r-3", messages, resume=[
        {"interruptId": interrupt_id, "status": "resolved", "payload": True}]))
    assert late.code == "unknown_interrupt"  # the thread waits for nothing any more
    new = host.refused(body(str(uuid.uuid4()), "r-4", messages, resume=[
        {"interruptId": interrupt_id, "status": "resolved", "payload": True}]))
    assert new.code == "nothing_to_resume"


# -- client tools --------------------------------------------------------------------------------

def ask_me(host: Host, thread: str) -> tuple[list[dict[str, Any]], Any]:
    messages = [user("u-1", "Ask me to confirm the plan.")]
    asked = host.post(body(thread, "r-1", messages, tools=[CONFIRM]))
    result = asked.terminal.result
    assert result.status == "suspended" and not result.deferred.approvals
    (call,) = result.deferred.calls
    assert CLIENT_TOOL_MARKER_KEY in result.deferred.metadata[call.tool_call_id]  # a client tool's wait
    assert [(e["toolCallName"], e["toolCallId"]) for e in asked.events if e["type"] == "TOOL_CALL_START"] == [
        ("confirm", call.tool_call_id)]
    messages.append({"id": "a-1", "role": "assistant", "toolCalls": [
        {"id": call.tool_call_id, "type": "function", "function": {"name": "confirm", "arguments": call.args}}]})
    return messages, call


def test_the_clients_tools_reach_the_model_and_its_tool_message_answers_the_call(host_for, example) -> None:
    host = host_for(example.agent)
    thread = str(uuid.uuid4())
    messages, call = ask_me(host, thread)
    messages.append({"id": "t-1", "role": "tool", "toolCallId": call.tool_call_id, "content": "Yes, go ahead."})
    answered = host.post(body(thread, "r-2", messages, tools=[CONFIRM]))
    (result,) = answered.payloads(ToolResultEvent)
    assert (result.tool_call_id, result.content, result.metadata) == (
        call.tool_call_id, "Yes, go ahead.", {AGUI_MESSAGE_ID: "t-1"})
    assert answered.run.message_ids == ("t-1",)
    assert "Yes, go ahead." in answered.terminal.result.output
    messages.append({"id": "u-2", "role": "user", "content": "Thanks."})
    after = host.post(body(thread, "r-3", messages))  # the tool message is the thread's now
    assert after.run.message_ids == ("u-2",)


def test_a_client_tool_can_be_answered_through_resume_as_well(host_for, example) -> None:
    host = host_for(example.agent)
    thread = str(uuid.uuid4())
    messages, call = ask_me(host, thread)
    answered = host.post(body(thread, "r-2", messages, tools=[CONFIRM], resume=[
        {"interruptId": call.tool_call_id, "status": "resolved", "payload": {"confirmed": True}}]))
    (result,) = answered.payloads(ToolResultEvent)
    assert (result.outcome, result.content) == ("success", {"confirmed": True})
    failed = host_for(example.agent)
    messages, call = ask_me(failed, thread)
    messages.append({"id": "t-1", "role": "tool", "toolCallId": call.tool_call_id, "content": "",
                     "error": "The dialog was closed."})
    closed = failed.post(body(thread, "r-2", messages, tools=[CONFIRM]))
    (result,) = closed.payloads(ToolResultEvent)
    assert (result.outcome, result.content) == ("failed", "The dialog was closed.")


def test_an_agent_without_client_tools_refuses_a_request_that_offers_some(host_for) -> None:
    agent, _ = scripted()
    refused = host_for(agent).refused(body(str(uuid.uuid4()), "r-1", [user("u-1", "hi")], tools=[CONFIRM]))
    assert (refused.status, refused.code) == (422, "client_tools_unsupported")
    tooled, model = scripted(client_tools=True)
    host_for(tooled).post(body(str(uuid.uuid4()), "r-1", [user("u-1", "hi")], tools=[CONFIRM]))
    assert model.tools == [["confirm"]]
    bad = host_for(tooled).refused(body(str(uuid.uuid4()), "r-1", [user("u-1", "hi")], tools=[
        {"name": "has spaces", "description": "x"}]))
    assert bad.code == "bad_tool"


def test_requests_a13n_harness_would_fail_later_are_refused_with_422_before_the_run_starts(host_for) -> None:
    agent, model = scripted(client_tools=True)
    host = host_for(agent)
    many = [{"name": f"tool_{n}", "description": "x"} for n in range(12_000)]
    refused = host.refused(body(str(uuid.uuid4()), "r-1", [user("u-1", "hi")], tools=many))
    assert (refused.status, refused.code) == (422, "bad_tool") and "too many client tools" in refused.message
    big = [{"description": "notes", "value": "x" * 12_000_000}]
    refused = host.refused(body(str(uuid.uuid4()), "r-2", [user("u-1", "hi")], context=big))
    assert (refused.status, refused.code) == (422, "context_too_large")
    fits = [{"description": "notes", "value": "x" * (MAX_CONTEXT_BYTES - 1000)}]
    assert host.post(body(str(uuid.uuid4()), "r-3", [user("u-1", "hi")], context=fits)).terminal.result.status == (
        "completed")
    assert len(model.requests) == 1  # only the last request reached the model


# -- context, forwardedProps and the configure hook ------------------------------------------------

def test_the_requests_context_reaches_the_model_once_as_a_hidden_context_input(host_for, example) -> None:
    agent, model = scripted()
    host = host_for(agent)
    context = [{"description": "The page the user is on", "value": "/billing"}]
    served = host.post(body(str(uuid.uuid4()), "r-1", [user("u-1", "Where am I?")], context=context))
    (block,) = [p for p in served.payloads(InputEvent) if (p.metadata or {}).get("source_id") == CONTEXT_SOURCE_ID]
    assert block.source == "context" and block.metadata["display"] is False
    assert json.loads(block.content.split("\n")[1]) == context
    assert any(block.content == p.content for m in model.requests[0] if isinstance(m, ModelRequest)
               for p in m.parts if isinstance(p, UserPromptPart))
    # A Run of several model requests (a tool call, a subagent) gets it in its first request only.
    tooled = host_for(example.agent).post(body(str(uuid.uuid4()), "r-1", [user("u-1", "Weather in Lyon?")],
                                               context=context))
    requests = [p for p in tooled.payloads(ExtensionEvent)
                if (p.payload or {}).get("type") == "model_request_started"]
    blocks = [p for p in tooled.payloads(InputEvent) if (p.metadata or {}).get("source_id") == CONTEXT_SOURCE_ID]
    assert len(requests) == 2 and len(blocks) == 1


def test_the_configure_hook_sees_the_request_and_its_bindings_serve_the_run(host_for) -> None:
    agent, model = scripted(client_tools=True)
    told: list[A13nRequest] = []
    produced: list[Any] = []

    async def configure(request: A13nRequest) -> dict[str, Any]:
        told.append(request)
        return {"bindings": RunBindings.embedded(producer_observer=produced.append,
                                                 metadata={"tenant": request.input.forwarded_props["tenant"]})}

    host = host_for(agent, configure=configure)
    thread = str(uuid.uuid4())
    served = host.post(body(thread, "r-1", [user("u-1", "hi")], tools=[CONFIRM], forwardedProps={"tenant": "acme"}))
    (request,) = told
    assert request.input.forwarded_props == {"tenant": "acme"} and request.thread_id == served.run.thread_id
    assert request.new_thread and request.request is None
    assert produced  # the Host's bindings ran the Run ...
    assert model.tools == [["confirm"]]  # ... with the request's tools added to them


def test_options_the_runner_sets_from_the_request_cannot_be_given(host_for) -> None:
    agent, _ = scripted()
    with pytest.raises(ValueError, match="previous_state"):
        A13nRunner(agent, previous_state=None)
    with pytest.raises(ValueError, match="configure"):
        A13nRunner(agent, bindings=RunBindings.embedded())
    host = host_for(agent, configure=lambda request: {"input": "something else"})
    with pytest.raises(ValueError, match="input"):
        host.post(body(str(uuid.uuid4()), "r-1", [user("u-1", "hi")]))
    with pytest.raises(TypeError):
        A13nRunner(object())


# -- cancel ------------------------------------------------------------------------------------

def test_cancel_ends_the_run_cancelled_within_a_second_and_no_model_request_follows(host_for) -> None:
    async def slow(messages: list[Any], info: Any) -> AsyncIterator[Any]:
        for i in range(200):
            await asyncio.sleep(0.05)
            yield f"token {i} "

    agent, model = scripted(slow)
    host = host_for(agent)
    asked: list[float] = []

    def cancel_at_the_first_token(run: A13nRun, item: Any) -> None:
        if not asked and type(getattr(item, "event", None)).__name__ == "PartDeltaEvent":
            asked.append(time.monotonic())
            run.cancel()

    served = host.post(body(str(uuid.uuid4()), "r-1", [user("u-1", "Write a long essay.")]),
                       on_item=cancel_at_the_first_token)
    ended = time.monotonic()
    assert served.run.cancel_requested and served.terminal.result.status == "cancelled"
    assert ended - asked[0] < 1.0
    assert len(model.requests) == 1
    assert served.events[-1]["type"] == "RUN_FINISHED" and served.events[-1]["outcome"] == {"type": "cancelled"}
    valid(served.events)


def test_a_run_cancelled_before_it_streams_ends_cancelled_without_a_model_request(host_for) -> None:
    agent, model = scripted()
    host = host_for(agent)

    async def cancel_first() -> list[Any]:
        run = await host.runner.start(RunAgentInput.model_validate(body(str(uuid.uuid4()), "r-1", [user("u", "hi")])),
                                      journal=host.journal)
        run.cancel()
        return [item async for item in run.items()]

    items = asyncio.run(cancel_first())
    assert items[-1].result.status == "cancelled" and model.requests == []


def test_reattach_has_nothing_to_send_for_a_run_lost_with_its_process(host_for) -> None:
    agent, _ = scripted()
    runner = A13nRunner(agent)

    async def drain() -> list[Any]:
        return [item async for item in runner.reattach("thread-x", "run-x", 3)]

    assert asyncio.run(drain()) == []


# -- the official client ---------------------------------------------------------------------

def converse(node: str, host: Host, turns: list[dict[str, Any]]) -> tuple[dict[str, Any], list[Served]]:
    """The conversation tests/node/pipe_agent.mjs holds, each Run it asks for served by ``host``."""
    served: list[Served] = []
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen([node, str(NODE_DIR / "pipe_agent.mjs"), json.dumps(turns)], cwd=NODE_DIR,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True)
        assert process.stdin is not None and process.stdout is not None
        try:
            for line in process.stdout:
                said = json.loads(line)
                if "request" not in said:
                    assert "done" in said, said.get("error")
                    return said["done"], served
                served.append(host.post(said["request"]))
                # as a server does: the client is not sent back what its request shows it holds
                held = HeldByClient(RunAgentInput.model_validate(said["request"]).messages)
                events = [e for e in map(held.event, served[-1].events) if e is not None]
                process.stdin.write("".join(json.dumps(e) + "\n" for e in events) + '{"type":"__END__"}\n')
                process.stdin.flush()
        finally:
            process.kill()
            process.wait(30)
        errors.seek(0)
        raise AssertionError(f"pipe_agent.mjs ended without its outcome:\n{errors.read()[-2000:]}")


def test_the_official_client_holds_a_conversation_with_the_example_agent(node, host_for, example) -> None:
    host = host_for(example.agent)
    outcome, served = converse(node, host, [
        {"say": "What's the weather in Lyon tomorrow?"},                       # a tool and a subagent
        {"say": "Now deploy it."},                                              # an approval ...
        {"approve": True},                                                      # ... answered through resume[]
        {"say": "Ask me to confirm the notes.", "tools": [CONFIRM], "toolResult": "Confirmed."},  # a client tool
    ])
    assert [s.terminal.result.status for s in served] == [
        "completed", "suspended", "completed", "suspended", "completed"]
    thread = outcome["threadId"]
    assert str(uuid.UUID(thread)) == thread  # the client's default thread id ...
    assert {s.run.thread_id for s in served} == {source_thread_id(thread)}  # ... names one Harness thread
    assert {(s.run.wire_thread_id, s.run.run_id) for s in served} == {
        (thread, run_id) for run_id in host.journal.runs(thread_id=source_thread_id(thread))}
    messages = outcome["messages"]
    users = [m["id"] for m in messages if m["role"] == "user" and ":input-" not in m["id"]]
    tools = [m["id"] for m in messages if m["role"] == "tool" and m["content"] == "Confirmed."]
    assert len(users) == 3 and len(tools) == 1
    # Each Run took exactly the messages the client added for it: the runner's anchor follows the client.
    assert [s.run.message_ids for s in served] == [(users[0],), (users[1],), (), (users[2],), (tools[0],)]
    assert "traboules" in served[0].terminal.result.output and any(m.get("subagentRunId") for m in messages)
    assert "deployed to production" in served[2].terminal.result.output
    assert "Confirmed." in served[4].terminal.result.output
    assert outcome["pendingInterrupts"] == []
    earlier: frozenset[str] = frozenset()
    for one in served:
        valid(one.events, earlier)
        earlier |= started_calls(one.events)
        for item in one.items:
            assert from_a13n(to_a13n(decode(encode(item)))) == item


def test_the_runner_by_hand_section_of_the_docs_runs_as_written(tmp_path, monkeypatch) -> None:
    import re

    text = (ROOT / "docs" / "serving-a13n.md").read_text(encoding="utf-8")
    start = text.index("## The runner, by hand\n")
    end = text.find("\n## ", start + 1)
    (code,) = re.findall(r"```python\n(.*?)```", text[start:end if end != -1 else None], flags=re.DOTALL)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(code, "docs/serving-a13n.md", "exec"), namespace)
    run, journal = namespace["run"], namespace["journal"]
    assert run.result.output == "Hello from a13n-harness." and run.wire_run_id == "r-1"
    assert journal.runs(thread_id=source_thread_id("6f1c6a40-5a43-4c58-9a3c-0d1b2f3e4a5b")) == (run.run_id,)
    journal.close()


def test_a_request_is_planned_in_a_worker_thread_not_on_the_event_loop(host_for, monkeypatch) -> None:
    # A long Thread's planning (its history validated, its last HarnessState rebuilt) must not stall the
    # loop that serves every other request.
    import threading

    from harness_agui.a13n import runner as serve_a13n

    agent, _ = scripted()
    host = host_for(agent)
    planned: list[bool] = []
    for name in ("_plan_new_thread", "_plan_known_thread"):
        plan = getattr(serve_a13n, name)

        def on_a_worker(*args: Any, _plan: Any = plan) -> Any:
            planned.append(threading.current_thread() is not threading.main_thread())
            return _plan(*args)

        monkeypatch.setattr(serve_a13n, name, on_a_worker)
    thread = str(uuid.uuid4())
    host.post(body(thread, "r-1", [user("u-1", "one")]))
    host.post(body(thread, "r-2", [user("u-1", "one"), {"id": "a-1", "role": "assistant", "content": "ok"},
                                   user("u-2", "two")]))
    assert planned == [True, True]
