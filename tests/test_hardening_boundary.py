# What a hostile review of the boundary found (issue 13), one class per
# section, each test written to fail on the code the review ran against.
#
# The rule they keep: what the boundary (the source model's constructors,
# the wire decoder, the journal readers, the command line) accepts can be
# emitted, stored and printed; what it cannot is refused there, once, with
# the documented error naming the field or the line, never later with an
# OverflowError, a PydanticSerializationError or a traceback.

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from ag_ui.core import BaseEvent
from ag_ui.encoder import EventEncoder
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.cli import main
from harness_agui.core.source import (
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    InputEvent,
    ObservationEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RunResult,
    TextPartDelta,
    ToolCallPart,
    ToolResultEvent,
)
from harness_agui.testing.builder import SourceBuilder, simulated_run
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import DecodeError, decode, encode, to_json
from harness_agui.wire.jsonl import MAX_LINE_BYTES, Journal, scan_journal

AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
DEPTH_LIMIT = 128
"""The documented nesting limit of JSON values (README, core/_json.py)."""


def nested(depth: int, leaf: Any = 0) -> Any:
    """A JSON value of ``depth`` levels: alternately arrays and objects."""
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def event(payload: Any, sequence: int = 0) -> HarnessEvent:
    return HarnessEvent(thread_id="t", run_id="r", sequence=sequence, occurred_at=AT, event=payload)


def result(run_result: RunResult, sequence: int = 0) -> HarnessRunResultEvent:
    return HarnessRunResultEvent(thread_id="t", run_id="r", sequence=sequence, occurred_at=AT, result=run_result)


def assert_serialises(events: Any) -> None:
    encoder = EventEncoder()
    for e in events:
        assert isinstance(e, BaseEvent)
        e.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")
        agui_to_json(e).encode("utf-8")
        encoder.encode(e).encode("utf-8")


def observe_all(items: list[Any]) -> list[BaseEvent]:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return list(observer.snapshot())


# Every JSON-valued slot of the source model, as a function of the value put
# there one level down (inside a one-key object), so that ``nested(d)`` in a
# slot is a value of depth d + 1.
JSON_SLOTS = {
    "tool call args": lambda v: [event(PartStartEvent(index=0, part=ToolCallPart("f", {"a": v}, "c1"))),
                                 event(PartEndEvent(index=0, part=ToolCallPart("f", {"a": v}, "c1")), 1)],
    "tool result content": lambda v: [event(ToolResultEvent(tool_call_id="c9", tool_name="f", outcome="success",
                                                            content={"a": v}))],
    "input metadata": lambda v: [event(InputEvent(input_id="i", source="user", content="x", metadata={"m": v}))],
    "input media": lambda v: [event(InputEvent(input_id="i", source="user", content={"m": v}))],
    "extension payload": lambda v: [event(ExtensionEvent(kind="diagnostic", schema_version="1", payload={"a": v}))],
    "observation value": lambda v: [event(ObservationEvent(name="o", value={"a": v}))],
    "run output": lambda v: [result(RunResult(status="completed", output={"a": v}))],
    "deferred args": lambda v: [result(RunResult(status="suspended", deferred=Deferred(
        calls=(DeferredToolCall(tool_call_id="c1", tool_name="f", args={"a": v}),))))],
}


# -- 1. accepted but unserializable ---------------------------------------------------------

def test_the_documented_limits_are_the_ones_enforced() -> None:
    from harness_agui.core._json import MAX_INT_DIGITS, MAX_JSON_DEPTH
    from harness_agui.core.source import MAX_SEQUENCE

    assert (MAX_JSON_DEPTH, MAX_INT_DIGITS, MAX_SEQUENCE) == (DEPTH_LIMIT, 4000, 2**53 - 1)


def test_a_self_referencing_list_is_refused_instead_of_looping_forever() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested more than 128"):
        ObservationEvent(name="o", value=loop)


@pytest.mark.parametrize("depth", [DEPTH_LIMIT + 1, 260, 600])
def test_a_wire_line_nested_deeper_than_the_limit_is_a_decode_error_naming_the_field(depth: int) -> None:
    line = encode(event(ObservationEvent(name="o", value=None)))
    line = line.replace('"value":null', '"value":' + json.dumps(nested(depth)))
    with pytest.raises(DecodeError, match=r"line 7: .*ObservationEvent\.value.*nested more than 128"):
        decode(line, line=7)


def test_a_wire_line_nested_past_what_the_parser_reads_is_a_decode_error() -> None:
    line = encode(event(ObservationEvent(name="o", value=None)))
    line = line.replace('"value":null', '"value":' + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(DecodeError, match=r"line 7: malformed JSON: nested too deeply"):
        decode(line, line=7)


@pytest.mark.parametrize("slot", JSON_SLOTS)
def test_a_source_value_nested_deeper_than_the_limit_is_refused_by_its_constructor(slot: str) -> None:
    with pytest.raises(ValueError, match="nested more than 128"):
        JSON_SLOTS[slot](nested(DEPTH_LIMIT))  # the slot wraps the value one level deeper


@pytest.mark.parametrize("slot", JSON_SLOTS)
def test_a_value_nested_to_the_limit_is_accepted_and_every_event_it_gives_serialises(slot: str) -> None:
    items = JSON_SLOTS[slot](nested(DEPTH_LIMIT - 1))
    assert [decode(encode(i)) for i in items] == items
    assert_serialises(observe_all(items))


@pytest.mark.parametrize("key", ["\ud800", "a\udfffb", "\udc80x"])
def test_a_lone_surrogate_object_key_is_refused_by_the_constructor_and_the_decoder(key: str) -> None:
    with pytest.raises(ValueError, match="ObservationEvent.value.*lone surrogate"):
        ObservationEvent(name="o", value={"ok": [{key: 1}]})
    escaped = json.dumps(key)  # "\ud800": the only way a lone surrogate reaches a wire line
    line = encode(event(ObservationEvent(name="o", value=None))).replace('"value":null',
                                                                         '"value":{' + escaped + ':1}')
    with pytest.raises(DecodeError, match="line 3: .*lone surrogate"):
        decode(line, line=3)


def test_a_lone_surrogate_in_any_text_is_refused_because_agui_serialisers_refuse_it() -> None:
    with pytest.raises(ValueError, match="TextPartDelta.content_delta.*lone surrogate"):
        TextPartDelta(content_delta="half \ud83d")
    with pytest.raises(ValueError, match="HarnessEvent.run_id.*lone surrogate"):
        HarnessEvent(thread_id="t", run_id="r\udc00", sequence=0, occurred_at=AT,
                     event=ObservationEvent(name="o"))
    with pytest.raises(ValueError, match="ToolResultEvent.content.*lone surrogate"):
        ToolResultEvent(tool_call_id="c", tool_name="f", outcome="success", content=["\udfff"])
    line = encode(event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="X")))).replace("X", "\\ud83d")
    with pytest.raises(DecodeError, match="lone surrogate"):
        decode(line)


def test_a_surrogate_pair_written_as_two_escapes_is_one_character_and_accepted() -> None:
    line = encode(event(PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="X")))).replace("X",
                                                                                               "\\ud83c\\udf0d")
    item = decode(line)
    assert item.event.delta.content_delta == "\U0001f30d"


def test_an_integer_too_long_to_write_as_json_is_refused_by_the_constructor() -> None:
    with pytest.raises(ValueError, match="ToolResultEvent.content.*digits"):
        ToolResultEvent(tool_call_id="c", tool_name="f", outcome="success", content={"n": -(10**5000)})
    big = 10**3999  # 4000 digits: writable, and accepted
    items = [event(ToolResultEvent(tool_call_id="c", tool_name="f", outcome="success", content=big))]
    assert decode(encode(items[0])) == items[0]
    assert_serialises(observe_all(items))


# -- 2. terminal injection (command line) -------------------------------------------------------

def run_cli(argv: list[str], monkeypatch: pytest.MonkeyPatch, stdin: bytes = b"",
            tty: bool = False) -> tuple[int, str, str]:
    """main(argv) in this process with stdin fed from bytes and stdout/stderr captured."""

    class Captured(io.TextIOWrapper):
        def isatty(self) -> bool:
            return tty

    out = Captured(io.BytesIO(), encoding="utf-8", newline="\n")
    err = Captured(io.BytesIO(), encoding="utf-8", newline="\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    try:
        status = main(argv)
    except SystemExit as e:  # argparse's own exits, before the fix
        status = e.code if isinstance(e.code, int) else 2
    out.flush()
    err.flush()
    return status, out.buffer.getvalue().decode("utf-8", "replace"), err.buffer.getvalue().decode("utf-8", "replace")


FORGED_KEY = "\x1b[2J\x1b[1;1Hfake\nharness-agui: all good\u202e\u061c"


def assert_no_terminal_controls(text: str) -> None:
    for ch in ("\x1b", "\u202e", "\u061c", "\x9b", "\r"):
        assert ch not in text, repr(text)


def test_an_unknown_field_name_reaches_stderr_escaped_on_one_line(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    data = to_json(event(ObservationEvent(name="o")))
    data["event"][FORGED_KEY] = 1
    path = tmp_path / "evil.jsonl"
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    status, out, err = run_cli(["replay", str(path)], monkeypatch)
    assert status == 1 and out == ""
    assert_no_terminal_controls(err)
    assert err.count("\n") == 1 and err.startswith(f"harness-agui: {path}:1: unknown field event.")
    assert "\\x1b[2J" in err and "\\u202e" in err and "\\u061c" in err


def test_a_file_name_reaches_stderr_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = str(tmp_path / "run\x1b]0;owned\x07\n.jsonl")
    status, out, err = run_cli(["replay", name], monkeypatch)
    assert status == 2
    assert_no_terminal_controls(err)
    assert "\x07" not in err and err.count("\n") == 1 and "run\\x1b]0;owned\\x07\\n.jsonl: no such file" in err


def test_the_check_report_escapes_what_the_run_controls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = encode(event(ObservationEvent(name="o")))
    data = to_json(event(ObservationEvent(name="o"), sequence=1))
    data["event"][FORGED_KEY] = 1
    path = tmp_path / "evil\x1b[31m.jsonl"
    path.write_text(good + "\n" + json.dumps(data) + "\n", encoding="utf-8")
    status, out, err = run_cli(["check", str(path)], monkeypatch)
    assert status == 1 and err == ""
    assert_no_terminal_controls(out)
    assert "harness-agui: all good" not in out.splitlines()
    assert out.count("\n") == 4, out


def test_replay_output_to_a_terminal_is_escaped_and_to_a_pipe_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    items = SourceBuilder("t", "r").user("hi").request().text(0, ["\x9b31m red \u202e"]).completed("ok").items
    stdin = "".join(encode(i) + "\n" for i in items).encode()
    status, out, _ = run_cli(["replay", "-"], monkeypatch, stdin=stdin, tty=True)
    assert status == 0
    assert_no_terminal_controls(out)
    status, out, _ = run_cli(["replay", "-"], monkeypatch, stdin=stdin, tty=False)
    assert status == 0 and "\x9b31m red \u202e" in out
    status, out, _ = run_cli(["replay", "-", "--format", "pretty"], monkeypatch, stdin=stdin, tty=False)
    assert status == 0
    assert_no_terminal_controls(out)


# -- 3. closed standard streams, broken pipe ----------------------------------------------------

def sh(script: str, *, timeout: float = 60, stdin: Any = subprocess.DEVNULL,
       preexec: Any = None) -> subprocess.CompletedProcess[bytes]:
    """Run a bash script in which $PY is this Python and $CLI the command line."""
    env = {**os.environ, "PY": sys.executable, "CLI": f"{sys.executable} -m harness_agui"}
    return subprocess.run(["bash", "-c", script], capture_output=True, timeout=timeout, env=env, stdin=stdin,
                          preexec_fn=preexec)


def journal_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text("".join(encode(i) + "\n" for i in simulated_run()), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["replay", "check"])
def test_a_closed_stdin_is_a_one_line_error(command: str) -> None:
    proc = sh(f"$CLI {command} - <&-")
    assert proc.returncode == 2
    assert proc.stderr == b"harness-agui: standard input is closed\n"


def test_a_closed_stdout_is_a_one_line_error_on_stderr(tmp_path: Path) -> None:
    path = journal_file(tmp_path)
    for command in ("replay", "check"):
        proc = sh(f"$CLI {command} '{path}' >&-")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr == b"harness-agui: standard output is closed\n"


def test_a_closed_stderr_does_not_hide_the_exit_status(tmp_path: Path) -> None:
    proc = sh(f"$CLI replay '{tmp_path}/missing.jsonl' 2>&-")
    assert proc.returncode == 2 and proc.stdout == b""


def test_a_broken_pipe_ends_quietly_with_status_141_like_other_unix_tools(tmp_path: Path) -> None:
    path = journal_file(tmp_path)
    proc = sh(f"set -o pipefail; $CLI replay '{path}' | head -c 1 >/dev/null; echo \"status=${{PIPESTATUS[0]}}\"")
    assert proc.stdout.endswith(b"status=141\n"), proc
    assert proc.stderr == b""


# -- 4. paths that can be read only once ------------------------------------------------------------

def expected_jsonl(path: Path) -> bytes:
    return "".join(agui_to_json(e) + "\n" for e in observe_all(list(Journal(path)))).encode()


def test_replay_of_a_process_substitution_reads_it_once(tmp_path: Path) -> None:
    path = journal_file(tmp_path)
    proc = sh(f"$CLI replay <(cat '{path}')")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected_jsonl(path)


def test_replay_of_dev_stdin_fed_by_a_pipe_reads_it_once(tmp_path: Path) -> None:
    path = journal_file(tmp_path)
    proc = sh(f"cat '{path}' | $CLI replay /dev/stdin")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected_jsonl(path)


def test_replay_and_check_of_a_named_fifo_read_it_once_and_finish(tmp_path: Path) -> None:
    path = journal_file(tmp_path)
    fifo = tmp_path / "fifo"
    for command, expected in (("replay", expected_jsonl(path)), ("check", None)):
        os.mkfifo(fifo)
        writer = threading.Thread(target=lambda: fifo.write_bytes(path.read_bytes()))
        writer.start()
        try:
            proc = sh(f"$CLI {command} '{fifo}'", timeout=30)
        finally:
            writer.join(timeout=30)
            fifo.unlink()
        assert proc.returncode == 0, proc.stderr
        if expected is not None:
            assert proc.stdout == expected


def test_several_runs_without_run_stop_at_the_second_run_with_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    a = SourceBuilder("t", "run-a").user("one").completed("ok").items
    b = SourceBuilder("t", "run-b").user("two").completed("ok").items
    path.write_text("".join(encode(i) + "\n" for i in a + b), encoding="utf-8")
    proc = sh(f"cat '{path}' | $CLI replay -")
    assert proc.returncode == 2
    assert proc.stderr.decode() == (f"harness-agui: <stdin>:{len(a) + 1}: an item of run 'run-b' follows the items "
                                    "of run 'run-a': the file holds several runs, choose one with --run\n")


# -- 5. unbounded lines -------------------------------------------------------------------------------------

def test_a_line_longer_than_the_limit_is_a_decode_error_naming_the_line() -> None:
    good = encode(event(ObservationEvent(name="o"))) + "\n"
    long = encode(event(ObservationEvent(name="o", value="x" * 500), sequence=1)) + "\n"
    data = (good + long + encode(event(ObservationEvent(name="o"), sequence=2)) + "\n").encode()
    limit = len(good)
    with pytest.raises(DecodeError, match=rf"^j:2: line longer than {limit} bytes"):
        list(Journal(io.BytesIO(data), name="j", max_line_bytes=limit))
    scanned = list(scan_journal(io.BytesIO(data), name="j", max_line_bytes=limit))
    assert [s.line for s in scanned] == [1, 2, 3]
    assert scanned[0].item is not None and scanned[2].item is not None
    assert scanned[1].error is not None and scanned[1].error.reason == f"line longer than {limit} bytes"
    assert len(list(Journal(io.BytesIO(data), max_line_bytes=len(long) - 1))) == 3  # the limit leaves out the newline


MEMORY_LIMIT = 512 * 1024**2


def test_the_line_limit_is_a_positive_int_and_defaults_to_16_mib() -> None:
    assert MAX_LINE_BYTES == 16 * 1024 * 1024
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_line_bytes"):
            Journal(io.BytesIO(b""), max_line_bytes=bad)


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_replay_of_dev_zero_ends_quickly_with_a_one_line_error() -> None:
    proc = sh("$CLI replay /dev/zero --max-line-bytes 1000000", timeout=60, preexec=limit_memory)
    assert proc.returncode == 1
    assert proc.stderr == b"harness-agui: /dev/zero:1: line longer than 1000000 bytes\n"


def test_check_passes_over_a_line_larger_than_memory_and_reports_the_lines_after_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as f:
        f.write(b"\0")
        f.truncate(2 * MEMORY_LIMIT)  # a sparse line of NULs, twice what the process may hold
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + "".join(encode(i) + "\n" for i in simulated_run()).encode())
    proc = sh(f"$CLI check '{path}'", timeout=120, preexec=limit_memory)
    assert proc.returncode == 1 and proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    assert lines[1] == f"run 'run-demo' (thread 'thread-demo'): {len(simulated_run())} items, " \
                       f"sequences 0-{len(simulated_run()) - 1}, completed"
    assert "undecodable: line 1: line longer than 16777216 bytes" in lines


def test_replay_of_dev_zero_with_the_default_limit_ends_under_a_memory_limit() -> None:
    proc = sh("$CLI replay /dev/zero", timeout=60, preexec=limit_memory)
    assert proc.returncode == 1
    assert proc.stderr == b"harness-agui: /dev/zero:1: line longer than 16777216 bytes\n"


# -- 7. sequences past the JSON-safe integer range ------------------------------------------------------

def test_a_sequence_past_2_53_minus_1_is_refused_by_the_constructor() -> None:
    HarnessEvent(thread_id="t", run_id="r", sequence=2**53 - 1, occurred_at=AT, event=ObservationEvent(name="o"))
    for seq in (2**53, 2**63, 2**64):
        with pytest.raises(ValueError, match=r"HarnessEvent.sequence must be <= 2\*\*53 - 1"):
            HarnessEvent(thread_id="t", run_id="r", sequence=seq, occurred_at=AT, event=ObservationEvent(name="o"))
        with pytest.raises(ValueError, match=r"HarnessRunResultEvent.sequence must be <= 2\*\*53 - 1"):
            HarnessRunResultEvent(thread_id="t", run_id="r", sequence=seq, occurred_at=AT,
                                  result=RunResult(status="cancelled"))


def test_a_wire_line_with_a_sequence_past_the_range_is_a_decode_error() -> None:
    line = encode(event(ObservationEvent(name="o"))).replace('"sequence":0', f'"sequence":{2**63}')
    with pytest.raises(DecodeError, match=r"line 4: .*sequence must be <= 2\*\*53 - 1"):
        decode(line, line=4)


# -- 11. datetimes at the edge of the calendar --------------------------------------------------------

EDGE_DATETIMES = [
    datetime(1, 1, 1, tzinfo=ZoneInfo("Asia/Tokyo")),
    datetime(1, 1, 1, 8, tzinfo=timezone(timedelta(hours=9))),
    datetime.max.replace(tzinfo=ZoneInfo("America/New_York")),
    datetime(9999, 12, 31, 20, tzinfo=ZoneInfo("America/New_York")),
    datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-1))),
]


@pytest.mark.parametrize("at", EDGE_DATETIMES, ids=str)
def test_a_datetime_whose_utc_instant_is_past_the_calendar_raises_value_error(at: datetime) -> None:
    with pytest.raises(ValueError, match="HarnessEvent.occurred_at .*outside the range"):
        HarnessEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at, event=ObservationEvent(name="o"))
    with pytest.raises(ValueError, match="HarnessRunResultEvent.occurred_at"):
        HarnessRunResultEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at,
                              result=RunResult(status="cancelled"))


def test_a_wire_line_whose_utc_instant_is_past_the_calendar_is_a_decode_error() -> None:
    line = encode(event(ObservationEvent(name="o"))).replace("2026-11-30T09:00:00+00:00",
                                                             "0001-01-01T00:00:00+09:00")
    with pytest.raises(DecodeError, match="line 2: .*outside the range"):
        decode(line, line=2)


@pytest.mark.parametrize("at", [
    datetime(1, 1, 1, 9, 19, tzinfo=ZoneInfo("Asia/Tokyo")),
    datetime.min.replace(tzinfo=UTC),
    datetime.max.replace(tzinfo=UTC),
    datetime(9999, 12, 31, 18, tzinfo=ZoneInfo("America/New_York")),
    datetime(1, 1, 1, tzinfo=timezone(-timedelta(hours=23, minutes=59, seconds=59, microseconds=999999))),
    datetime.max.replace(tzinfo=timezone(timedelta(hours=23, minutes=59, seconds=59, microseconds=999999))),
], ids=str)
def test_a_datetime_at_the_edge_of_the_calendar_round_trips_and_projects(at: datetime) -> None:
    items = [HarnessEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at, event=ObservationEvent(name="o"))]
    assert decode(encode(items[0])) == items[0]
    events = observe_all(items)
    expected_ms = (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    assert {e.timestamp for e in events} == {expected_ms}
    assert_serialises(events)


any_zone = st.one_of(
    st.timezones(),
    st.timedeltas(min_value=-timedelta(hours=23, minutes=59, seconds=59, microseconds=999999),
                  max_value=timedelta(hours=23, minutes=59, seconds=59, microseconds=999999)).map(timezone),
)


@settings(max_examples=300)
@given(st.datetimes(timezones=any_zone, allow_imaginary=True) | st.sampled_from(EDGE_DATETIMES))
def test_any_accepted_datetime_round_trips_the_wire_and_becomes_a_timestamp(at: datetime) -> None:
    try:
        item = HarnessEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at, event=ObservationEvent(name="o"))
    except ValueError as e:
        assert "outside the range" in str(e)
        return
    # The same wall time at the same offset (inter-zone == is False for a repeated local time, by design).
    assert item.occurred_at.replace(tzinfo=None) == at.replace(tzinfo=None)
    assert item.occurred_at.utcoffset() == at.utcoffset()
    assert decode(encode(item)) == item
    [started, custom] = observe_all([item])
    assert started.timestamp == custom.timestamp == (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    assert_serialises([started, custom])


# -- 14. argument errors ----------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "message"), [
    (["replay"], "the following arguments are required: FILE (see 'harness-agui replay --help')"),
    (["replay", "f", "--through", "-1"],
     "argument --through: a sequence number is >= 0, got -1 (see 'harness-agui replay --help')"),
    (["replay", "f", "--through", str(2**53)],
     f"argument --through: a sequence number is at most 2**53 - 1, got {2**53} (see 'harness-agui replay --help')"),
    (["check", "f", "--max-line-bytes", "0"],
     "argument --max-line-bytes: the limit is at least 1 byte, got 0 (see 'harness-agui check --help')"),
    ([], "the following arguments are required: COMMAND (see 'harness-agui --help')"),
    (["demo", "extra"], "unrecognized arguments: extra (see 'harness-agui --help')"),
])
def test_an_argument_error_is_one_line_naming_the_problem(argv: list[str], message: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = run_cli(argv, monkeypatch)
    assert status == 2 and out == ""
    assert err == f"harness-agui: {message}\n"


@pytest.mark.parametrize(("argv", "start", "prog"), [
    (["replay", "f", "--format", "xml"], "argument --format: invalid choice: 'xml' (choose from ",
     "harness-agui replay"),
    (["nope\x1b[2J"], "argument COMMAND: invalid choice: 'nope\\x1b[2J' (choose from ", "harness-agui"),
])
def test_an_invalid_choice_is_one_line_with_the_value_escaped(argv: list[str], start: str, prog: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = run_cli(argv, monkeypatch)
    assert status == 2 and out == ""
    assert err.startswith(f"harness-agui: {start}") and err.endswith(f" (see '{prog} --help')\n")
    assert err.count("\n") == 1 and "\x1b" not in err
