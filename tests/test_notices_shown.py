"""The Harness's own notices (its ``harness.*`` CUSTOM events that are no input) are left out of what people
read by default, the pretty replay and the conversation views, and shown on request; a Host names the ones
its served streams carry (``AguiServer(notices=...)``), while the delivery log keeps them all."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from ag_ui.core import RunAgentInput
from test_serve_requests import body, serving

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.core.source import InputEvent
from harness_agui.debug.pretty import render_conversation
from harness_agui.debug.views import conversation_html, conversation_text
from harness_agui.host import SqliteDeliveryLog
from harness_agui.serve import AguiServer
from harness_agui.testing import SourceBuilder
from harness_agui.wire.codec import encode


def turn(thread_id: str = "thread-1", run_id: str = "run-1") -> list[HarnessStreamEvent]:
    b = SourceBuilder(thread_id, run_id)
    b.user("What is the weather?").request()
    b.event(InputEvent(input_id="env-1", source="environment", content="cwd=/srv"))
    b.observation("cache.hit_ratio", {"ratio": 0.93})
    b.text(0, ["It ", "rains."]).completed("It rains.")
    return b.items


def test_the_conversation_views_show_a_turn_as_a_person_reads_it_and_the_notices_on_request() -> None:
    observer = HarnessAguiObserver()
    for item in turn():
        observer.observe(item)
    events = observer.snapshot()
    plain, full = render_conversation(events), render_conversation(events, notices=True)
    assert "What is the weather?" in plain and "It rains." in plain and "cwd=/srv" in plain  # inputs stay
    assert "cache.hit_ratio" not in plain and "cache.hit_ratio" in full
    assert "cache.hit_ratio" not in conversation_text(observer) and "cache.hit_ratio" in conversation_text(
        observer, notices=True)
    assert "cache.hit_ratio" not in conversation_html(observer)
    assert "cache.hit_ratio" in conversation_html(observer, notices=True)


def test_replay_pretty_leaves_the_notices_out_unless_asked(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    journal.write_text("".join(encode(item) + "\n" for item in turn()))

    def pretty(*more: str) -> str:
        done = subprocess.run([sys.executable, "-m", "harness_agui", "replay", str(journal), "--format", "pretty",
                               *more], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    plain, full = pretty(), pretty("--notices")
    assert "It rains." in plain and "cache.hit_ratio" not in plain
    assert "cache.hit_ratio" in full


def test_a_host_names_the_notices_its_streams_carry_and_the_delivery_log_keeps_them_all(tmp_path: Path) -> None:
    async def harness(run_input: RunAgentInput) -> AsyncIterator[HarnessStreamEvent]:
        for item in turn(run_input.thread_id, run_input.run_id):
            yield item

    def customs(text: str) -> list[str]:
        return [json.loads(line[6:])["name"] for line in text.splitlines()
                if line.startswith("data: ") and '"type":"CUSTOM"' in line]

    async def scenario(notices: Any, database: Path) -> tuple[str, str]:
        server = AguiServer(harness, database=database, notices=notices, synchronous="NORMAL")
        async with serving(server) as base, httpx.AsyncClient(timeout=30) as client:
            posted = (await client.post(f"{base}/runs", json=body("t-1", "r-1"))).text
            followed = (await client.get(f"{base}/threads/t-1/runs/r-1/events")).text
        return posted, followed

    everything = asyncio.run(scenario(None, tmp_path / "all.db"))
    assert {"harness.input.environment", "harness.observation"} <= set(customs(everything[0]))
    none = asyncio.run(scenario((), tmp_path / "none.db"))
    assert customs(none[0]) == customs(none[1]) == []
    assert "It rains." in "".join(json.loads(line[6:]).get("delta", "") for line in none[0].splitlines()
                                  if line.startswith("data: "))
    inputs = asyncio.run(scenario(["harness.input."], tmp_path / "inputs.db"))
    assert customs(inputs[0]) == customs(inputs[1]) == ["harness.input.environment"]
    with SqliteDeliveryLog(tmp_path / "none.db", read_only=True) as log:
        kept = [json.loads(d.data) for d in log.replay("r-1")]
    assert sorted(e["name"] for e in kept if e["type"] == "CUSTOM") == sorted(customs(everything[0]))
