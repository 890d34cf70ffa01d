"""Every Host kit example runs as `python examples/NAME.py`, succeeds and says what it proved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str) -> str:
    result = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=120,
                            cwd=EXAMPLES.parent)
    assert result.returncode == 0, f"{name} exited with {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.stderr == ""
    return result.stdout


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("resume_live_tail.py", [
            "resume rebuilt 33 events and published none",
            "UI client reconnects with Last-Event-ID: 28.",
            "id: 29.",
            "projection equals an uninterrupted run's:          True",
            "client received every event id exactly once:       True",
        ]),
        ("failed_resume_retry.py", [
            "refused: SequenceGapError: run 'run-demo', sequence 18: sequence 17 missing",
            "failed: ConnectionResetError",
            "observer: is_fresh=True, run_id=None, events=0",
            "both broken histories were refused and the observer stayed fresh: True",
            "projection after the retry equals an uninterrupted run's:        True",
        ]),
        ("worker_takeover.py", [
            "journal holds runs ('run-worker-1', 'run-worker-2')",
            "feeding the old Run to the new observer is refused",
            "run-worker-1: 24 events, unfinished",
            "run-worker-2: 18 events, finished",
            "each Run projected by its own observer, old Run untouched by the new one: True",
        ]),
        ("notebook_debugging.py", [
            "toolCallId=\"call-forecast-1\"",
            "outcome=\"failed\"",
            "part delta for index 3, which is not open",
            "the session found the failed tool call and the broken step: True",
        ]),
    ],
)
def test_the_example_runs_and_reports_success(name, expected):
    out = run_example(name)
    for text in expected:
        assert text in out, f"{name}: {text!r} missing from\n{out}"

