# The command line at the edges of its streams and arguments, run in this
# process (main(argv) with captured streams) or as a person runs it (bash,
# `python -m harness_agui`): text the run controls reaches a terminal
# escaped and a pipe exactly; closed standard streams and a broken pipe end
# in one line or quietly, with the right status; inputs that can be read only
# once (process substitution, /dev/stdin, a FIFO) are read once; an endless
# line stops at the line limit within bounded memory; every argument error is
# one line naming the problem, never a traceback.

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import BaseEvent

from harness_agui import HarnessAguiObserver
from harness_agui.cli import main
from harness_agui.core.source import HarnessEvent, ObservationEvent
from harness_agui.testing.builder import SourceBuilder, simulated_run
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import encode, to_json
from harness_agui.wire.jsonl import Journal

AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def event(payload: Any, sequence: int = 0) -> HarnessEvent:
    return HarnessEvent(thread_id="t", run_id="r", sequence=sequence, occurred_at=AT, event=payload)


def observe_all(items: list[Any]) -> list[BaseEvent]:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return list(observer.snapshot())


# -- terminal escaping -----------------------------------------------------------------------------

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


# -- closed standard streams, broken pipe ----------------------------------------------------------

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
    # The replay is larger than a pipe holds (64 KiB), so it is still writing when ``head`` has gone,
    # however the two processes are scheduled: a replay that fits could end before its reader closes.
    path = tmp_path / "long.jsonl"
    b = SourceBuilder("thread-long", "run-long")
    b.user("Count to 8000.").request().text(0, [f"{n} " for n in range(8000)]).completed("counted")
    path.write_text("".join(encode(i) + "\n" for i in b.items), encoding="utf-8")
    proc = sh(f"set -o pipefail; $CLI replay '{path}' | head -c 1 >/dev/null; echo \"status=${{PIPESTATUS[0]}}\"")
    assert proc.stdout.endswith(b"status=141\n"), proc
    assert proc.stderr == b""


# -- paths that can be read only once --------------------------------------------------------------

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


# -- endless lines under a memory limit ------------------------------------------------------------

MEMORY_LIMIT = 512 * 1024**2


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
    assert "undecodable: line 1: line longer than 268435456 bytes" in lines


def test_replay_of_dev_zero_with_the_default_limit_ends_under_a_memory_limit() -> None:
    proc = sh("$CLI replay /dev/zero", timeout=60, preexec=limit_memory)
    assert proc.returncode == 1
    assert proc.stderr == b"harness-agui: /dev/zero:1: line longer than 268435456 bytes\n"


# -- argument errors -------------------------------------------------------------------------------

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
