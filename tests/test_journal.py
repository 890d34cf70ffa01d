# Journals on disk: the strict reader a Host hands to resume(), the lenient
# scanner, and the per-Run checker behind `harness-agui check`. Journals are
# written into tmp_path from SourceBuilder runs so each test shows the exact
# damage it is about; the committed example journals are checked at the end.

from __future__ import annotations

import asyncio
import importlib.util
import io
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import (
    AfterTerminalError,
    ForeignRunError,
    HarnessAguiObserver,
    SequenceGapError,
    SequenceOrderError,
)
from harness_agui.core.source import HarnessStreamEvent, TextPart, TextPartDelta
from harness_agui.testing import SourceBuilder, simulated_run
from harness_agui.wire.codec import DecodeError, encode
from harness_agui.wire.jsonl import (
    Journal,
    JournalError,
    JournalReport,
    LineFault,
    _Seen,
    check_journal,
    scan_journal,
)

DATA = Path(__file__).resolve().parent.parent / "examples" / "data"


def chat(run_id: str = "run-1", thread_id: str = "thread-1", **kw: Any) -> list[HarnessStreamEvent]:
    b = SourceBuilder(thread_id, run_id, **kw)
    b.user("hello").request().text(0, ["Hi ", "there", "!"]).completed("Hi there!", input_tokens=3, output_tokens=2)
    return b.items


def write(path: Path, lines: list[str], *, end: str = "\n") -> Path:
    path.write_text("".join(line + end for line in lines), encoding="utf-8")
    return path


def journal_file(tmp_path: Path, items: list[HarnessStreamEvent], name: str = "run.jsonl") -> Path:
    return write(tmp_path / name, [encode(i) for i in items])


def projection(items: list[HarnessStreamEvent]) -> Any:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return observer.snapshot()


# -- the strict reader -----------------------------------------------------------------

def test_a_journal_yields_the_items_it_holds_in_order(tmp_path: Path) -> None:
    items = simulated_run()
    assert list(Journal(journal_file(tmp_path, items))) == items


def test_resume_from_a_journal_rebuilds_the_live_projection(tmp_path: Path) -> None:
    items = simulated_run()
    observer = HarnessAguiObserver()
    assert asyncio.run(observer.resume(Journal(journal_file(tmp_path, items)))) is None
    assert observer.snapshot() == projection(items)
    assert not observer.is_fresh


def test_entries_carry_the_line_and_the_byte_offset_after_it(tmp_path: Path) -> None:
    items = chat()
    path = journal_file(tmp_path, items)
    entries = list(Journal(path).entries())
    assert [e.line for e in entries] == list(range(1, len(items) + 1))
    assert entries[-1].end == path.stat().st_size
    assert entries[0].end == len(encode(items[0]).encode("utf-8")) + 1


def test_a_journal_on_a_path_can_be_read_again_to_retry_a_failed_resume(tmp_path: Path) -> None:
    items = chat()
    journal = Journal(journal_file(tmp_path, items))

    def refuse_once(item: Any, event: Any) -> Any:
        if not calls:
            calls.append(1)
            raise RuntimeError("processor hiccup")
        return event

    calls: list[int] = []
    observer = HarnessAguiObserver(processor=refuse_once)
    with pytest.raises(RuntimeError):
        asyncio.run(observer.resume(journal))
    assert observer.is_fresh
    asyncio.run(observer.resume(journal))
    assert observer.snapshot() == projection(items)


def test_a_seekable_stream_is_rewound_for_each_pass() -> None:
    items = chat()
    stream = io.BytesIO(b"".join(encode(i).encode() + b"\n" for i in items))
    journal = Journal(stream)
    assert list(journal) == items
    assert list(journal) == items


def test_a_stream_that_cannot_be_rewound_is_read_once() -> None:
    class Pipe(io.BytesIO):
        def seekable(self) -> bool:
            return False

    items = chat()
    journal = Journal(Pipe(b"".join(encode(i).encode() + b"\n" for i in items)))
    assert list(journal) == items
    with pytest.raises(RuntimeError, match="read only once"):
        list(journal)


def test_a_text_stream_is_accepted() -> None:
    items = chat()
    assert list(Journal(io.StringIO("".join(encode(i) + "\n" for i in items)))) == items


def test_blank_lines_a_byte_order_mark_and_crlf_endings_are_tolerated(tmp_path: Path) -> None:
    items = chat()
    lines = [encode(i) for i in items]
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(line.encode() for line in lines[:2]) + b"\r\n\r\n   \n"
                     + b"\r\n".join(line.encode() for line in lines[2:]))
    entries = list(Journal(path).entries())
    assert [e.item for e in entries] == items
    assert entries[2].line == 5


def test_without_a_run_id_the_first_run_is_read_and_a_second_one_is_an_error(tmp_path: Path) -> None:
    path = journal_file(tmp_path, chat("run-a") + chat("run-b"))
    with pytest.raises(ForeignRunError) as info:
        list(Journal(path))
    e = info.value
    assert (e.source, e.line, e.run_id, e.found_run_id, e.sequence) == (str(path), 9, "run-a", "run-b", 0)
    assert str(e) == (f"{path}:9: run 'run-a', sequence 0: an item of run 'run-b' in the history of run 'run-a' "
                      "(the journal holds more than one run, so choose one)")
    assert isinstance(e, JournalError)  # the old name still catches it


def test_a_run_id_selects_one_run_of_several(tmp_path: Path) -> None:
    a, b = chat("run-a"), chat("run-b")
    interleaved = [x for pair in zip(a, b, strict=True) for x in pair]
    path = journal_file(tmp_path, interleaved)
    assert list(Journal(path, run_id="run-b")) == b
    assert list(Journal(path, run_id="run-c")) == []


def test_through_stops_after_that_sequence(tmp_path: Path) -> None:
    items = chat()
    assert list(Journal(journal_file(tmp_path, items), through=3)) == items[:4]


def test_through_stops_before_a_damaged_line_further_on(tmp_path: Path) -> None:
    items = chat()
    lines = [encode(i) for i in items]
    path = write(tmp_path / "damaged.jsonl", lines[:5] + ["{not json"] + lines[5:])
    assert list(Journal(path, through=3)) == items[:4]
    with pytest.raises(DecodeError, match=":6: malformed JSON"):
        list(Journal(path))


def test_an_undecodable_line_names_the_file_and_line(tmp_path: Path) -> None:
    lines = [encode(i) for i in chat()]
    lines[2] = lines[2].replace('"part_start"', '"part_begin"')
    path = write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(DecodeError) as info:
        list(Journal(path))
    assert (info.value.source, info.value.line) == (str(path), 3)
    assert str(info.value) == f"{path}:3: unknown payload type 'part_begin' at event (known: part_start, part_delta, " \
        "part_end, final_result, tool_call, tool_result, deferred_tool_requests, enqueued_messages, input, " \
        "capability, extension, observation, unknown)"


def test_an_undecodable_line_of_another_run_is_still_an_error(tmp_path: Path) -> None:
    lines = [encode(i) for i in chat("run-a")] + ['{"v":1,"run_id":"run-b"}']
    with pytest.raises(DecodeError, match=":9: missing field kind"):
        list(Journal(write(tmp_path / "j.jsonl", lines), run_id="run-a"))


def test_a_last_line_cut_off_mid_write_is_explained(tmp_path: Path) -> None:
    lines = [encode(i) for i in chat()]
    path = tmp_path / "torn.jsonl"
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3][:30], encoding="utf-8")
    with pytest.raises(DecodeError, match=r":4: malformed JSON: .* \(the last line has no newline: was the file cut"):
        list(Journal(path))


def test_a_last_line_without_newline_that_is_complete_is_fine(tmp_path: Path) -> None:
    items = chat()
    path = tmp_path / "no-eol.jsonl"
    path.write_text("\n".join(encode(i) for i in items), encoding="utf-8")
    assert list(Journal(path)) == items


def test_bytes_that_are_not_utf8_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(encode(chat()[0]).encode() + b"\n" + b'{"v":1,"x":"caf\xe9"}\n')
    with pytest.raises(DecodeError, match=r":2: not UTF-8 text \(invalid continuation byte at byte 15\)"):
        list(Journal(path))


def damaged(tmp_path: Path, order: list[int]) -> Path:
    """A journal of chat() with its items in the order of ``order`` (indexes)."""
    items = chat()
    return journal_file(tmp_path, [items[i] for i in order])


def test_a_repeated_sequence_is_an_error_naming_the_line(tmp_path: Path) -> None:
    with pytest.raises(SequenceOrderError, match=r":4: run 'run-1', sequence 2: sequence repeated: 3 was due$") as info:
        list(Journal(damaged(tmp_path, [0, 1, 2, 2, 3])))
    assert (info.value.run_id, info.value.sequence, info.value.expected, info.value.line) == ("run-1", 2, 3, 4)


def test_a_decreasing_sequence_is_an_error_naming_the_line(tmp_path: Path) -> None:
    with pytest.raises(SequenceOrderError, match=r":4: run 'run-1', sequence 1: sequence went back: 3 was due$"):
        list(Journal(damaged(tmp_path, [0, 1, 2, 1])))


def test_a_gap_in_sequence_is_an_error_naming_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(SequenceGapError, match=r":3: run 'run-1', sequence 4: sequence 2 to 3 missing$") as info:
        list(Journal(damaged(tmp_path, [0, 1, 4, 5])))
    assert (info.value.sequence, info.value.expected) == (4, 2)
    with pytest.raises(SequenceGapError, match=r":2: run 'run-1', sequence 2: sequence 1 missing$"):
        list(Journal(damaged(tmp_path, [0, 2])))


def test_a_run_whose_first_line_is_not_sequence_0_is_a_gap(tmp_path: Path) -> None:
    with pytest.raises(SequenceGapError, match=r":1: run 'run-1', sequence 2: sequence 0 to 1 missing$"):
        list(Journal(damaged(tmp_path, [2, 3, 4])))


def test_a_gap_beyond_the_prefix_asked_for_is_not_read(tmp_path: Path) -> None:
    items = chat()
    assert list(Journal(damaged(tmp_path, [0, 1, 4, 5]), through=1)) == items[:2]
    with pytest.raises(SequenceGapError):
        list(Journal(damaged(tmp_path, [0, 1, 4, 5]), through=2))


def test_an_item_after_the_terminal_result_is_an_error(tmp_path: Path) -> None:
    items = chat()
    late = SourceBuilder("thread-1", "run-1", first_sequence=len(items)).observation("late", 1).items
    path = journal_file(tmp_path, items + late)
    with pytest.raises(AfterTerminalError, match=rf":{len(items) + 1}: run 'run-1', sequence {len(items)}: an item "
                                                 rf"after the terminal result at sequence {len(items) - 1}$"):
        list(Journal(path))


def test_a_run_that_changes_thread_is_an_error(tmp_path: Path) -> None:
    items = chat()
    other = chat(thread_id="thread-2")
    with pytest.raises(ForeignRunError, match=r":3: run 'run-1', sequence 2: an item of thread 'thread-2' in a run "
                                              r"of thread 'thread-1'$"):
        list(Journal(journal_file(tmp_path, items[:2] + other[2:])))


def test_a_missing_file_raises_os_error_when_read(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "nope.jsonl")
    with pytest.raises(FileNotFoundError):
        list(journal)


def test_a_journal_refuses_arguments_of_the_wrong_type() -> None:
    with pytest.raises(TypeError):
        Journal(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Journal("x.jsonl", run_id=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Journal("x.jsonl", through="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Journal("x.jsonl", yield_every=0)


def test_the_journal_names_itself_after_its_file_or_stream(tmp_path: Path) -> None:
    assert Journal(tmp_path / "a.jsonl").name == str(tmp_path / "a.jsonl")
    assert Journal(io.BytesIO(), name="retained").name == "retained"
    assert Journal(io.BytesIO()).name == "<stream>"
    assert "through=4" in repr(Journal(tmp_path / "a.jsonl", run_id="r", through=4))


def test_the_size_is_known_for_files_and_unknown_for_pipes(tmp_path: Path) -> None:
    path = journal_file(tmp_path, chat())
    assert Journal(path).size() == path.stat().st_size
    assert Journal(io.StringIO("")).size() is None
    with open(path, "rb") as f:
        assert Journal(f).size() == path.stat().st_size


# -- streaming ----------------------------------------------------------------------------

def big_journal(tmp_path: Path, items: int, text_size: int) -> Path:
    b = SourceBuilder("thread-big", "run-big")
    b.part(0, TextPart(content=""), [TextPartDelta(content_delta=f"{i:08d}" + "x" * text_size)
                                     for i in range(items)], None)
    return journal_file(tmp_path, b.items, "big.jsonl")


def test_reading_a_journal_takes_memory_for_one_line_not_the_file(tmp_path: Path) -> None:
    path = big_journal(tmp_path, 300, 20_000)
    size = path.stat().st_size
    assert size > 6_000_000
    tracemalloc.start()
    try:
        count = sum(1 for _ in Journal(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 301
    assert peak < size / 10


def test_the_first_item_arrives_before_the_file_is_read(tmp_path: Path) -> None:
    path = big_journal(tmp_path, 300, 20_000)
    with open(path, "rb") as f:
        first = next(iter(Journal(f)))
        assert first.sequence == 0
        assert f.tell() < 100_000


def test_async_reading_gives_the_event_loop_a_turn_while_it_reads(tmp_path: Path) -> None:
    path = big_journal(tmp_path, 50, 10)
    turns: list[int] = []

    async def other_task() -> None:
        while True:
            turns.append(1)
            await asyncio.sleep(0)

    async def main() -> int:
        task = asyncio.create_task(other_task())
        await asyncio.sleep(0)
        before = len(turns)
        n = 0
        async for _ in Journal(path, yield_every=5):
            n += 1
        task.cancel()
        return len(turns) - before if n == 51 else -1

    assert asyncio.run(main()) >= 10


def test_a_cancelled_resume_from_a_journal_leaves_the_observer_fresh_and_can_be_retried(tmp_path: Path) -> None:
    items = simulated_run()
    journal = Journal(journal_file(tmp_path, items), yield_every=1)
    observer = HarnessAguiObserver()

    async def cancel_midway() -> None:
        task = asyncio.create_task(observer.resume(journal))
        for _ in range(10):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    assert observer.is_fresh and observer.event_count == 0
    asyncio.run(observer.resume(journal))
    assert observer.snapshot() == projection(items)


# -- the lenient scanner ----------------------------------------------------------------------

def test_scanning_reports_every_line_with_its_item_or_error(tmp_path: Path) -> None:
    lines = [encode(i) for i in chat()]
    path = write(tmp_path / "j.jsonl", [lines[0], "", "{oops", '{"v":1,"run_id":"run-9","kind":"x"}', lines[1]])
    scanned = list(scan_journal(path))
    assert [s.line for s in scanned] == [1, 3, 4, 5]
    assert [s.item is not None for s in scanned] == [True, False, False, True]
    assert [s.run_id for s in scanned] == ["run-1", None, "run-9", "run-1"]
    assert str(scanned[1].error).startswith(f"{path}:3: malformed JSON")
    assert str(scanned[2].error) == f"{path}:4: unknown kind 'x' (expected 'event' or 'result')"


# -- the checker ------------------------------------------------------------------------------

def test_a_healthy_journal_checks_clean(tmp_path: Path) -> None:
    items = simulated_run()
    report = check_journal(journal_file(tmp_path, items))
    assert report.ok and report.problems == 0
    (run,) = report.runs
    assert (run.run_id, run.thread_id, run.items, run.first_sequence, run.last_sequence, run.status) == \
        ("run-demo", "thread-demo", len(items), 0, len(items) - 1, "completed")
    assert report.describe().endswith("OK: no problems")


def check(tmp_path: Path, lines: list[str]) -> JournalReport:
    return check_journal(write(tmp_path / "c.jsonl", lines), name="c.jsonl")


def test_check_finds_gaps_as_ranges_of_missing_sequences(tmp_path: Path) -> None:
    b = SourceBuilder()
    for i in range(10):
        b.observation("tick", i)
    lines = [encode(i) for i in b.items]
    report = check(tmp_path, [lines[i] for i in (0, 1, 4, 6, 7, 9)])
    assert report.runs[0].gaps == ((2, 3), (5, 5), (8, 8))
    assert report.problems == 3
    assert "  gap: sequences 2-3 missing" in report.describe()
    assert "  gap: sequence 5 missing" in report.describe()


def test_check_counts_a_run_whose_first_line_is_not_sequence_0_as_a_gap_from_0(tmp_path: Path) -> None:
    b = SourceBuilder()
    for i in range(6):
        b.observation("tick", i)
    report = check(tmp_path, [encode(i) for i in b.items[3:]])
    run = report.runs[0]
    assert (run.gaps, run.first_sequence, run.projection_error) == (((0, 2),), 3, None)
    assert "  gap: sequences 0-2 missing" in report.describe()


def test_check_reports_lines_of_another_thread_and_leaves_them_out(tmp_path: Path) -> None:
    items, other = chat(), chat(thread_id="thread-2")
    report = check(tmp_path, [encode(i) for i in items[:2] + other[2:3] + items[2:]])
    run = report.runs[0]
    assert run.wrong_thread == (LineFault(3, 2, "thread 'thread-2', not 'thread-1'"),)
    assert run.duplicates == () and run.projection_error is None and run.problems == 1
    assert "  wrong thread: line 3: thread 'thread-2', not 'thread-1'" in report.describe()


def test_check_steps_over_a_gap_and_still_finds_where_the_projection_refuses_after_it(tmp_path: Path) -> None:
    b = SourceBuilder().user("go").request()
    b.text(0, ["a", "b", "c"])
    lines = [encode(i) for i in b.items]
    start = next(n for n, i in enumerate(b.items) if type(i.event).__name__ == "PartStartEvent")
    report = check(tmp_path, lines[:start] + lines[start + 1:])  # the start line is lost: a gap
    run = report.runs[0]
    assert run.gaps == ((start, start),)
    fault = run.projection_error
    assert fault is not None and (fault.sequence, "not open" in fault.detail) == (start + 1, True)


def test_check_finds_duplicates_and_out_of_order_items(tmp_path: Path) -> None:
    lines = [encode(i) for i in chat()]
    report = check(tmp_path, [lines[0], lines[1], lines[1], lines[3], lines[2], lines[4]])
    run = report.runs[0]
    assert run.duplicates == (LineFault(3, 1, "sequence 1 again"),)
    assert run.out_of_order == (LineFault(5, 2, "sequence 2 after 3"),)
    assert run.gaps == ()


def test_check_finds_items_after_the_terminal_result(tmp_path: Path) -> None:
    items = chat()
    late = SourceBuilder("thread-1", "run-1", first_sequence=len(items)).observation("late", 1).items
    report = check(tmp_path, [encode(i) for i in items + late])
    (fault,) = report.runs[0].after_terminal
    assert fault.line == len(items) + 1
    assert "after the completed result" in fault.detail


def test_check_attributes_undecodable_lines_to_the_run_they_name(tmp_path: Path) -> None:
    lines = [encode(i) for i in chat()]
    bad_of_run = lines[1].replace('"kind":"event"', '"kind":"evnt"')
    report = check(tmp_path, [lines[0], bad_of_run, "{cut", lines[1]])
    assert [f.line for f in report.runs[0].undecodable] == [2]
    assert [f.line for f in report.undecodable] == [3]
    assert report.problems == 2
    assert "undecodable: line 3: malformed JSON" in report.describe()


def test_check_reports_where_the_projection_would_refuse_the_run(tmp_path: Path) -> None:
    items = chat()
    lines = [encode(i) for i in items]
    without_part_start = lines[:2] + [encode(i) for i in SourceBuilder(first_sequence=2).observation("x", 1).items] \
        + lines[3:]
    report = check(tmp_path, without_part_start)
    fault = report.runs[0].projection_error
    assert fault is not None
    assert (fault.line, fault.sequence) == (4, 3)
    assert "not open" in fault.detail
    assert "projection refuses line 4" in report.describe()


def test_check_reports_each_run_separately(tmp_path: Path) -> None:
    a, b = chat("run-a"), chat("run-b")
    report = check(tmp_path, [encode(i) for i in a + b[:3] + b[4:]])
    assert [r.run_id for r in report.runs] == ["run-a", "run-b"]
    assert [r.ok for r in report.runs] == [True, False]
    assert report.runs[1].gaps == ((3, 3),)
    assert report.runs[1].status == "completed"


def test_check_of_an_empty_journal_finds_nothing(tmp_path: Path) -> None:
    report = check(tmp_path, [])
    assert (report.lines, report.runs, report.ok) == (0, (), True)


def test_check_calls_progress_after_each_line(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    path = journal_file(tmp_path, chat())
    check_journal(path, progress=lambda line, end: seen.append((line, end)))
    assert [s[0] for s in seen] == list(range(1, len(chat()) + 1))
    assert seen[-1][1] == path.stat().st_size


@given(st.lists(st.integers(min_value=0, max_value=40), max_size=60))
def test_the_interval_set_agrees_with_a_plain_set(numbers: list[int]) -> None:
    seen, model = _Seen(), set()
    for n in numbers:
        assert seen.add(n) == (n not in model)
        model.add(n)
    for first in (0, min(model, default=0)):  # a Run starts at 0: a late first number is a gap too
        if not model:
            continue
        expected = tuple((a, a) for a in range(first, max(model) + 1) if a not in model)
        merged: list[tuple[int, int]] = []
        for a, _ in expected:
            if merged and merged[-1][1] == a - 1:
                merged[-1] = (merged[-1][0], a)
            else:
                merged.append((a, a))
        assert seen.gaps(first) == tuple(merged)
    assert all(seen.starts[i] <= seen.ends[i] < seen.starts[i + 1] - 1 for i in range(len(seen.starts) - 1))


# -- the example journals ------------------------------------------------------------------------

def load_make_data() -> Any:
    spec = importlib.util.spec_from_file_location("make_data", DATA / "make_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_journals_are_what_make_data_writes() -> None:
    files = load_make_data().journals()
    assert sorted(files) == sorted(p.name for p in DATA.glob("*.jsonl"))
    for name, text in files.items():
        assert (DATA / name).read_text(encoding="utf-8") == text, f"{name} is stale: run examples/data/make_data.py"


@pytest.mark.parametrize("name", ["chat_with_reasoning", "tool_calls_with_failure", "suspended_for_approval"])
def test_each_example_run_checks_clean_and_projects_a_valid_agui_run(name: str) -> None:
    path = DATA / f"{name}.jsonl"
    assert check_journal(path).ok
    observer = HarnessAguiObserver()
    asyncio.run(observer.resume(Journal(path)))
    assert observer.finished
    assert_valid_agui([e.model_dump(mode="json", by_alias=True) for e in observer.snapshot()])


def test_the_two_run_example_holds_a_suspended_run_and_its_continuation() -> None:
    report = check_journal(DATA / "approval_then_new_run.jsonl")
    assert report.ok
    assert [(r.run_id, r.status) for r in report.runs] == [("run-ops-2a", "suspended"), ("run-ops-2b", "completed")]
    for run in report.runs:
        events = projection(list(Journal(DATA / "approval_then_new_run.jsonl", run_id=run.run_id)))
        assert_valid_agui([e.model_dump(mode="json", by_alias=True) for e in events])


def test_the_broken_example_has_every_kind_of_damage() -> None:
    report = check_journal(DATA / "broken_journal.jsonl", name="broken_journal.jsonl")
    (run,) = report.runs
    assert run.gaps == ((14, 14),)
    assert [f.line for f in run.duplicates] == [5]
    assert [f.line for f in run.out_of_order] == [8]
    assert [f.line for f in run.after_terminal] == [39]
    assert [f.line for f in report.undecodable] == [10]
    assert run.projection_error is not None and run.projection_error.line == 17
    assert report.problems == 6
