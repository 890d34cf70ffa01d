"""The agent ``python -m bench.serve_load`` serves with ``harness-agui serve bench_agent:agent`` (from this
folder) and drives without a server (``a13n-bare``): a real a13n-harness agent (``HarnessBuilder`` and an
``AgentDefinition``, no tools) whose model streams the bench's stamped deltas (``stamps.py``: K deltas, one
every PACE seconds, each the wall-clock time at which the model yielded it, so a client, or the bare driver,
measures the latency from the model's yield to its receipt the same way for every path). Needs a13n-harness
(Python 3.13).
"""

from __future__ import annotations

from typing import Any

from a13n_harness import AgentDefinition, AgentSpec, HarnessBuilder
from stamps import DELTAS, PACE, stamping_model


def build(pace: float = PACE, deltas: int = DELTAS) -> Any:
    """An a13n-harness ``ExecutableAgent`` whose model streams ``deltas`` stamped deltas, one every ``pace``
    seconds."""
    return HarnessBuilder().build(AgentDefinition(agent=AgentSpec(), output_type=str,
                                                  model=stamping_model(pace, deltas)))


agent = build()
