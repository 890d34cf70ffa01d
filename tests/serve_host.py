"""An AG-UI server for the serve tests: ``harness_agui.serve`` under uvicorn, with a scripted Harness.

    python tests/serve_host.py DATABASE PORT SCENARIO [--keepalive SECONDS] [--catch-up-after N]

tests/test_serve.py starts it as a child process (the demo Harness is
started through the command line instead: ``harness-agui serve --demo``).
Each scenario is a Harness that answers any request with the Run it names:

- ``refused``: a few good items, a pause, then a part delta for a part that
  was never started: the journal accepts it (its order is right), the
  projection refuses it;
- ``raises``: a few good items, a pause, then the Harness stream raises;
- ``stalls``: a few good items, then nothing for a long while (keep-alives).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator

import uvicorn
from ag_ui.core import RunAgentInput

from harness_agui import HarnessStreamEvent
from harness_agui.core.source import PartDeltaEvent, TextPartDelta
from harness_agui.serve import create_app
from harness_agui.testing import SourceBuilder

PAUSE = 0.4  # seconds between the good items and the fault, so that followers are connected


def good_items(run_input: RunAgentInput) -> list[HarnessStreamEvent]:
    b = SourceBuilder(run_input.thread_id, run_input.run_id)
    b.user("Tell me about Lyon.")
    b.request()
    b.text(0, ["Lyon ", "is ", "a ", "city."])
    return b.items


def harness(scenario: str):  # type: ignore[no-untyped-def]
    async def run(run_input: RunAgentInput) -> AsyncIterator[HarnessStreamEvent]:
        items = good_items(run_input)
        for item in items:
            yield item
        await asyncio.sleep(PAUSE)
        if scenario == "refused":
            b = SourceBuilder(run_input.thread_id, run_input.run_id, first_sequence=len(items))
            yield b.event(PartDeltaEvent(index=5, delta=TextPartDelta(content_delta="orphan"))).items[0]
            await asyncio.sleep(3600)  # a Harness that goes on: the server must stop reading it
        elif scenario == "raises":
            raise ConnectionResetError("the Harness went away")
        elif scenario == "stalls":
            await asyncio.sleep(3600)
        else:
            raise ValueError(f"unknown scenario {scenario!r}")

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database")
    parser.add_argument("port", type=int)
    parser.add_argument("scenario")
    parser.add_argument("--keepalive", type=float, default=15.0)
    parser.add_argument("--catch-up-after", type=int, default=1000)
    args = parser.parse_args()
    app = create_app(harness(args.scenario), database=args.database, synchronous="NORMAL",
                     keepalive=args.keepalive, poll_interval=0.02, catch_up_after=args.catch_up_after)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", timeout_graceful_shutdown=1)


if __name__ == "__main__":
    main()
