"""A notebook-style debugging session over a retained Run, as a plain script.

    python examples/notebook_debugging.py

Each "cell" below is what an engineer would type in Jupyter (where the
``await`` lines work at top level). The retained Runs come from the Host
kit's SQLite journal: one healthy Run, read as a conversation, stepped
through to a failed tool call, with the state at that point; and one Run that
a misbehaving Harness broke, whose first failing step ``diagnose`` finds. The
script exits 0 when the session finds what it should.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from harness_agui.debug.pretty import render_conversation
from harness_agui.debug.replay import adiagnose, find_message, find_tool_call, steps
from harness_agui.host import SqliteSourceJournal
from harness_agui.source import PartDeltaEvent, TextPartDelta
from harness_agui.testing import SourceBuilder, simulated_run


def cell(title: str) -> None:
    print()
    print(f"In [ ]: # {title}")


def retain_runs(journal: SqliteSourceJournal) -> None:
    """What the Host journaled in production: a healthy Run, and one the Harness broke."""
    for item in simulated_run(run_id="run-demo"):
        journal.append(item)
    broken = SourceBuilder("thread-demo", "run-broken")
    broken.user("Summarise the meeting notes.")
    broken.request()
    broken.text(0, ["The ", "meeting ", "agreed ", "on ", "three ", "points."])
    broken.event(PartDeltaEvent(index=3, delta=TextPartDelta(content_delta=" Also,")))  # no part ever at index 3
    broken.completed("The meeting agreed on three points.")
    for item in broken.items:
        journal.append(item)


async def main(workdir: Path) -> int:
    journal = SqliteSourceJournal(workdir / "journal.db")
    retain_runs(journal)

    cell("load a retained run from the journal and replay it step by step")
    run_id = "run-demo"
    items = [item async for item in journal.read_prefix(run_id, through=journal.cursor(run_id))]
    replay = list(steps(items))
    print(f"{len(replay)} steps, {replay[-1].after.event_count} AG-UI events, finished: {replay[-1].after.finished}")

    cell("the run as a conversation")
    print(render_conversation(replay[-1].after.snapshot()))

    cell("step to the first forecast tool call and look at the state there")
    call = find_tool_call(replay, "call-forecast-1")
    print(call)
    print(f"open parts: {call.open_parts}")
    print(f"state before: {call.before!r}")

    cell("which step answered that call, and with what outcome?")
    answer = find_message(replay, "call-forecast-1:result")
    print(answer)

    cell("diagnose the run the Harness broke")
    broken_id = "run-broken"
    diagnosis = await adiagnose(journal.read_prefix(broken_id, through=journal.cursor(broken_id)))
    print(diagnosis)

    journal.close()
    failure = diagnosis.failure
    found = (call.sequence == 36 and answer.item.event.outcome == "failed" and failure is not None
             and failure.stage == "project" and failure.item.sequence == 10)
    print()
    print(f"the session found the failed tool call and the broken step: {found}")
    return 0 if found else 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(asyncio.run(main(Path(tmp))))
