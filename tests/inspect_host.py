"""An AG-UI server with the run inspector mounted, for tests/test_inspect_browser.py.

    python tests/inspect_host.py DATABASE PORT

``AguiServer(..., inspector=True)`` under uvicorn: its Harness answers every request with a Run of forty
words, one every 0.1 s; its ``authorize`` hook lets through only requests that carry
``Authorization: Bearer inspector-test``, and writes each action it was asked about to stderr.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import uvicorn
from ag_ui.core import RunAgentInput

from harness_agui import HarnessStreamEvent
from harness_agui.host.runner import RequestContext
from harness_agui.serve import AguiServer
from harness_agui.testing import SourceBuilder

WORDS = [f"word{n:02d} " for n in range(40)]


async def harness(run_input: RunAgentInput) -> AsyncIterator[HarnessStreamEvent]:
    b = SourceBuilder(run_input.thread_id, run_input.run_id)
    for item in b.user("Count slowly.").request().text(0, WORDS).completed("counted").items:
        await asyncio.sleep(0.1)
        yield item


def authorize(context: RequestContext) -> bool:
    print(f"authorize {context.action} {context.run_id}", file=sys.stderr, flush=True)
    return context.headers.get("authorization") == "Bearer inspector-test"


def main() -> None:
    database, port = sys.argv[1], int(sys.argv[2])
    server = AguiServer(harness, database=database, synchronous="NORMAL", authorize=authorize, inspector=True)
    uvicorn.run(server.app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1)


if __name__ == "__main__":
    main()
