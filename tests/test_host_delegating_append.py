"""A delegating Run appended without naming its root stays one stream (issue #26, "A delegating stream split
silently"), on both backends, and the Host kit page's example (docs/host-kit.md) runs as written on such a Run.

A subagent's first item (its ``run_started``) does not say whose subagent it is, so appended without
``root_run_id`` it starts a stream of its own; its announcement (sequence 1) does, and the journal then moves
that first item into the stream of the Run that delegated. Before, each subagent became a root Run of its
own that never finished: ``project_run(child)`` never returned and start-up recovery took it up again and
again."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.host.errors import AfterTerminalError
from harness_agui.testing import projection_json, simulated_delegation
from harness_agui.testing.builder import SourceBuilder
from harness_agui.wire.codec import decode

ROOT = Path(__file__).resolve().parent.parent
HOST_KIT = ROOT / "docs" / "host-kit.md"
DELEGATING = ROOT / "examples" / "data" / "delegating_run.jsonl"


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """(journal, delivery log) of a fresh database of each backend."""
    if request.param == "sqlite":
        journal, log = SqliteSourceJournal(tmp_path / "host.db"), SqliteDeliveryLog(tmp_path / "host.db")
    else:
        from pg_server import fresh_database

        from harness_agui.host.postgres import PostgresDeliveryLog, PostgresSourceJournal

        url = fresh_database("split")
        journal, log = PostgresSourceJournal(url), PostgresDeliveryLog(url)
    yield journal, log
    journal.close()
    log.close()


@pytest.mark.parametrize("nested", [False, True])
def test_a_delegating_run_appended_without_its_root_is_one_stream_that_projects_as_it_arrived(
        stores: tuple[Any, Any], nested: bool) -> None:
    journal, log = stores
    items = simulated_delegation("run-trip", nested=nested)
    for item in items:
        assert journal.append(item) is True
    assert journal.runs() == ("run-trip",)
    children = sorted({i.run_id for i in items} - {"run-trip"})
    assert [journal.root_of(c) for c in children] == ["run-trip"] * len(children)
    assert journal.finished("run-trip") and journal.cursor("run-trip") == len(items) - 1
    for child in children:
        with pytest.raises(ValueError, match="child Run"):
            journal.cursor(child)

    async def project() -> list[Any]:
        await asyncio.wait_for(project_run("run-trip", journal, log), 30)
        return [item async for item in journal.read_prefix("run-trip", through=len(items) - 1)]

    stored = asyncio.run(project())
    assert sorted(stored, key=repr) == sorted(items, key=repr)  # every item, once
    assert [d.data for d in log.replay("run-trip")] == projection_json(items)  # events as they arrived
    for item in items:  # a second delivery of any of them is still a no-op
        assert journal.append(item) is False


def test_a_subagent_that_announces_a_parent_whose_stream_ended_is_refused(stores: tuple[Any, Any]) -> None:
    journal, _ = stores
    items = simulated_delegation("run-trip", nested=False)
    child = next(i.run_id for i in items if i.run_id != "run-trip")
    for item in items:
        if item.run_id != child:
            journal.append(item, root_run_id="run-trip")  # the root's stream alone, to its end
    first, announcement = [i for i in items if i.run_id == child][:2]
    journal.append(first)
    with pytest.raises(AfterTerminalError, match="has ended"):
        journal.append(announcement)
    assert journal.runs() == ("run-trip", child)  # nothing was moved or written


def test_a_root_run_whose_second_item_is_no_announcement_stays_a_stream_of_its_own(stores: tuple[Any, Any]) -> None:
    journal, _ = stores
    b = SourceBuilder("thread-a", "run-a")
    b.user("hi").request().text(0, ["hello"]).completed("hello")
    for item in b.items:
        journal.append(item)
    assert journal.runs() == ("run-a",) and journal.finished("run-a")


def test_the_host_kit_example_runs_as_written_on_a_delegating_run(tmp_path: Path, monkeypatch) -> None:
    text = HOST_KIT.read_text(encoding="utf-8")
    section = re.search(r"^# The Host kit\n(.*?)(?=^## )", text, re.S | re.M)
    assert section is not None
    (code,) = re.findall(r"^```python\n(.*?)^```", section.group(1), re.S | re.M)
    (tmp_path / "examples" / "data").mkdir(parents=True)
    shutil.copy(DELEGATING, tmp_path / "examples" / "data")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme"}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(code, "docs/host-kit.md", "exec"), namespace)  # noqa: S102
    namespace["journal"].close()
    namespace["deliveries"].close()
    items = [decode(line) for line in DELEGATING.read_text(encoding="utf-8").splitlines()]
    assert len({i.run_id for i in items}) == 3  # a root, a subagent and its own subagent
    expected = [json.dumps(json.loads(e), separators=(",", ":")) for e in projection_json(items)]
    sent = [line[6:] for line in out.getvalue().splitlines() if line.startswith("data: ")]
    assert [json.dumps(json.loads(d), separators=(",", ":")) for d in sent] == expected
    assert json.loads(sent[-1])["type"] == "RUN_FINISHED"
