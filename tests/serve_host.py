"""An AG-UI server for the serve tests: ``harness_agui.serve`` under uvicorn, with a scripted Harness.

    python tests/serve_host.py DATABASE PORT SCENARIO [--keepalive SECONDS] [--catch-up-after N]
                               [--items N] [--pace SECONDS] [--synchronous MODE]

tests/test_serve.py starts it as a child process (the demo Harness is
started through the command line instead: ``harness-agui serve --demo``).
Each scenario is a Harness that answers any request with the Run it names:

- ``refused``: a few good items, a pause, then a part delta for a part that
  was never started: the journal accepts it (its order is right), the
  projection refuses it;
- ``raises``: a few good items, a pause, then the Harness stream raises;
- ``stalls``: a few good items, then nothing for a long while (keep-alives);
- ``exits``: a few good items, a pause, then the Harness stream raises SystemExit (a runner must never
  take the server down);
- ``paced``: a Run of ``--items`` text deltas (one event each) and its result, one item every
  ``--pace`` seconds; restarted or taken over, it is re-attached after the journal's cursor;
- ``tools``: ``--items`` tool calls with their results as fast as the server takes them, then
  nothing for a long while (a long live Run for late joiners).

DATABASE is a SQLite file or a ``postgresql://`` URL (several servers may share one).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from typing import Any

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


def paced_items(thread_id: str, run_id: str, count: int) -> list[HarnessStreamEvent]:
    b = SourceBuilder(thread_id, run_id)
    b.user("Count for me.")
    b.request()
    b.text(0, [f"{n} " for n in range(count)])
    b.completed("counted", input_tokens=10, output_tokens=count)
    return b.items


def tool_items(thread_id: str, run_id: str, count: int) -> list[HarnessStreamEvent]:
    b = SourceBuilder(thread_id, run_id)
    b.user("Call the tool many times.")
    for n in range(count):
        b.request()
        b.tool_call(0, "lookup", f"call-{n}", ['{"n": ', f"{n}}}"])
        b.tool_result(f"call-{n}", "lookup", {"n": n})
    return b.items


def harness(scenario: str, items: int = 300, pace: float = 0.01):  # type: ignore[no-untyped-def]
    async def paced(thread_id: str, run_id: str, after: int | None) -> AsyncIterator[HarnessStreamEvent]:
        for item in paced_items(thread_id, run_id, items)[0 if after is None else after + 1:]:
            await asyncio.sleep(pace)
            yield item

    async def tools(thread_id: str, run_id: str) -> AsyncIterator[HarnessStreamEvent]:
        for item in tool_items(thread_id, run_id, items):
            yield item
        await asyncio.sleep(3600)

    async def run(run_input: RunAgentInput) -> AsyncIterator[HarnessStreamEvent]:
        if scenario == "paced":
            async for item in paced(run_input.thread_id, run_input.run_id, None):
                yield item
            return
        if scenario == "tools":
            async for item in tools(run_input.thread_id, run_input.run_id):
                yield item
            return
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
        elif scenario == "exits":
            raise SystemExit(3)
        else:
            raise ValueError(f"unknown scenario {scenario!r}")

    def reattach(thread_id: str, run_id: str, after: int | None) -> AsyncIterator[HarnessStreamEvent]:
        return paced(thread_id, run_id, after)

    return run, (reattach if scenario == "paced" else None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database")
    parser.add_argument("port", type=int)
    parser.add_argument("scenario")
    parser.add_argument("--keepalive", type=float, default=15.0)
    parser.add_argument("--catch-up-after", type=int, default=1000)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--pace", type=float, default=0.01)
    parser.add_argument("--synchronous", default="NORMAL")
    args = parser.parse_args()
    runner, reattach = harness(args.scenario, args.items, args.pace)
    options: dict[str, Any] = {} if args.database.startswith("postgresql://") else {"synchronous": args.synchronous}
    app = create_app(runner, reattach=reattach, database=args.database, keepalive=args.keepalive,
                     poll_interval=0.02, catch_up_after=args.catch_up_after, **options)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", timeout_graceful_shutdown=1)


if __name__ == "__main__":
    main()
