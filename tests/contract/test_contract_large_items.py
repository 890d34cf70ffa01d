"""The largest items real Runs write go through every journal whole: a terminal item of tens of MB (the
message history, twice, of a Run with a 2 MiB tool result made of characters JSON escapes) is stored,
read back equal and projected, on SQLite and PostgreSQL as in a JSONL file read with the default limits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.core.source import MessageHistory, RunResult
from harness_agui.testing import SourceBuilder
from harness_agui.wire.codec import encode
from harness_agui.wire.jsonl import Journal, check_journal

MiB = 1024 * 1024


def large_run() -> list[HarnessStreamEvent]:
    """A Run whose tool result is 2 MiB of control characters, and whose terminal item holds it twice
    more, as a13n-harness's terminal item does (in the message history and in the state)."""
    blob = "\x01" * (2 * MiB)  # six bytes each on the wire ("\u0001")
    b = SourceBuilder("thread-large", "run-large")
    b.tool_result("call-1", "read", {"body": blob})
    b.completed("done")
    terminal = b.items[-1]
    result = RunResult(status="completed", output="done", state={"messages": [{"content": blob}]},
                       history=MessageHistory(messages=[{"parts": [{"content": blob}]}, {"content": blob}]))
    return [*b.items[:-1], type(terminal)(thread_id=terminal.thread_id, run_id=terminal.run_id,
                                          sequence=terminal.sequence, occurred_at=terminal.occurred_at,
                                          result=result)]


async def collect(journal: Any, run_id: str, through: int) -> list[HarnessStreamEvent]:
    return [item async for item in journal.read_prefix(run_id, through=through)]


def test_a_terminal_item_of_tens_of_megabytes_is_stored_and_read_back_whole(journal: Any) -> None:
    items = large_run()
    assert len(encode(items[-1]).encode()) > 35 * MiB
    for item in items:
        assert journal.append(item)
    assert journal.finished("run-large")
    back = asyncio.run(collect(journal, "run-large", len(items) - 1))
    assert back == items
    observer = HarnessAguiObserver()
    for item in back:
        observer.observe(item)
    assert observer.finished


def test_a_jsonl_journal_of_such_a_run_reads_with_the_default_line_limit(tmp_path: Path) -> None:
    items = large_run()
    path = tmp_path / "large.jsonl"
    path.write_text("".join(encode(i) + "\n" for i in items), encoding="utf-8")
    assert list(Journal(path)) == items
    assert check_journal(path).ok
