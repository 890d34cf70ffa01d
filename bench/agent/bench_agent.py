"""The agent ``python -m bench.serve_load`` serves with ``harness-agui serve bench_agent:agent`` (from this
folder) and drives without a server (``a13n-bare``): a real a13n-harness agent (``HarnessBuilder`` and an
``AgentDefinition``, no tools) whose pydantic-ai ``FunctionModel`` streams the bench Harness's text: K
deltas, one every PACE seconds, each the wall-clock time at which the model yielded it (so a client, or the
bare driver, measures the latency from the model's yield to its receipt the same way for every path).

K and PACE come from the environment (``HARNESS_AGUI_BENCH_DELTAS``, default 75, and
``HARNESS_AGUI_BENCH_PACE``, default 0.02), as ``harness-agui serve`` takes no options for the agent.
Needs a13n-harness (Python 3.13).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from a13n_harness import AgentDefinition, AgentSpec, HarnessBuilder
from pydantic_ai.models.function import FunctionModel

DELTAS = int(os.environ.get("HARNESS_AGUI_BENCH_DELTAS", "75"))
PACE = float(os.environ.get("HARNESS_AGUI_BENCH_PACE", "0.02"))


def build(pace: float = PACE, deltas: int = DELTAS) -> Any:
    """An a13n-harness ``ExecutableAgent`` whose model streams ``deltas`` stamped deltas, one every ``pace``
    seconds."""

    async def stamps(messages: list[Any], info: Any) -> AsyncIterator[str]:
        for _ in range(deltas):
            await asyncio.sleep(pace)
            yield f"{time.time():.6f} "

    return HarnessBuilder().build(AgentDefinition(
        agent=AgentSpec(), output_type=str, model=FunctionModel(stream_function=stamps, model_name="bench-stamps")))


agent = build()
