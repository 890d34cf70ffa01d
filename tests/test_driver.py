"""The run driver (``host.driver``) on its own, as a plain ``Worker`` uses it: a Run with no followers
here (no feed) and a ``publish`` told of each commit."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal
from harness_agui.host.delivery import Delivery
from harness_agui.host.driver import DrivenRun, RunDriver
from harness_agui.host.options import SupervisorOptions
from harness_agui.host.stores import stores_of
from harness_agui.testing import SourceBuilder


def test_a_run_driven_without_a_feed_publishes_every_commit_as_the_deliveries_the_log_holds(tmp_path: Path) -> None:
    b = SourceBuilder("thread-d", "run-d")
    b.user("Count.").request().text(0, [f"{n} " for n in range(12)]).completed("done")
    journal = SqliteSourceJournal(tmp_path / "host.db", synchronous="NORMAL")
    deliveries = SqliteDeliveryLog(tmp_path / "host.db", synchronous="NORMAL")
    for item in b.items[:5]:  # a backlog, then what another process appends while the Run is driven
        journal.append(item)
    published: list[Delivery] = []

    async def main() -> DrivenRun:
        driver = RunDriver(stores_of(journal, deliveries), processor=None, options=SupervisorOptions(),
                           wait_remote=0.01)
        run = DrivenRun("run-d", "thread-d", publish=published.extend)
        driving = asyncio.create_task(driver.drive(run))
        for item in b.items[5:]:
            await asyncio.sleep(0.005)
            journal.append(item)
        await driving
        await driver.close()
        return run

    try:
        run = asyncio.run(main())
        assert run.feed is None and run.ended and not run.failed
        assert published == list(deliveries.replay("run-d"))
        assert published[-1].event_type == "RUN_FINISHED"
    finally:
        journal.close()
        deliveries.close()
