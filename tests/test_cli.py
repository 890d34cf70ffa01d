# The command line, run as a person or a script runs it: in a subprocess,
# `python -m harness_agui ...`, checking stdout, stderr and the exit status
# of every subcommand and every error path. Bad input must end in one line
# on stderr naming the file and line, never a traceback.

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

from harness_agui import HarnessAguiObserver
from harness_agui.core.source import PartDeltaEvent, TextPartDelta
from harness_agui.testing import SourceBuilder
from harness_agui.wire.agui import agui_to_json, sse_frame
from harness_agui.wire.codec import encode
from harness_agui.wire.jsonl import Journal

DATA = Path(__file__).resolve().parent.parent / "examples" / "data"
CHAT = DATA / "chat_with_reasoning.jsonl"
TOOLS = DATA / "tool_calls_with_failure.jsonl"
SUSPENDED = DATA / "suspended_for_approval.jsonl"
TWO_RUNS = DATA / "approval_then_new_run.jsonl"
BROKEN = DATA / "broken_journal.jsonl"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness_agui", *map(str, args)], capture_output=True, text=True,
                          encoding="utf-8", timeout=120)


def cli_bytes(*args: str | Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "harness_agui", *map(str, args)], input=stdin,
                          capture_output=True, timeout=120)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], status: int, message: str) -> None:
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr == f"harness-agui: {message}\n"


def assert_one_line_error_at(proc: subprocess.CompletedProcess[str], status: int, where: str, *words: str) -> None:
    """A one-line error located at ``where`` (``FILE:LINE``) mentioning
    ``words``; the wording of history faults belongs to core.history."""
    assert proc.returncode == status, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"harness-agui: {where}: "), proc.stderr
    for word in words:
        assert word in proc.stderr


def expected_events(path: Path, run_id: str | None = None, through: int | None = None) -> list:
    observer = HarnessAguiObserver()
    for item in Journal(path, run_id=run_id, through=through):
        observer.observe(item)
    return list(observer.snapshot())


# -- replay ---------------------------------------------------------------------------

def test_replay_prints_the_projection_as_agui_json_lines() -> None:
    proc = cli("replay", TOOLS)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.splitlines() == [agui_to_json(e) for e in expected_events(TOOLS)]
    first = json.loads(proc.stdout.splitlines()[0])
    assert first == {"type": "RUN_STARTED", "timestamp": first["timestamp"], "threadId": "thread-trip",
                     "runId": "run-trip-1"}


def test_replay_prints_server_sent_events_frames() -> None:
    proc = cli("replay", CHAT, "--format", "sse")
    assert proc.returncode == 0
    assert proc.stdout == "".join(sse_frame(e) for e in expected_events(CHAT))
    assert proc.stdout.startswith("data: {") and proc.stdout.endswith("}\n\n")


def test_replay_pretty_shows_the_conversation_of_a_chat() -> None:
    proc = cli("replay", CHAT, "--format", "pretty")
    assert proc.returncode == 0 and proc.stderr == ""
    out = proc.stdout
    assert "user\n  Quelle est la différence entre un café crème et un cappuccino ?" in out
    assert "reasoning (signed)\n  The user asks in French" in out
    assert "assistant\n  Le café crème est un espresso" in out
    assert "== completed ==" in out and "tokens: 58 in, 61 out, 74 reasoning" in out


def test_replay_pretty_shows_tool_calls_with_args_results_and_the_failure() -> None:
    out = cli("replay", TOOLS, "--format", "pretty").stdout
    assert 'tool call get_weather [call-weather-1]\n  {"city": "Tokyo", "date": "2026-12-04"}' in out
    assert 'tool call convert_currency [call-fx-1]\n  {"amount": 200, "from": "EUR", "to": "JPY"}' in out
    assert "tool result train_status [call-train-1]: failed\n  {\"error\": \"upstream_unavailable\"" in out
    assert 'result: {"weather": "clear, 6-13 °C", "jpy": 33412, "train_status": null}' in out


def test_replay_pretty_shows_a_suspended_run_waiting_for_approval() -> None:
    out = cli("replay", SUSPENDED, "--format", "pretty").stdout
    assert "== suspended: waiting for 1 answer ==" in out
    assert "* Waiting for approval of delete_files [call-delete-1]" in out


def test_replay_through_a_sequence_prints_the_projection_of_that_prefix() -> None:
    proc = cli("replay", TOOLS, "--through", "20")
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [agui_to_json(e) for e in expected_events(TOOLS, through=20)]
    assert len(proc.stdout.splitlines()) < len(expected_events(TOOLS))


def test_replay_through_a_prefix_of_a_broken_journal_before_the_damage_works() -> None:
    proc = cli("replay", BROKEN, "--through", "2", "--format", "pretty")
    assert proc.returncode == 0, proc.stderr
    assert "Summarise the incident report." in proc.stdout
    assert "run not finished" in proc.stdout


def test_replay_chooses_a_run_of_several_with_run() -> None:
    proc = cli("replay", TWO_RUNS, "--run", "run-ops-2b")
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [agui_to_json(e) for e in expected_events(TWO_RUNS, run_id="run-ops-2b")]


def test_replay_reads_stdin_given_as_a_dash() -> None:
    proc = cli_bytes("replay", "-", "--format", "sse", stdin=CHAT.read_bytes())
    assert proc.returncode == 0
    assert proc.stdout.decode() == "".join(sse_frame(e) for e in expected_events(CHAT))


def test_replay_of_stdin_with_several_runs_needs_run_too() -> None:
    # Read once: the first run is replayed until the first item of the second ends it.
    proc = cli_bytes("replay", "-", stdin=TWO_RUNS.read_bytes())
    assert proc.returncode == 2
    assert proc.stderr.decode() == "harness-agui: <stdin>:40: an item of run 'run-ops-2b' follows the items of " \
        "run 'run-ops-2a': the file holds several runs, choose one with --run\n"
    assert proc.stdout.decode().splitlines() == \
        [agui_to_json(e) for e in expected_events(TWO_RUNS, run_id="run-ops-2a")]
    proc = cli_bytes("replay", "-", "--run", "run-ops-2a", stdin=TWO_RUNS.read_bytes())
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines() == \
        [agui_to_json(e) for e in expected_events(TWO_RUNS, run_id="run-ops-2a")]


def test_replay_output_is_utf8_whatever_the_locale() -> None:
    proc = subprocess.run([sys.executable, "-m", "harness_agui", "replay", str(CHAT)], capture_output=True,
                          timeout=120, env={**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    assert "café crème".encode() in proc.stdout


# -- replay: error paths -------------------------------------------------------------------

def test_replay_of_a_file_with_several_runs_without_run_is_a_usage_error() -> None:
    assert_one_line_error(cli("replay", TWO_RUNS), 2,
                          f"{TWO_RUNS}:40: an item of run 'run-ops-2b' follows the items of run 'run-ops-2a': "
                          "the file holds several runs, choose one with --run")


def test_replay_of_a_run_the_file_does_not_hold_is_a_usage_error() -> None:
    assert_one_line_error(cli("replay", TWO_RUNS, "--run", "run-zzz"), 2, f"{TWO_RUNS}: holds no items of run "
                                                                          "'run-zzz'")


def test_replay_of_an_undecodable_line_names_the_file_and_line() -> None:
    proc = cli("replay", BROKEN, "--run", "run-broken-1", "--through", "4")
    assert_one_line_error_at(proc, 1, f"{BROKEN}:5", "sequence 3", "repeated")


def test_replay_of_a_malformed_line_names_the_file_and_line(tmp_path: Path) -> None:
    items = SourceBuilder().user("hi").completed("ok").items
    path = tmp_path / "bad.jsonl"
    path.write_text(encode(items[0]) + "\n" + '{"v":1,"kind":"event"\n', encoding="utf-8")
    assert_one_line_error(cli("replay", path), 1,
                          f"{path}:2: malformed JSON: Expecting ',' delimiter at column 22")


def test_replay_of_a_line_with_an_unknown_version_names_the_file_and_line(tmp_path: Path) -> None:
    items = SourceBuilder().user("hi").completed("ok").items
    path = tmp_path / "v9.jsonl"
    path.write_text(encode(items[0]) + "\n" + encode(items[1]).replace('"v":2', '"v":9') + "\n", encoding="utf-8")
    assert_one_line_error(cli("replay", path), 1,
                          f"{path}:2: unknown wire version 9 (this release reads version 2)")


def test_replay_of_a_file_where_no_line_decodes_names_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "v3.jsonl"
    path.write_text('{"v":3,"kind":"event"}\n')
    done = cli("replay", path)
    assert done.returncode == 1
    assert done.stderr.strip() == f"harness-agui: {path}:1: unknown wire version 3 (this release reads version 2)"
    assert "Traceback" not in done.stderr


def test_replay_of_a_gap_names_the_file_and_line(tmp_path: Path) -> None:
    items = SourceBuilder().user("hi").observation("x", 1).completed("ok").items
    path = tmp_path / "gap.jsonl"
    path.write_text(encode(items[0]) + "\n" + encode(items[2]) + "\n", encoding="utf-8")
    assert_one_line_error_at(cli("replay", path), 1, f"{path}:2", "sequence 2", "missing")


def test_replay_of_a_run_the_observer_refuses_names_the_file_and_line(tmp_path: Path) -> None:
    # In order and decodable, but a delta for a part that never started.
    items = SourceBuilder().user("hi").request().event(
        PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="a"))).items
    path = tmp_path / "refused.jsonl"
    path.write_text("".join(encode(i) + "\n" for i in items), encoding="utf-8")
    assert_one_line_error(cli("replay", path, "--format", "pretty"), 1,
                          f"{path}:3: sequence 2: part delta for index 0, which is not open")


def test_replay_of_a_missing_file_is_an_error() -> None:
    assert_one_line_error(cli("replay", "no/such/file.jsonl"), 2, "no/such/file.jsonl: no such file")


def test_replay_of_a_directory_is_an_error() -> None:
    assert_one_line_error(cli("replay", DATA), 2, f"{DATA}: is a directory, not a journal file")


def test_replay_of_an_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    assert_one_line_error(cli("replay", path), 1, f"{path}: holds no source items")


def test_replay_of_a_run_that_does_not_start_at_sequence_0_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "late.jsonl"
    path.write_text("".join(encode(i) + "\n" for i in SourceBuilder(first_sequence=5).user("hi").items),
                    encoding="utf-8")
    assert_one_line_error_at(cli("replay", path, "--through", "4"), 1, f"{path}:1", "sequence 5")


def test_replay_through_a_negative_sequence_is_refused_by_the_argument_parser() -> None:
    assert_one_line_error(cli("replay", CHAT, "--through", "-1"), 2,
                          "argument --through: a sequence number is >= 0, got -1 (see 'harness-agui replay --help')")


def test_replay_in_an_unknown_format_is_refused_by_the_argument_parser() -> None:
    proc = cli("replay", CHAT, "--format", "xml")
    assert proc.returncode == 2 and "invalid choice: 'xml'" in proc.stderr


def test_replay_stops_quietly_when_the_reader_of_its_output_goes_away(tmp_path: Path) -> None:
    b = SourceBuilder().user("go").request()
    b.text(0, ["word "] * 5000)
    path = tmp_path / "long.jsonl"
    path.write_text("".join(encode(i) + "\n" for i in b.completed("done").items), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "harness_agui", "replay", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b'{"type":"RUN_STARTED"')
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141
    assert err == ""


# -- progress -------------------------------------------------------------------------------

def run_with_terminal_stderr(*args: str | Path) -> tuple[int, str, bytes]:
    """Run the CLI with stdout piped and stderr on a pseudo-terminal."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
    try:
        proc = subprocess.run([sys.executable, "-m", "harness_agui", *map(str, args)], stdout=subprocess.PIPE,
                              stderr=follower, timeout=120)
    finally:
        os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.returncode, proc.stdout.decode(), seen


def test_replay_shows_progress_on_stderr_when_it_is_a_terminal_and_erases_it() -> None:
    status, out, err = run_with_terminal_stderr("replay", TOOLS)
    assert status == 0
    assert b"replay " + str(TOOLS).encode() + b": line " in err
    assert b" of 18.2 KB (" in err
    assert err.endswith(b"\r\x1b[K")
    assert out.splitlines() == [agui_to_json(e) for e in expected_events(TOOLS)]


def test_check_shows_progress_on_stderr_when_it_is_a_terminal() -> None:
    status, out, err = run_with_terminal_stderr("check", TOOLS)
    assert status == 0 and out.endswith("OK: no problems\n")
    assert b"check " + str(TOOLS).encode() + b": line " in err


def test_no_progress_is_written_when_stderr_is_piped() -> None:
    for args in (("replay", TOOLS), ("replay", TOOLS, "--format", "pretty"), ("check", TOOLS)):
        proc = cli(*args)
        assert proc.returncode == 0 and proc.stderr == ""


# -- check -----------------------------------------------------------------------------------

def test_check_of_a_healthy_journal_reports_each_run_and_exits_zero() -> None:
    proc = cli("check", TWO_RUNS)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.splitlines() == [
        f"{TWO_RUNS}: 56 lines, 2 runs",
        "run 'run-ops-2a' (thread 'thread-ops-2'): 39 items, sequences 0-38, suspended",
        "  no problems",
        "run 'run-ops-2b' (thread 'thread-ops-2'): 17 items, sequences 0-16, completed",
        "  no problems",
        "OK: no problems",
    ]


def test_check_of_the_broken_journal_lists_every_problem_and_exits_one() -> None:
    proc = cli("check", BROKEN)
    assert proc.returncode == 1 and proc.stderr == ""
    assert proc.stdout.splitlines() == [
        f"{BROKEN}: 39 lines, 1 run",
        "run 'run-broken-1' (thread 'thread-broken'): 38 items, sequences 0-37, completed",
        "  gap: sequence 14 missing",
        "  duplicate: line 5: sequence 3 again",
        "  out of order: line 8: sequence 5 after 6",
        "  after terminal: line 39: sequence 37 after the completed result at line 38",
        "  projection refuses line 17: part delta for index 1, which is not open",
        "undecodable: line 10: malformed JSON: Unterminated string starting at column 102",
        "FAIL: 6 problems",
    ]


def test_check_reads_stdin_given_as_a_dash() -> None:
    proc = cli_bytes("check", "-", stdin=CHAT.read_bytes())
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines()[0] == "<stdin>: 90 lines, 1 run"


def test_check_of_a_missing_file_is_an_error() -> None:
    assert_one_line_error(cli("check", "nope.jsonl"), 2, "nope.jsonl: no such file")


# -- demo and the entry points ------------------------------------------------------------------

def test_demo_runs_the_main_job_and_exits_zero() -> None:
    proc = cli("demo")
    assert proc.returncode == 0, proc.stderr
    assert "snapshot equals the uninterrupted projection: True" in proc.stdout


def test_a_command_is_required() -> None:
    assert_one_line_error(cli(), 2, "the following arguments are required: COMMAND (see 'harness-agui --help')")


def test_help_lists_the_commands_and_the_exit_statuses() -> None:
    proc = cli("--help")
    assert proc.returncode == 0
    for word in ("replay", "check", "demo", "exit status", "141"):
        assert word in proc.stdout
    replay_help = cli("replay", "--help").stdout
    assert "--max-line-bytes N" in replay_help and "read once" in replay_help


def test_the_console_script_is_installed_next_to_python() -> None:
    script = Path(sys.executable).parent / "harness-agui"
    assert script.exists(), "reinstall the package (pip install -e .) to get the harness-agui script"
    proc = subprocess.run([str(script), "check", str(CHAT)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.endswith("OK: no problems\n")
