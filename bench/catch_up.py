# What a late joiner's catch-up costs with many live subagents (issue 36,
# item 13): a root Run whose one model response delegated to N children, all
# still running, each in the middle of a text part
# (``testing.fanned_out_delegation``). For each N, in a child process of its
# own, process CPU time of:
#
#   - observe: the observer taking every item of the stream;
#   - catch_up cold: the first ``observer.catch_up()`` of a retained
#     observer (it folds the whole log into the conversation, then writes
#     RUN_STARTED, the MESSAGES_SNAPSHOT, a SUBAGENT_STARTED per running
#     child and the start and content so far of each open message) - what
#     the first late joiner pays;
#   - catch_up warm: a second call (the fold already done);
#   - live-only: a live-only observer that tracks messages folds as it goes,
#     so its observe holds the fold, and its catch_up is a warm one.
#
# The cost per child should stay flat as N grows.
#
#   .venv/bin/python -m bench.catch_up                        # 500, 1k, 2k, 4k, 10k children
#   .venv/bin/python -m bench.catch_up --sizes 1000,2000 --timeout 120

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from typing import Any

from harness_agui import HarnessAguiObserver
from harness_agui.testing.delegation import fanned_out_delegation

_now = time.process_time


def measure(children: int) -> dict[str, Any]:
    items = fanned_out_delegation(children)
    out: dict[str, Any] = {"children": children, "items": len(items)}
    gc.collect()
    observer = HarnessAguiObserver()
    t0 = _now()
    for item in items:
        observer.observe(item)
    out["observe_s"] = _now() - t0
    t0 = _now()
    caught = observer.catch_up()
    out["catch_up_cold_s"] = _now() - t0
    t0 = _now()
    observer.catch_up()
    out["catch_up_warm_s"] = _now() - t0
    out["catch_up_events"] = len(caught)
    out["subagents_started"] = sum(e.type.value == "SUBAGENT_STARTED" for e in caught)
    del observer, caught
    gc.collect()
    live = HarnessAguiObserver(retain_events=False, track_messages=True)
    t0 = _now()
    for item in items:
        live.observe(item)
    out["live_observe_s"] = _now() - t0
    t0 = _now()
    live.catch_up()
    out["live_catch_up_s"] = _now() - t0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="500,1000,2000,4000,10000", help="numbers of live children")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a size may take before it is stopped")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child)))
        return
    print("| children | items | observe s | catch_up() cold s | us per child | catch_up() warm s | "
          "live-only observe s | live-only catch_up() s | catch-up events |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        try:
            done = subprocess.run([sys.executable, "-m", "bench.catch_up", "--child", str(size)], capture_output=True,
                                  text=True, check=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"| {size:,} | | (stopped after {args.timeout:.0f} s) | | | | | | |", flush=True)
            rows.append({"children": size, "stopped_after_s": args.timeout})
            continue
        r = json.loads(done.stdout)
        rows.append(r)
        print(f"| {r['children']:,} | {r['items']:,} | {r['observe_s']:.2f} | {r['catch_up_cold_s']:.2f} | "
              f"{r['catch_up_cold_s'] / size * 1e6:.0f} | {r['catch_up_warm_s']:.3f} | {r['live_observe_s']:.2f} | "
              f"{r['live_catch_up_s']:.3f} | {r['catch_up_events']:,} |", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
