"""A Run that cannot end normally ends for its followers: ``SqliteDeliveryLog.fail``, and the
server's start-up recovery (in process, no HTTP: tests/test_serve.py covers the wire)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from ag_ui.core import RunAgentInput, RunErrorEvent, RunStartedEvent
from serve_host import good_items

from harness_agui import HarnessAguiObserver
from harness_agui.core.source import PartDeltaEvent, TextPartDelta
from harness_agui.host import (
    AfterTerminalError,
    ProjectorConflictError,
    SqliteDeliveryLog,
    SqliteSourceJournal,
)
from harness_agui.serve import AguiServer
from harness_agui.testing import SourceBuilder, simulated_run
from harness_agui.wire.agui import agui_to_json

ERROR = RunErrorEvent(message="the projection failed", code="harness_agui.projection_failed", timestamp=1)


def recorded_prefix(log: SqliteDeliveryLog, count: int) -> None:
    observer = HarnessAguiObserver()
    for item in simulated_run()[:count]:
        log.record(item, observer.observe(item))


def test_fail_records_one_run_error_as_the_last_event_and_ends_the_run(tmp_path: Path) -> None:
    with SqliteDeliveryLog(tmp_path / "host.db") as log:
        recorded_prefix(log, 5)
        last, cursor = log.last_event_id("run-demo"), log.cursor("run-demo")
        delivery = log.fail("run-demo", ERROR, expected_cursor=4)
        assert (delivery.event_id, delivery.event_type, delivery.data) == (last + 1, "RUN_ERROR", agui_to_json(ERROR))
        assert log.finished("run-demo") and log.cursor("run-demo") == cursor
        assert log.replay("run-demo")[-1] == delivery

        async def follow() -> list[int]:
            return [d.event_id async for d in log.follow("run-demo", after=last - 1)]

        assert asyncio.run(asyncio.wait_for(follow(), 5)) == [last, last + 1]  # and then it ends
        with pytest.raises(AfterTerminalError):
            log.record(simulated_run()[5], ())
        assert log.last_event_id("run-demo") == last + 1


def test_fail_is_refused_for_a_moved_cursor_or_a_finished_run_and_writes_nothing(tmp_path: Path) -> None:
    with SqliteDeliveryLog(tmp_path / "host.db") as log:
        recorded_prefix(log, 5)
        with pytest.raises(ProjectorConflictError):
            log.fail("run-demo", ERROR, expected_cursor=3)
        assert not log.finished("run-demo")
        log.fail("run-demo", ERROR, expected_cursor=4)
        with pytest.raises(AfterTerminalError):
            log.fail("run-demo", ERROR, expected_cursor=4)
        with pytest.raises(TypeError):
            log.fail("run-demo", RunStartedEvent(thread_id="t", run_id="run-demo"), expected_cursor=4)  # type: ignore[arg-type]


def test_fail_before_anything_was_recorded_needs_the_thread_and_makes_the_run_error_the_first_event(
        tmp_path: Path) -> None:
    with SqliteDeliveryLog(tmp_path / "host.db") as log:
        with pytest.raises(ValueError):
            log.fail("run-x", ERROR, expected_cursor=None)
        assert log.last_event_id("run-x") == 0
        delivery = log.fail("run-x", ERROR, expected_cursor=None, thread_id="thread-x")
        assert delivery.event_id == 1 and log.finished("run-x")
        assert log.cursor("run-x") is None  # no source item's events were recorded
        assert [d.event_type for d in log.replay("run-x")] == ["RUN_ERROR"]


@pytest.mark.parametrize("recorded", [0, 5])
def test_project_run_of_a_failed_run_returns_at_once_with_the_projection_through_its_cursor(
        tmp_path: Path, recorded: int) -> None:
    from harness_agui.host import project_run

    database = tmp_path / "host.db"
    items = simulated_run()
    with SqliteSourceJournal(database) as journal, SqliteDeliveryLog(database) as log:
        for item in items:
            journal.append(item)
        recorded_prefix(log, recorded)
        log.fail("run-demo", ERROR, expected_cursor=recorded - 1 if recorded else None, thread_id="thread-demo")
        before = log.replay("run-demo")
        observer = asyncio.run(asyncio.wait_for(project_run("run-demo", journal, log), 10))
        assert not observer.finished and observer.state.history.next_sequence == recorded
        assert observer.event_count == len(before) - 1 and log.replay("run-demo") == before


def test_start_up_recovery_projects_every_unfinished_run_and_leaves_finished_ones_alone(tmp_path: Path) -> None:
    database = tmp_path / "host.db"
    items = simulated_run()
    with SqliteSourceJournal(database) as journal, SqliteDeliveryLog(database) as log:
        for item in items:  # journaled whole, delivered only in part: the process died in between
            journal.append(item)
        recorded_prefix(log, 10)
        for item in simulated_run(run_id="run-done"):
            journal.append(item)
        recorded_prefix_done = HarnessAguiObserver()
        for item in simulated_run(run_id="run-done"):
            log.record(item, recorded_prefix_done.observe(item))

    async def never(run_input: RunAgentInput):  # type: ignore[no-untyped-def]
        raise AssertionError("no request is made")
        yield

    async def main() -> tuple[str, ...]:
        server = AguiServer(never, database=database)
        resumed = await server.start()
        await asyncio.wait_for(server.wait("run-demo"), 10)
        await server.stop()
        return resumed

    assert asyncio.run(main()) == ("run-demo",)
    expected = HarnessAguiObserver()
    for item in items:
        expected.observe(item)
    with SqliteDeliveryLog(database, read_only=True) as log:
        assert [d.data for d in log.replay("run-demo")] == [agui_to_json(e) for e in expected.snapshot()]
        assert log.finished("run-demo")


def test_a_refused_item_stops_the_run_task_and_closes_the_harness_stream(tmp_path: Path) -> None:
    closed = []

    async def harness(run_input: RunAgentInput):  # type: ignore[no-untyped-def]
        try:
            for item in good_items(run_input):
                yield item
            b = SourceBuilder(run_input.thread_id, run_input.run_id, first_sequence=len(good_items(run_input)))
            yield b.event(PartDeltaEvent(index=5, delta=TextPartDelta(content_delta="orphan"))).items[0]
            await asyncio.sleep(3600)  # the server must not wait for this Harness
        finally:
            closed.append(True)

    async def main() -> str:
        server = AguiServer(harness, database=tmp_path / "host.db", poll_interval=0.01)
        async with server.lifespan():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=server.app), base_url="http://t") as c:
                response = await asyncio.wait_for(c.post("/runs", json={
                    "threadId": "t", "runId": "r", "messages": [], "state": {}, "tools": [], "context": [],
                    "forwardedProps": {}}), 10)
            await asyncio.wait_for(server.wait("r"), 2)
            assert closed == [True]
        return response.text

    text = asyncio.run(main())
    last = [line for line in text.splitlines() if line.startswith("data: ")][-1]
    assert '"code":"harness_agui.projection_failed"' in last and "sequence 8" in last
