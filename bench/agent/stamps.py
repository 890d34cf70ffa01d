"""The bench's model: a pydantic-ai ``FunctionModel`` that streams K deltas, one every PACE seconds, each the
wall-clock time at which it yielded it. Shared by the a13n-harness agent (``bench_agent.py``) and the plain
pydantic-ai agent served by pydantic-ai's own AG-UI adapter (``adapter_app.py``), so both stream the same text
at the same pace.

K and PACE come from the environment (``HARNESS_AGUI_BENCH_DELTAS``, default 75, and
``HARNESS_AGUI_BENCH_PACE``, default 0.02), as neither server takes options for the agent.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai.models.function import FunctionModel

DELTAS = int(os.environ.get("HARNESS_AGUI_BENCH_DELTAS", "75"))
PACE = float(os.environ.get("HARNESS_AGUI_BENCH_PACE", "0.02"))


def stamping_model(pace: float = PACE, deltas: int = DELTAS) -> FunctionModel:
    """A model whose every answer is ``deltas`` stamped deltas, one every ``pace`` seconds."""

    async def stamps(messages: list[Any], info: Any) -> AsyncIterator[str]:
        for _ in range(deltas):
            await asyncio.sleep(pace)
            yield f"{time.time():.6f} "

    return FunctionModel(stream_function=stamps, model_name="bench-stamps")
