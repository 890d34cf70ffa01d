# Generated streams of Runs that delegate to subagents.
#
# A delegating stream is one root Run and a tree of child Runs, each written
# by its own ``RunWriter`` (a SourceBuilder that also writes the lifecycle
# and delegation extensions) with its own thread id, sequence domain and
# clock, the way a real a13n-harness forwards child items (INPUT_SPACE.md
# section 2, a13n-lab REPORT section 5: h_subagent, h_nested, h_failed_child).
# Each Run's items are planned first as a *script*: its items in order, plus
# two kinds of marks: "spawn" (the children of this model response may start
# from here on) and a delegation end that "waits for" a child (it may only
# come once that child and all its descendants have emitted everything).
# A scheduler then interleaves the scripts: at each step hypothesis picks
# which of the Runs able to go next emits its next item. So children run
# concurrently with their parent's other tools and with each other, and
# delegation ends come in an order hypothesis chooses.
#
# Fates: a child completes (delegation completed, delegate result success),
# or fails (its last model request leaves a text part open and reports
# model_request_failed; delegation failed, delegate result failed). A root
# Run that is cancelled mid-child emits its cancelled terminal as soon as the
# scheduler lets it after dispatching its children, which cuts off every Run
# still running at an arbitrary point (before its first item, after its
# run_started only, in the middle of a text or reasoning part), except in the
# middle of a tool call's args: args cut there are not JSON, which no
# projection can repair (docs/projection.md, "Cut-off tool calls"), and every complete
# generated stream must project onto a valid AG-UI run.
#
# Ids are drawn from small pools, so two Runs often use the same tool call id
# or part id (never one Run twice): the projection must keep the published
# ids unique by itself.

from __future__ import annotations

try:
    from hypothesis import strategies as st
except ModuleNotFoundError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "harness_agui.testing needs hypothesis, which is not installed; install it with "
        "`pip install hypothesis` (or pip install 'harness-agui[testing]')"
    ) from e

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import attrs

from ..core._json import JSON
from ..core.source import (
    ExtensionEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPartDelta,
)
from .builder import DEMO_START, SourceBuilder

__all__ = [
    "RunWriter",
    "PlannedSubagent",
    "DelegatingRun",
    "delegating_runs",
    "delegating_histories",
    "complete_delegating_histories",
    "live_delegating_histories",
    "simulated_delegation",
    "fanned_out_delegation",
]

Fate = Literal["completed", "failed", "running", "cut_off", "not_started"]


class RunWriter(SourceBuilder):
    """A SourceBuilder for one Run of a delegating stream: it also writes the
    lifecycle and delegation extensions a real Harness emits."""

    def extension(self, kind: str, payload: JSON) -> RunWriter:
        self.event(ExtensionEvent(kind=kind, schema_version="1", payload=payload))  # type: ignore[arg-type]
        return self

    def run_started(self) -> RunWriter:
        """A Run's first item: its lifecycle run_started."""
        return self.extension("lifecycle", {"type": "run_started"})

    def model_request_completed(self) -> RunWriter:
        return self.extension("lifecycle", {"type": "model_request_completed", "request_index": self._request})

    def model_request_failed(self, detail: str = "RuntimeError") -> RunWriter:
        return self.extension("lifecycle", {"type": "model_request_failed", "request_index": self._request,
                                            "error_code": "model_request_failed", "status_code": None,
                                            "detail": detail})

    def delegation(self, action: str, *, child_run_id: str, subagent: str, parent_run_id: str,
                   parent_tool_call_id: str, status: str) -> RunWriter:
        """An ``inline_delegation`` notice: ``action`` "started" goes under the
        child's own run (its sequence 1), "completed" / "failed" under the
        delegating Run."""
        return self.extension("delegation", {
            "type": "inline_delegation", "action": action, "invocation_id": f"delegation-{child_run_id}",
            "child_instance_id": f"{subagent}-{child_run_id[-4:]}", "subagent": subagent, "status": status,
            "parent_run_id": parent_run_id, "parent_agent_instance_id": f"agent-{parent_run_id}",
            "parent_tool_call_id": parent_tool_call_id, "child_run_id": child_run_id,
        })

    def catch_up(self, *others: SourceBuilder) -> RunWriter:
        """Move this Run's clock to the latest of ``others`` if it is behind:
        the root Run stamps an item when it delivers it, after whatever it
        forwarded before."""
        self._at = max([self._at, *(o._at for o in others)])
        return self

    def open_text(self, index: int, chunks: Sequence[str]) -> RunWriter:
        """A text part that never ends (a failed or cut off model request)."""
        self.event(PartStartEvent(index=index, part=TextPart(content="")))
        for c in chunks:
            self.event(PartDeltaEvent(index=index, delta=TextPartDelta(content_delta=c)))
        return self


@attrs.frozen
class PlannedSubagent:
    """A child Run of a generated stream: its run id, its parent's run id
    and delegate tool call id (as the source names them), its name, its depth
    (1 for a child of the root Run) and what became of it in the stream:
    "completed" or "failed" (its delegation ended so), "running" (announced,
    and the stream was cut before it ended), "cut_off" (announced, and the
    root Run ended while it ran), or "not_started" (not announced)."""

    run_id: str
    parent_run_id: str
    parent_tool_call_id: str
    name: str
    depth: int
    fate: Fate


@attrs.frozen
class DelegatingRun:
    """A generated delegating stream: ``items`` in arrival order, the root
    Run's id, and every child Run that was planned. ``complete`` tells
    whether the stream ends with the root Run's terminal result."""

    items: tuple[HarnessStreamEvent, ...]
    root_run_id: str
    subagents: tuple[PlannedSubagent, ...]
    complete: bool


# -- scripts ---------------------------------------------------------------------------------

@attrs.frozen
class _Spawn:
    children: tuple[str, ...]


@attrs.frozen
class _Emit:
    item: HarnessStreamEvent
    waits_for: str | None = None


_Entry = _Spawn | _Emit

_CALL_IDS = ("call-0", "call-1", "call-2", "call-3", "call-4")
_PART_IDS = ("msg-a", "msg-b", "msg-c")
_NAMES = ("researcher", "planner", "worker", "critic")
_WORDS = st.sampled_from(("alpha ", "beta ", "gamma ", "δέλτα ", "ok", "🙂 ", "\"q\" ", "x"))


@attrs.define
class _Plan:
    """Everything drawn for one stream while its scripts are written."""

    draw: st.DrawFn
    max_depth: int
    max_children: int
    scripts: dict[str, list[_Entry]] = attrs.Factory(dict)
    parents: dict[str, str] = attrs.Factory(dict)
    planned: dict[str, PlannedSubagent] = attrs.Factory(dict)
    clock: datetime = DEMO_START
    children: int = 0

    def ids(self, pool: Sequence[str], used: set[str], prefix: str) -> str:
        free = [i for i in pool if i not in used]
        chosen = self.draw(st.sampled_from(free)) if free else f"{prefix}-{len(used)}"
        used.add(chosen)
        return chosen

    def writer(self, thread_id: str, run_id: str) -> RunWriter:
        # Every Run has its own clock, started a little after the last one:
        # interleaved streams can go back in time across Runs, never within one.
        self.clock += timedelta(milliseconds=self.draw(st.integers(0, 500)))
        step = timedelta(milliseconds=self.draw(st.integers(1, 50)))
        return RunWriter(thread_id, run_id, start=self.clock, step=step)


def _chunks(draw: st.DrawFn, min_size: int = 1) -> list[str]:
    return draw(st.lists(_WORDS, min_size=min_size, max_size=4))


def _write_run(plan: _Plan, run_id: str, depth: int, *, parent: tuple[str, str, str] | None,
               fate: Literal["completed", "failed"], cancel_mid_child: bool,
               status: str) -> list[_Entry]:
    """The script of one Run (recursively writing its children's). ``parent``
    is (parent run id, delegate call id, subagent name) for a child."""
    draw = plan.draw
    w = plan.writer(f"thread-{run_id}", run_id)
    script: list[_Entry] = []
    at = 0

    def flush() -> None:
        nonlocal at
        script.extend(_Emit(i) for i in w.items[at:])
        at = len(w.items)

    calls_used: set[str] = set()
    parts_used: set[str] = set()
    w.run_started()
    if parent is not None:
        w.delegation("started", child_run_id=run_id, subagent=parent[2], parent_run_id=parent[0],
                     parent_tool_call_id=parent[1], status="running")
    requests = draw(st.integers(2 if parent is None else 1, 3))
    for r in range(requests):
        last = r == requests - 1
        w.request()
        if r == 0:
            task = "Do it." if parent is None else json.dumps({"delegated_task": "Find facts", "parent_task": "…"})
            w.user(task)
        index = 0
        if draw(st.booleans()):
            w.thinking(index, _chunks(draw), signature=draw(st.none() | st.just("c2ln")))
            index += 1
        if draw(st.booleans()) or last:
            own = plan.ids(_PART_IDS, parts_used, f"msg-{run_id}") if draw(st.booleans()) else None
            if last and fate == "failed":
                w.open_text(index, _chunks(draw))
                w.model_request_failed()
                flush()
                return script
            w.text(index, _chunks(draw), id=own)
            index += 1
        if last:
            w.model_request_completed()
            break
        tools: list[str] = []
        for _ in range(draw(st.integers(0, 2))):
            call = plan.ids(_CALL_IDS, calls_used, f"call-{run_id}")
            w.tool_call(index, "lookup", call, ['{"q": ', f'"{index}"}}'])
            tools.append(call)
            index += 1
        delegates: list[tuple[str, str, str]] = []
        room = min(plan.max_children - plan.children, 2)
        if depth < plan.max_depth and room > 0:
            for _ in range(draw(st.integers(1 if parent is None and r == 0 else 0, room))):
                plan.children += 1
                child = f"{run_id}.{plan.children}" if parent is not None else f"run-sub-{plan.children}"
                call = plan.ids(_CALL_IDS, calls_used, f"call-{run_id}")
                w.tool_call(index, "delegate", call, ['{"task": ', '"go"}'])
                delegates.append((child, call, draw(st.sampled_from(_NAMES))))
                index += 1
        w.model_request_completed()
        flush()
        if delegates:
            script.append(_Spawn(tuple(c for c, _, _ in delegates)))
            for child, call, name in delegates:
                child_fate: Literal["completed", "failed"] = "completed" if draw(st.booleans()) else "failed"
                plan.parents[child] = run_id
                plan.planned[child] = PlannedSubagent(child, run_id, call, name, depth + 1, child_fate)
                plan.scripts[child] = _write_run(plan, child, depth + 1, parent=(run_id, call, name),
                                                 fate=child_fate, cancel_mid_child=False, status="")
        for call in tools:
            w.tool_result(call, "lookup", {"found": call}, outcome=draw(st.sampled_from(("success", "failed"))))
        flush()
        if delegates and cancel_mid_child:
            w.cancelled()
            flush()
            return script
        for child, call, name in draw(st.permutations(delegates)):
            ending = plan.planned[child].fate
            w.delegation(ending, child_run_id=child, subagent=name, parent_run_id=run_id,
                         parent_tool_call_id=call, status=ending)
            script.append(_Emit(w.items[-1], waits_for=child))
            at = len(w.items)
            if ending == "completed":
                w.tool_result(call, "delegate", {"execution_id": f"exec-{child}", "subagent": name,
                                                 "output": "done"})
            else:
                w.tool_result(call, "delegate", f"Inline child {child} did not complete successfully "
                                                "(agent_run_failed).", outcome="failed")
            flush()
    if parent is None:
        if status == "completed":
            w.completed("done", input_tokens=10, output_tokens=3)
        elif status == "failed":
            w.failed("agent_run_failed", "the model failed")
        elif status == "suspended":
            w.suspended(("call-approve", "deploy", {"env": "prod"}))
        else:
            w.cancelled()
    flush()
    return script


def _subtree(plan: _Plan, run_id: str) -> list[str]:
    out = [run_id]
    for child, parent in plan.parents.items():
        if parent == run_id:
            out.extend(_subtree(plan, child))
    return out


def _cut_points(script: list[_Entry]) -> list[bool]:
    """For each position of a script (entries consumed), whether the Run may
    be cut off there: not while a tool call has streamed part of its args (a
    cut there leaves args that are not JSON, which no projection can repair;
    docs/projection.md, "Cut-off tool calls")."""
    partial: set[int] = set()
    ok = [True]
    for entry in script:
        item = entry.item if isinstance(entry, _Emit) else None
        event = item.event if isinstance(item, HarnessEvent) else None
        if isinstance(event, PartDeltaEvent) and isinstance(event.delta, ToolCallPartDelta):
            partial.add(event.index)
        elif isinstance(event, PartEndEvent):
            partial.discard(event.index)
        ok.append(not partial)
    return ok


def _interleave(plan: _Plan, root: str) -> list[HarnessStreamEvent]:
    cursor = {run: 0 for run in plan.scripts}
    cuttable = {run: _cut_points(script) for run, script in plan.scripts.items()}
    live = [root]
    out: list[HarnessStreamEvent] = []

    def done(run: str) -> bool:
        return all(cursor[r] >= len(plan.scripts[r]) for r in _subtree(plan, run))

    def may_end(run: str) -> bool:
        """Whether ``run``'s next item may be the root's terminal, cutting off what still runs."""
        item = plan.scripts[run][cursor[run]]
        return not (isinstance(item, _Emit) and isinstance(item.item, HarnessRunResultEvent)) or all(
            cuttable[r][cursor[r]] for r in live)

    while True:
        ready = []
        for run in live:
            script = plan.scripts[run]
            while cursor[run] < len(script) and isinstance(script[cursor[run]], _Spawn):
                spawn = script[cursor[run]]
                assert isinstance(spawn, _Spawn)
                live.extend(spawn.children)
                cursor[run] += 1
        for run in live:
            script = plan.scripts[run]
            if cursor[run] < len(script):
                entry = script[cursor[run]]
                assert isinstance(entry, _Emit)
                if (entry.waits_for is None or done(entry.waits_for)) and may_end(run):
                    ready.append(run)
        if not ready:
            return out
        run = ready[0] if len(ready) == 1 else plan.draw(st.sampled_from(ready))
        entry = plan.scripts[run][cursor[run]]
        assert isinstance(entry, _Emit)
        cursor[run] += 1
        out.append(entry.item)
        if isinstance(entry.item, HarnessRunResultEvent):
            return out  # the root's terminal: whatever still runs is cut off


@st.composite
def delegating_runs(draw: st.DrawFn, complete: bool | None = None, *, max_depth: int = 3,
                    max_children: int = 4, root_run_id: str = "run-root") -> DelegatingRun:
    """Generated streams of a root Run that delegates (see this module's
    comment): up to ``max_children`` child Runs in all, nested up to
    ``max_depth`` levels below the root, completing, failing or cut off, in
    an interleaving hypothesis chooses. ``complete`` True ends the stream
    with the root's terminal result; False cuts it anywhere before that; None
    does either."""
    plan = _Plan(draw, max_depth, max_children)
    cancel_mid_child = draw(st.integers(0, 2)) == 0
    status = "cancelled" if cancel_mid_child else draw(st.sampled_from(("completed", "failed", "cancelled",
                                                                         "suspended")))
    plan.scripts[root_run_id] = _write_run(plan, root_run_id, 0, parent=None, fate="completed",
                                           cancel_mid_child=cancel_mid_child, status=status)
    items = _interleave(plan, root_run_id)
    if complete is None:
        complete = draw(st.booleans())
    if not complete:
        items = items[:draw(st.integers(0, len(items) - 1))]
    announced = {i.run_id for i in items if i.sequence == 1 and i.run_id in plan.planned}
    ended = {child for i in items for child in plan.planned
             if isinstance(i, HarnessEvent) and i.run_id == plan.planned[child].parent_run_id and _ends(i, child)}
    planned = []
    for sub in plan.planned.values():
        fate: Fate = sub.fate if sub.run_id in ended else (
            "not_started" if sub.run_id not in announced else "cut_off" if complete else "running")
        planned.append(attrs.evolve(sub, fate=fate))
    return DelegatingRun(tuple(items), root_run_id, tuple(planned), complete)


def _ends(item: HarnessEvent, child: str) -> bool:
    body = item.event.payload if isinstance(item.event, ExtensionEvent) else None
    return (isinstance(body, dict) and body.get("type") == "inline_delegation"
            and body.get("child_run_id") == child and body.get("action") in ("completed", "failed"))


def delegating_histories(complete: bool | None = None, *, max_depth: int = 3,
                         max_children: int = 4) -> st.SearchStrategy[list[HarnessStreamEvent]]:
    """The items of ``delegating_runs(...)``, as a list in arrival order."""
    return delegating_runs(complete, max_depth=max_depth, max_children=max_children).map(lambda r: list(r.items))


def complete_delegating_histories(**kwargs: Any) -> st.SearchStrategy[list[HarnessStreamEvent]]:
    """``delegating_histories(complete=True, ...)``."""
    return delegating_histories(True, **kwargs)


def live_delegating_histories(**kwargs: Any) -> st.SearchStrategy[list[HarnessStreamEvent]]:
    """``delegating_histories(complete=False, ...)``: a stream cut before the
    root's terminal result."""
    return delegating_histories(False, **kwargs)


# -- one realistic stream --------------------------------------------------------------------

def simulated_delegation(root_run_id: str = "run-root", *, nested: bool = True,
                         child_fails: bool = False) -> list[HarnessStreamEvent]:
    """A root Run that delegates to a "planner" (which, when ``nested``,
    delegates to a "worker"), in the item order of a real a13n-harness Run
    (a13n-lab REPORT section 5, h_nested / h_failed_child). With
    ``child_fails`` the planner's model request fails instead: its text part
    stays open, its delegation ends "failed" and the delegate call fails.
    Both delegating Runs name their delegate call "call-delegate", so the
    planner's call is published renamed."""
    root = RunWriter("thread-root", root_run_id)
    child_id, grand_id = f"{root_run_id}-planner", f"{root_run_id}-worker"
    child = RunWriter("thread-planner", child_id, start=DEMO_START + timedelta(milliseconds=700))
    grand = RunWriter("thread-worker", grand_id, start=DEMO_START + timedelta(milliseconds=1500))
    out: list[HarnessStreamEvent] = []
    taken: dict[str, int] = {}

    def take(w: RunWriter) -> None:
        """Append what ``w`` wrote since the last take."""
        out.extend(w.items[taken.get(w.run_id, 0):])
        taken[w.run_id] = len(w.items)

    root.run_started().request()
    root.user("Plan the trip and check the weather.")
    root.text(0, ["[root] ", "delegating."])
    root.tool_call(1, "delegate", "call-delegate", ['{"task": ', '"plan"}'])
    root.model_request_completed()
    take(root)
    child.run_started().delegation("started", child_run_id=child_id, subagent="planner", parent_run_id=root_run_id,
                                   parent_tool_call_id="call-delegate", status="running")
    child.request().user(json.dumps({"delegated_task": "plan", "parent_task": "Plan the trip"}))
    if child_fails:
        child.open_text(0, ["[planner] ", "starting "]).model_request_failed()
        take(child)
        root.catch_up(child).delegation("failed", child_run_id=child_id, subagent="planner",
                                        parent_run_id=root_run_id, parent_tool_call_id="call-delegate",
                                        status="failed")
        root.tool_result("call-delegate", "delegate",
                         f"Inline child {child_id} did not complete successfully (agent_run_failed).", "failed")
    else:
        child.text(0, ["[planner] ", "delegating."])
        if nested:
            child.tool_call(1, "delegate", "call-delegate", ['{"task": ', '"weather"}'])
        child.model_request_completed()
        take(child)
        if nested:
            grand.run_started().delegation("started", child_run_id=grand_id, subagent="worker",
                                           parent_run_id=child_id, parent_tool_call_id="call-delegate",
                                           status="running")
            grand.request().user(json.dumps({"delegated_task": "weather", "parent_task": "plan"}))
            grand.text(0, ["[worker] ", "sunny ", "all week"])
            grand.model_request_completed()
            take(grand)
            child.catch_up(grand).delegation("completed", child_run_id=grand_id, subagent="worker",
                                             parent_run_id=child_id, parent_tool_call_id="call-delegate",
                                             status="completed")
            child.tool_result("call-delegate", "delegate", {"execution_id": "exec-w", "subagent": "worker",
                                                            "output": "sunny all week"})
            child.request()
            child.text(0, ["[planner] ", "worker said: sunny"])
            child.model_request_completed()
            take(child)
        root.catch_up(child, grand).delegation("completed", child_run_id=child_id, subagent="planner",
                                               parent_run_id=root_run_id, parent_tool_call_id="call-delegate",
                                               status="completed")
        root.tool_result("call-delegate", "delegate", {"execution_id": "exec-p", "subagent": "planner",
                                                       "output": "sunny all week"})
    root.request()
    root.text(0, ["[root] ", "planner said: ", "sunny."])
    root.model_request_completed()
    root.completed("sunny.", input_tokens=40, output_tokens=9)
    take(root)
    return out


def fanned_out_delegation(children: int, root_run_id: str = "run-root", *,
                          streaming: bool = True) -> list[HarnessStreamEvent]:
    """A root Run whose one model response delegated to ``children``
    subagents (its calls "call-0", "call-1", ...), each of which started,
    received its task and, when ``streaming``, is in the middle of a text
    part: every child still running, the root waiting for all of them (the
    stream to measure a late joiner's catch-up with many live subagents)."""
    root = RunWriter("thread-root", root_run_id)
    root.run_started().request().user("Fan the work out.")
    root.text(0, ["delegating."])
    for n in range(children):
        root.tool_call(n + 1, "delegate", f"call-{n}", ['{"task": ', f'"part {n}"}}'])
    root.model_request_completed()
    out = list(root.items)
    for n in range(children):
        child_id = f"{root_run_id}-child-{n}"
        child = RunWriter(f"thread-child-{n}", child_id, start=root._at)
        child.run_started().delegation("started", child_run_id=child_id, subagent="worker",
                                       parent_run_id=root_run_id, parent_tool_call_id=f"call-{n}", status="running")
        child.request().user(json.dumps({"delegated_task": f"part {n}", "parent_task": "Fan the work out."}))
        if streaming:
            child.open_text(0, ["working ", f"on part {n}"])
        out.extend(child.items)
    return out
