# For the process that serves, beside the app: ``tune_collector``, the garbage collector of a long-running
# server (the process owner's call: ``harness-agui serve`` makes it once uvicorn is up), and
# ``demo_harness``, the built-in simulated Harness that ``harness-agui serve --demo`` serves without
# a13n-harness.

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator

from ag_ui.core import RunAgentInput

from ..core.source import HarnessStreamEvent
from ..host.checks import Cursor
from ..host.runner import RunnerCallable
from ..host.supervisor import Reattach


def tune_collector(*, young: int = 10_000) -> None:
    """Set CPython's cyclic garbage collector for a long-running server process: what is alive now (the
    imported modules, the app) is collected once and then frozen out of every later collection
    (``gc.freeze()``), and the youngest generation is collected after ``young`` new container objects
    instead of the interpreter's default (700 on Python 3.11 and 3.12, 2,000 on 3.13); a threshold that is
    already higher is kept. Reference counting still frees nearly everything at once: only cycles wait
    longer, and the full collections no longer walk the start-up heap (tens of milliseconds each).

    It changes the whole process, so it is the process owner's call: ``harness-agui serve`` makes it once
    uvicorn is up (``--no-gc-tuning`` leaves the collector alone), and a Host that embeds the app calls it
    once, after its imports and before serving. ValueError for a ``young`` that is not an int >= 1."""
    if isinstance(young, bool) or not isinstance(young, int) or young < 1:
        raise ValueError(f"young must be an int >= 1, not {young!r}")
    gc.collect()
    gc.freeze()
    first, second, third = gc.get_threshold()
    gc.set_threshold(max(first, young), second, third)


def demo_harness(*, pace: float = 0.03) -> tuple[RunnerCallable, Reattach]:
    """A simulated Harness for demonstrations: the Run of ``testing.simulated_run`` under the
    request's thread and run ids, one item every ``pace`` seconds (about a model's token rate), and
    the matching ``Reattach`` that continues it after a restart. It answers every request the same way."""
    from ..testing.builder import simulated_run

    async def items(thread_id: str, run_id: str, after: Cursor) -> AsyncIterator[HarnessStreamEvent]:
        start = 0 if after is None else after + 1
        for item in simulated_run(thread_id, run_id)[start:]:
            await asyncio.sleep(pace)
            yield item

    def runner(run_input: RunAgentInput) -> AsyncIterator[HarnessStreamEvent]:
        return items(run_input.thread_id, run_input.run_id, None)

    def reattach(thread_id: str, run_id: str, after: Cursor) -> AsyncIterator[HarnessStreamEvent]:
        return items(thread_id, run_id, after)

    return runner, reattach
