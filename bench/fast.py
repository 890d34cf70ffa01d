# What each private speed path of the reducer (core/_fast.py) saves against
# its public counterpart, on the values a real token builds: the time per
# call, median of several repeats of a timed loop, both ways side by side in
# one process, and the saving as a ratio. A path stays in core/_fast.py only
# while this shows it pays.
#
#   .venv/bin/python -m bench.fast

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import attrs

from harness_agui.core import _fast
from harness_agui.core.history import HistoryCursor
from harness_agui.core.state import OpenPart, ProjectionState, RunState, SubagentState


def _per_call(fn: Callable[[], Any], n: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fast", description=__doc__)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    part = OpenPart(0, "text", "run-1:request-0:part-0:text", streamed=10)
    run = RunState(history=HistoryCursor("run-1", "thread-1", 5), parts=(part,))
    history = HistoryCursor("run-1", "thread-1", 6)
    state = ProjectionState(root=run)
    events = state.events.append(("TEXT_MESSAGE_CONTENT", 1, part.message_id, "x"))
    sub = SubagentState("run-child", run, status="running")
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("OpenPart, one field changed", lambda: _fast.part_streamed(part, 11), lambda: part._replace(streamed=11)),
        ("RunState, a token's fields", lambda: _fast.new_tuple(RunState, (history, (part,), run.ledger)),
         lambda: run._replace(history=history, parts=(part,))),
        ("ProjectionState, root and events",
         lambda: _fast.new_tuple(ProjectionState, (run, state[1], state[2], state[3], state[4], events, state[6])),
         lambda: state._replace(root=run, events=events)),
        ("SubagentState, one field changed", lambda: _fast.with_fields(sub, status="completed"),
         lambda: attrs.evolve(sub, status="completed")),
    ]
    print(f"{'value':36} {'fast':>9} {'public':>9} {'public/fast':>12}")
    for name, fast, public in cases:
        f, p = _per_call(fast, args.n, args.repeats), _per_call(public, args.n, args.repeats)
        print(f"{name:36} {f * 1e9:7.0f}ns {p * 1e9:7.0f}ns {p / f:11.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
