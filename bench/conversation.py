# What folding the conversation costs (core/conversation.py), on Runs of N
# tool calls (each: a model request, a short text, one tool call with its
# args in two chunks, its result):
#
#   - a live-only observer with ``track_messages=True`` folds every record as
#     it goes: its CPU time per item over the second half of the Run, against a
#     live-only observer that does not track messages (the difference is the
#     fold), with the garbage collector on (as a Host runs) and off (what the
#     collector adds); the per-item cost should not grow with N;
#   - a retained observer: ``messages()`` on a cold observer (the first call
#     folds the whole log), and ``messages()`` / ``catch_up()`` on a warm one
#     (the fold already done: what a read costs).
#
# Each size runs in a child process of its own, so one size's garbage does
# not weigh on the next. Times are process CPU time, medians of a few repeats.
#
#   .venv/bin/python -m bench.conversation                     # 5k, 10k, 20k, 40k tool calls
#   .venv/bin/python -m bench.conversation --sizes 1000,2000

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from harness_agui import HarnessAguiObserver
from harness_agui.testing import SourceBuilder

_now = time.process_time
TAIL = 0.5  # the share of the Run whose per-item cost is reported (its second half: long enough to
#            include the full collections its growth triggers)


def tool_calls(n: int) -> list[Any]:
    """The items of a Run of ``n`` tool calls."""
    b = SourceBuilder("thread-bench", "run-bench").user("go")
    for i in range(n):
        b.request().text(0, [f"step {i}"]).tool_call(1, "lookup", f"call-{i}", ['{"key": ', f'{i}}}'])
        b.tool_result(f"call-{i}", "lookup", {"value": i})
    return b.completed("done").items


def _tail_cost(items: list[Any], make: Any, collect: bool) -> float:
    """CPU microseconds per item over the last TAIL of ``items``."""
    cut = int(len(items) * (1 - TAIL))
    gc.collect()
    if not collect:
        gc.disable()
    try:
        observer = make()
        for item in items[:cut]:
            observer.observe(item)
        t0 = _now()
        for item in items[cut:]:
            observer.observe(item)
        spent = _now() - t0
    finally:
        gc.enable()
    del observer
    gc.collect()
    return spent / (len(items) - cut) * 1e6


def _reads(items: list[Any], repeats: int) -> dict[str, float]:
    cold = []
    for _ in range(repeats):
        observer = HarnessAguiObserver()
        for item in items:
            observer.observe(item)
        gc.collect()
        t0 = _now()
        observer.messages()
        cold.append(_now() - t0)
    warm_messages, warm_catch_up = [], []
    for _ in range(repeats):
        t0 = _now()
        observer.messages()
        warm_messages.append(_now() - t0)
        t0 = _now()
        observer.catch_up()
        warm_catch_up.append(_now() - t0)
    return {"messages_cold_ms": statistics.median(cold) * 1e3,
            "messages_warm_ms": statistics.median(warm_messages) * 1e3,
            "catch_up_warm_ms": statistics.median(warm_catch_up) * 1e3}


def measure(n: int, repeats: int) -> dict[str, Any]:
    items = tool_calls(n)
    tracked = lambda: HarnessAguiObserver(retain_events=False, track_messages=True)  # noqa: E731
    untracked = lambda: HarnessAguiObserver(retain_events=False)  # noqa: E731
    out: dict[str, Any] = {"tool_calls": n, "items": len(items)}
    for label, make in (("tracked", tracked), ("untracked", untracked)):
        for collect in (True, False):
            key = f"{label}_us_per_item_gc_{'on' if collect else 'off'}"
            out[key] = statistics.median(_tail_cost(items, make, collect) for _ in range(repeats))
    out.update(_reads(items, repeats))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="5000,10000,20000,40000", help="numbers of tool calls")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.repeats)))
        return
    print("| tool calls | items | tracked us/item (gc on / off) | untracked us/item (gc on / off) | "
          "fold us/item (gc on) | messages() cold ms | messages() warm ms | catch_up() warm ms |")
    print("|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        done = subprocess.run([sys.executable, "-m", "bench.conversation", "--child", str(size),
                               "--repeats", str(args.repeats)], capture_output=True, text=True, check=True)
        r = json.loads(done.stdout)
        fold = r["tracked_us_per_item_gc_on"] - r["untracked_us_per_item_gc_on"]
        print(f"| {r['tool_calls']:,} | {r['items']:,} | {r['tracked_us_per_item_gc_on']:.1f} / "
              f"{r['tracked_us_per_item_gc_off']:.1f} | {r['untracked_us_per_item_gc_on']:.1f} / "
              f"{r['untracked_us_per_item_gc_off']:.1f} | {fold:.1f} | {r['messages_cold_ms']:.1f} | "
              f"{r['messages_warm_ms']:.1f} | {r['catch_up_warm_ms']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
