"""Worker takeover: the old Run rebuilt with one observer, the new Run with another, one timeline.

    python examples/worker_takeover.py

Worker 1 runs a Harness Run for a conversation and dies mid-answer: its Run
never publishes a terminal result. Worker 2 takes over by starting a new
Harness Run, with a new run id, in the same Thread. The Host restarts too. For
the session's timeline it rebuilds the old Run's projection from the journal
with one observer, and follows the new Run with a second observer of its
own: the old Run's history is never fed into the new observer (SPEC section
7; the observer itself refuses it). The script prints the timeline, checks
it and exits 0.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import attrs

from harness_agui import AguiObservationError, HarnessAguiObserver
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.source import InputEvent, TextPart, TextPartDelta
from harness_agui.testing import DEMO_START, SourceBuilder

THREAD_ID = "thread-trip"


@attrs.frozen
class TimelineEntry:
    """One Run of a session and the observer that holds its projection."""

    run_id: str
    observer: HarnessAguiObserver
    note: str


def old_run() -> SourceBuilder:
    b = SourceBuilder(THREAD_ID, "run-worker-1")
    b.user("Book me a table for two in Lyon tonight.")
    b.request()
    b.text(0, ["Let ", "me ", "look ", "for ", "a ", "table."])
    b.tool_call(1, "find_restaurant", "call-find-1", ['{"city": "Lyon", ', '"party": 2}'])
    b.tool_result("call-find-1", "find_restaurant", {"name": "Le Bouchon", "slot": "20:00"})
    b.request()
    # Worker 1 dies here, mid-answer: the part never ends and no result follows.
    b.part(0, TextPart(content=""), [TextPartDelta(content_delta=c) for c in ["I ", "found ", "Le ", "Bouchon "]],
           None)
    return b


def new_run() -> SourceBuilder:
    b = SourceBuilder(THREAD_ID, "run-worker-2", start=DEMO_START + timedelta(minutes=2))
    b.event(InputEvent(input_id="input-recovery", source="recovery",
                       content="Worker run-worker-1 was lost; continue: book a table for two in Lyon tonight."))
    b.request()
    b.tool_call(0, "book_table", "call-book-1", ['{"restaurant": "Le Bouchon", ', '"time": "20:00"}'])
    b.tool_result("call-book-1", "book_table", {"confirmation": "LB-2044"})
    b.request()
    b.text(0, ["Booked: ", "Le ", "Bouchon, ", "20:00, ", "confirmation ", "LB-2044."])
    b.completed("Booked Le Bouchon at 20:00 (LB-2044).")
    return b


def conversation(observer: HarnessAguiObserver) -> list[str]:
    """A few readable lines for a Run's projection."""
    lines: list[str] = []
    texts: dict[str, int] = {}
    for event in observer.snapshot():
        match event.type.value:
            case "CUSTOM" if event.name.startswith("harness.input."):
                lines.append(f"input ({event.name.rsplit('.', 1)[1]}): {event.value['payload']['content']}")
            case "TEXT_MESSAGE_START":
                texts[event.message_id] = len(lines)
                lines.append("assistant: ")
            case "TEXT_MESSAGE_CONTENT":
                lines[texts[event.message_id]] += event.delta
            case "TEXT_MESSAGE_END":
                del texts[event.message_id]
            case "TOOL_CALL_START":
                lines.append(f"tool call {event.tool_call_name}")
            case "TOOL_CALL_RESULT":
                lines[-1] += f" -> {event.content}"
            case "RUN_FINISHED":
                lines.append(f"run finished: {event.outcome.type}")
    for at in texts.values():
        lines[at] += "... (cut off: the message never ended)"
    return lines


async def main(workdir: Path) -> int:
    database = workdir / "host.db"
    journal = SqliteSourceJournal(database, poll_interval=0.005)
    deliveries = SqliteDeliveryLog(database, poll_interval=0.005)
    old_items, new_items = old_run().items, new_run().items

    # Worker 1's Run is journaled up to where the worker died; the Host had delivered all of it.
    first_host = HarnessAguiObserver()
    for item in old_items:
        journal.append(item)
        deliveries.record(item, first_host.observe(item))
    # Worker 2's Run has started while the Host was down; more of it arrives after the restart.
    for item in new_items[:4]:
        journal.append(item)
    print(f"journal holds runs {journal.runs(THREAD_ID)} of {THREAD_ID!r}")

    async def worker_2() -> None:
        for item in new_items[4:]:
            await asyncio.sleep(0.002)
            journal.append(item)

    publishing = asyncio.create_task(worker_2())

    # The restarted Host builds the session timeline: one observer per Run.
    timeline: list[TimelineEntry] = []
    old = HarnessAguiObserver()
    await old.resume(journal.read_prefix("run-worker-1", through=journal.cursor("run-worker-1")))
    timeline.append(TimelineEntry("run-worker-1", old, "worker lost; no terminal result"))
    new = await project_run("run-worker-2", journal, deliveries)
    timeline.append(TimelineEntry("run-worker-2", new, "took over"))
    await publishing

    # The new observer refuses the old Run's history: it belongs to another Run.
    try:
        new.observe(old_items[0])
        crossed = True
    except AguiObservationError as e:
        crossed = False
        print(f"feeding the old Run to the new observer is refused: {e}")

    print()
    print(f"session timeline of {THREAD_ID!r}:")
    for entry in timeline:
        state = "finished" if entry.observer.finished else "unfinished"
        print(f"  {entry.run_id}: {entry.observer.event_count} events, {state} ({entry.note})")
        for line in conversation(entry.observer):
            print(f"      {line}")

    reference_old, reference_new = HarnessAguiObserver(), HarnessAguiObserver()
    for item in old_items:
        reference_old.observe(item)
    for item in new_items:
        reference_new.observe(item)
    ok = (not crossed and old.snapshot() == reference_old.snapshot() and not old.finished
          and new.snapshot() == reference_new.snapshot() and new.finished
          and {old.run_id, new.run_id} == {"run-worker-1", "run-worker-2"}
          and old.thread_id == new.thread_id == THREAD_ID)
    print()
    print(f"each Run projected by its own observer, old Run untouched by the new one: {ok}")
    journal.close()
    deliveries.close()
    return 0 if ok else 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(asyncio.run(main(Path(tmp))))
