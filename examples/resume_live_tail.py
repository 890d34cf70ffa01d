"""Resume from source history, then follow the live tail.

    python examples/resume_live_tail.py

A Host journals every source item of a Run and gives every AG-UI event it
publishes a durable id. Its process dies mid-run: some items were journaled
and delivered, a few were journaled but their events not yet delivered, and
the Harness keeps publishing. The restarted Host rebuilds the projection from
the journal prefix through its delivery cursor (publishing nothing), then
follows the journal's tail from that cursor while the Harness goes on. A UI
client reconnects with the last event id it saw and gets the rest, ids
included. The script checks that nothing was lost or sent twice and exits 0.

``harness_agui.host.project_run`` does the restart steps below in one call;
they are spelt out here to show the cutover.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from harness_agui import HarnessAguiObserver
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, parse_last_event_id
from harness_agui.testing import simulated_run
from harness_agui.wire.agui import agui_to_json

RUN_ID = "run-demo"


async def main(workdir: Path) -> int:
    items = simulated_run(run_id=RUN_ID)
    database = workdir / "host.db"
    journal = SqliteSourceJournal(database, poll_interval=0.005)
    deliveries = SqliteDeliveryLog(database, poll_interval=0.005)

    # -- the first Host process: live, then lost ----------------------------------------
    first = HarnessAguiObserver()
    journaled, delivered = 34, 30
    for item in items[:journaled]:
        journal.append(item)
    for item in items[:delivered]:
        deliveries.record(item, first.observe(item))
    client_saw = deliveries.replay(RUN_ID)[:-5]  # the client's connection dropped a little earlier still
    last_event_id = client_saw[-1].sse_id  # what the browser holds: the number and its Run's tag
    print(f"first host: journaled {journaled} items, delivered the events of {delivered} "
          f"(ids 1..{deliveries.last_event_id(RUN_ID)}), then died")
    print(f"UI client: saw events up to id {last_event_id}, then lost its connection")
    del first

    # -- the Harness keeps publishing while the Host is down and after --------------------
    async def harness() -> None:
        for item in items[journaled:]:
            await asyncio.sleep(0.002)
            journal.append(item)

    publishing = asyncio.create_task(harness())

    # -- the restarted Host: resume through the delivery cursor, then tail ----------------
    cursor = deliveries.cursor(RUN_ID)
    observer = HarnessAguiObserver()
    await observer.resume(journal.read_prefix(RUN_ID, through=cursor))
    print(f"restart: delivery cursor is sequence {cursor}; resume rebuilt {observer.event_count} events "
          f"and published none")
    tail_count = 0
    async for item in journal.tail(RUN_ID, after=cursor):
        deliveries.record(item, observer.observe(item))
        tail_count += 1
    await publishing
    print(f"live tail: {tail_count} items after the cursor ({journaled - delivered} of them journaled before the "
          f"restart), "
          f"{deliveries.last_event_id(RUN_ID)} events delivered in all")

    # -- the UI client reconnects with Last-Event-ID --------------------------------------
    frames = [frame async for frame in deliveries.sse(RUN_ID, last_event_id=last_event_id)]
    print(f"UI client reconnects with Last-Event-ID: {last_event_id} and receives {len(frames)} frames, e.g.:")
    for frame in frames[:2]:
        print("    " + frame.rstrip("\n").replace("\n", "\n    "))

    # -- checks -----------------------------------------------------------------------
    reference = HarnessAguiObserver()
    for item in items:
        reference.observe(item)
    expected = [agui_to_json(e) for e in reference.snapshot()]
    received = [d.data for d in client_saw] + [f.split("data: ", 1)[1].rstrip("\n") for f in frames]
    ids = [d.event_id for d in client_saw] + [
        parse_last_event_id(f.split("\n", 1)[0].removeprefix("id: "), run_id=RUN_ID) for f in frames]
    same_projection = observer.snapshot() == reference.snapshot()
    exactly_once = ids == list(range(1, len(expected) + 1)) and received == expected
    print()
    print(f"projection equals an uninterrupted run's:          {same_projection}")
    print(f"client received every event id exactly once:       {exactly_once}")
    journal.close()
    deliveries.close()
    return 0 if same_projection and exactly_once else 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(asyncio.run(main(Path(tmp))))
