# a13n-service 0.0.94 switched to harness-agui: its own fold (a13n_service.runs: the Coalescer and DisplayFold its
# worker runs) stores the same events, sequences, display items and committed display for real a13n-harness 0.5
# Runs made afresh, with upstream a13n-stream-protocol 0.5.4 and with harness_agui.compat.install() applied. The
# driver (tools/a13n_service_display.py) swaps the modules inside one process, so it runs in a fresh interpreter.

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("a13n_service", reason="needs a13n-service 0.0.94 (Python 3.13): make test-a13n-05")

ROOT = Path(__file__).resolve().parents[2]


def test_the_service_stores_the_same_display_and_stream_with_the_swap_as_with_upstream() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "a13n_service_display.py")], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.stdout.strip(), done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["vocabularies"] == ["a13n_stream_protocol.observer",
                                       "harness_agui.compat.a13n_stream_protocol_05.observer"]
    assert summary["differences"] == 0, summary["first_differences"]
    assert done.returncode == 0, done.stderr
    assert summary["runs"] >= 10 and summary["deltas"] > 200 and summary["display_items"] > 100
