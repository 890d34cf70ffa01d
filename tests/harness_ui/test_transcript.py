# a13n-harness-ui 0.21, a Host of a13n-stream-protocol, run offline through its own headless command: a user
# prompt, a tool call its tool refuses (retried), the call again, the answer (tools/harness_ui_transcript.py).
# With the compat package behind the name a13n_stream_protocol it stores the same display transcript as with
# a13n-stream-protocol itself: the DisplayFold items of its checkpoint and the transcript page it serves, with
# no turn more or less. `make test-harness-ui` runs this in a venv of its own (.venv-harness-ui); `make test`
# never collects this folder.

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("a13n_harness_ui", reason="needs a13n-harness-ui 0.21: make test-harness-ui")

TOOL = Path(__file__).resolve().parents[2] / "tools" / "harness_ui_transcript.py"


def stored(tmp_path: Path, *, compat: bool) -> dict[str, Any]:
    out = tmp_path / ("compat.json" if compat else "upstream.json")
    done = subprocess.run([sys.executable, str(TOOL), *(["--compat"] if compat else []), str(out)],
                          capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())


def test_harness_ui_stores_the_same_display_transcript_on_the_compat_package_as_on_upstream(tmp_path: Path) -> None:
    theirs, ours = stored(tmp_path, compat=False), stored(tmp_path, compat=True)
    assert theirs.pop("a13n_stream_protocol") == "a13n_stream_protocol"
    assert ours.pop("a13n_stream_protocol") == "harness_agui.compat.a13n_stream_protocol"
    assert ours == theirs
    # The Run is the one described, and its transcript shows it: one turn of the user, the call retried, the
    # call again, the answer.
    shown = [(item["kind"], item["state"]) for item in theirs["display_history"]["items"]
             if item["kind"] != "observation"]
    assert shown == [("text_message", "completed"), ("text_message", "completed"), ("tool_call", "failed"),
                     ("tool_call", "completed"), ("text_message", "completed")]
    parts = [part for entry in theirs["transcript"]["entries"] for part in entry["parts"]]
    users = [part for part in parts if part["kind"] == "user" and part["metadata"]["display"]]
    assert len(users) == 1 and users[0]["text"].startswith("How many tasks are open?")
    assert [part["outcome"] for part in parts if part["kind"] in ("retry", "tool_result")] == ["retried", "success"]
    assert parts[-1]["kind"] == "assistant" and parts[-1]["text"].endswith("6 times 7 is 42.")
