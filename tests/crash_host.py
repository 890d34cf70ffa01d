"""A Host process for the crash test.

    python tests/crash_host.py DATABASE [--die-before-record SEQ]

tests/test_crash.py starts it as a child process through ``serve`` (forked,
where the platform can, so that each restart costs no interpreter start-up).

It plays both sides of a Host with the Host kit: an ingest task receives a
long simulated Run from a "Harness" that, like a real subscription, resends
from the last item the journal holds (so the first append after a restart is
a duplicate), and appends every item to the journal; the projector is
``project_run``, which resumes from the journal prefix through the delivery
cursor and then tails the journal, recording each item's events in the
delivery log. It prints "ready" once the stores are open and "done" when the
Run's terminal events are recorded. --die-before-record SIGKILLs the process
itself at an exact point of the protocol: after the item at SEQ was journaled
and observed, before its events were recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

from ag_ui.core import BaseEvent

from harness_agui import HarnessStreamEvent
from harness_agui.host import Delivery, SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.testing import SourceBuilder

RUN_ID = "run-long"
THREAD_ID = "thread-crash"


def long_run(rounds: int = 12) -> list[HarnessStreamEvent]:
    """A Run of a few hundred items: a question, then rounds of reasoning,
    streamed text, a streamed tool call and its result, then a completed result."""
    b = SourceBuilder(THREAD_ID, RUN_ID)
    b.user("Plan a walking tour of Lyon, one stop per round.")
    for r in range(rounds):
        b.request()
        b.thinking(0, [f"Round {r}: ", "choose ", "the ", "next ", "stop ", "near ", "the ", "last ", "one."],
                   signature=f"sig-{r}")
        b.text(1, [f"Stop {r + 1} ", "is ", "a ", "short ", "walk ", "away; ", "let ", "me ", "check ", "hours."])
        b.tool_call(2, "opening_hours", f"call-{r}", ['{"place": ', f'"stop-{r + 1}", ', '"day": ', '"sunday"}'])
        b.tool_result(f"call-{r}", "opening_hours", {"open": "09:00", "close": "18:00", "stop": r + 1},
                      outcome="failed" if r % 5 == 4 else "success")
        b.observation("progress", {"round": r})
    b.request()
    b.text(0, ["Here ", "is ", "your ", "tour."])
    b.completed({"stops": rounds}, input_tokens=4000, output_tokens=900)
    return b.items


class DyingDeliveryLog(SqliteDeliveryLog):
    """A delivery log that kills its own process just before recording one item's events."""

    def __init__(self, path: str, *, before: int | None) -> None:
        super().__init__(path, poll_interval=0.002, synchronous="NORMAL")
        self._before = before

    def record(self, item: HarnessStreamEvent, events: Sequence[BaseEvent], **options: Any) -> tuple[Delivery, ...]:
        if item.sequence == self._before:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().record(item, events, **options)


async def ingest(journal: SqliteSourceJournal, items: list[HarnessStreamEvent]) -> None:
    cursor = journal.cursor(RUN_ID)
    for item in items[0 if cursor is None else cursor:]:
        journal.append(item)
        await asyncio.sleep(0)


async def host(path: str, before: int | None, ready: Callable[[], object]) -> None:
    journal = SqliteSourceJournal(path, poll_interval=0.002, synchronous="NORMAL")
    deliveries = DyingDeliveryLog(path, before=before)
    ready()
    harness = asyncio.create_task(ingest(journal, long_run()))
    await project_run(RUN_ID, journal, deliveries)
    await harness
    journal.close()
    deliveries.close()


def serve(path: str, before: int | None = None, ready: Callable[[], object] = lambda: None) -> None:
    """Run the Host until the Run is delivered; ``ready`` is called once the stores are open."""
    asyncio.run(host(path, before, ready))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database")
    parser.add_argument("--die-before-record", type=int)
    args = parser.parse_args()
    serve(args.database, args.die_before_record, lambda: print("ready", flush=True))
    print("done", flush=True)


if __name__ == "__main__":
    main()
