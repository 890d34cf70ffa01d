"""A Thread's message history stored once (host._shared_history): each result that continues an earlier
one of its Thread stores only what it added, and reads back as the item that was appended."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness_agui.core.source import (
    ExtensionEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    MessageHistory,
    RunResult,
)
from harness_agui.host import DamagedStoreError, SqliteSourceJournal
from harness_agui.host._shared_history import MARK
from harness_agui.wire.codec import encode

AT = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
THREAD = "thread-1"


def message(i: int, text: str = "") -> dict[str, Any]:
    return {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text or f"message {i} " + "x" * 200}],
            "metadata": {"n": i, "ok": True}}


def run(journal: SqliteSourceJournal, run_id: str, messages: list[Any], *, thread_id: str = THREAD,
        history: list[Any] | None = None) -> HarnessRunResultEvent:
    """A Run of two items: its start and its result, whose state holds ``messages``."""
    journal.append(HarnessEvent(thread_id=thread_id, run_id=run_id, sequence=0, occurred_at=AT,
                                event=ExtensionEvent(kind="lifecycle", schema_version="1",
                                                     payload={"type": "run_started"})))
    result = HarnessRunResultEvent(thread_id=thread_id, run_id=run_id, sequence=1, occurred_at=AT, result=RunResult(
        status="completed", output="ok", state={"schema_version": 1, "thread_id": thread_id,
                                                "message_history": messages},
        history=MessageHistory(messages=list(messages) if history is None else history,
                               new_message_index=0 if history is not None else max(0, len(messages) - 2))))
    journal.append(result)
    return result


def read(journal: SqliteSourceJournal, run_id: str) -> list[Any]:
    async def go() -> list[Any]:
        return [i async for i in journal.read_prefix(run_id, through=journal.cursor(run_id))]
    return asyncio.run(go())


def stored(path: Path, run_id: str) -> str:
    with sqlite3.connect(path) as conn:
        return str(conn.execute("SELECT line FROM harness_source_items WHERE item_run_id = ? AND terminal = 1",
                                (run_id,)).fetchone()[0])


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal.db"


def test_each_turn_stores_what_it_added_and_reads_back_the_item_it_appended(path: Path) -> None:
    history = [message(i) for i in range(500)]
    results = []
    with SqliteSourceJournal(path, synchronous="NORMAL") as journal:
        for turn in range(4):
            history = [*history, message(1000 + 2 * turn), message(1001 + 2 * turn)]
            results.append(run(journal, f"run-{turn}", history))
        for turn, result in enumerate(results):
            assert read(journal, f"run-{turn}")[-1] == result
    whole = len(encode(results[-1]))
    first = len(stored(path, "run-0"))
    assert first < 0.6 * whole  # the result's history.messages are the state's: stored once
    for turn in (1, 2, 3):
        line = stored(path, f"run-{turn}")
        assert line.startswith(MARK) and len(line) < 2000  # the two messages the turn added, not the 500 before


def test_a_history_that_does_not_continue_an_earlier_one_is_stored_whole(path: Path) -> None:
    history = [message(i) for i in range(50)]
    with SqliteSourceJournal(path, synchronous="NORMAL") as journal:
        run(journal, "run-0", history)
        edited = [message(0, "another text"), *history[1:], message(99)]
        typed = [{**m, "metadata": {"n": m["metadata"]["n"], "ok": 1}} for m in history]  # 1 is not true
        other = run(journal, "run-1", edited)
        retyped = run(journal, "run-2", typed)
        elsewhere = run(journal, "run-3", [*history, message(98)], thread_id="thread-2")
        assert read(journal, "run-1")[-1] == other and read(journal, "run-2")[-1] == retyped
        assert read(journal, "run-3")[-1] == elsewhere
    for run_id in ("run-1", "run-2", "run-3"):
        assert '"base":null' in stored(path, run_id)


def test_history_messages_that_differ_from_the_states_are_stored_as_they_are(path: Path) -> None:
    history = [message(i) for i in range(20)]
    with SqliteSourceJournal(path, synchronous="NORMAL") as journal:
        run(journal, "run-0", history)
        result = run(journal, "run-1", [*history, message(21)], history=[message(7)])
        assert read(journal, "run-1")[-1] == result


def test_a_result_whose_base_was_pruned_reads_as_a_damaged_store(path: Path) -> None:
    history = [message(i) for i in range(20)]
    with SqliteSourceJournal(path, synchronous="NORMAL") as journal:
        run(journal, "run-0", history)
        run(journal, "run-1", [*history, message(21)])
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM harness_source_items WHERE run_id = 'run-0'")
        conn.execute("DELETE FROM harness_source_runs WHERE root_run_id = 'run-0'")
    with SqliteSourceJournal(path, synchronous="NORMAL") as journal, pytest.raises(DamagedStoreError):
        read(journal, "run-1")


def test_a_second_delivery_of_a_shared_result_is_recognised(path: Path) -> None:
    history = [message(i) for i in range(20)]
    with SqliteSourceJournal(path, synchronous="NORMAL") as journal:
        run(journal, "run-0", history)
        result = run(journal, "run-1", [*history, message(21)])
        assert journal.append(result) is False
