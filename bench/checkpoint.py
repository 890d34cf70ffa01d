# Checkpoints, live-only mode and catch-up, on the bench history
# (bench/history.py):
#
#   - resume from a checkpoint taken 100 items before the end of a Run, against
#     a full resume of the same Run (target: under 2%), sealed with a key as
#     the Host kit's store seals them; also what writing the checkpoint
#     costs, its size, and what decoding the whole restored log costs when
#     somebody then reads the snapshot (the sealed blocks of a restored log
#     are checked against their digests and decoded on first read, see
#     core/checkpoint.py); and the same resume from an unkeyed checkpoint;
#   - the same for a live-only observer (its own checkpoint, no events in
#     it; target: under 2%), and for a live-only one that tracks messages
#     (its checkpoint holds the conversation, which grows with the text);
#   - memory the observer keeps alive per emitted event (tracemalloc, in a
#     child process each), retained vs live-only (target: under 10 B
#     amortized), and live-only with message tracking;
#   - catch_up() at each size: its time on a warm observer (messages already
#     folded) and on a cold one (the first call folds the whole log), the
#     number of events and the bytes of their JSON, against the full stream.
#
# Times are process CPU time, medians of a few repeats, garbage collector on.
#
#   .venv/bin/python -m bench.checkpoint                      # 10^3..10^5
#   .venv/bin/python -m bench.checkpoint --sizes 1e3,1e4,1e5,1e6

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from harness_agui import HarnessAguiObserver
from harness_agui.wire.agui import agui_to_json

from .history import DEFAULT_SEED, history

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
BEHIND = 100
KEY = b"bench key: 32 bytes, any will do"
_now = time.process_time


def _median(values: list[float]) -> float:
    return statistics.median(values)


def measure_resume(items: list[Any], repeats: int) -> dict[str, Any]:
    head, tail = items[:-BEHIND], items[-BEHIND:]
    writer = HarnessAguiObserver()
    for item in head:
        writer.observe(item)
    writes = []
    for _ in range(repeats):
        t0 = _now()
        data = writer.checkpoint(key=KEY)
        writes.append(_now() - t0)
    unkeyed_data = writer.checkpoint()
    full, fast, decoded, unkeyed = [], [], [], []
    for _ in range(repeats):
        gc.collect()
        observer = HarnessAguiObserver()
        t0 = _now()
        asyncio.run(observer.resume(items))
        full.append(_now() - t0)
        reference = observer.state
        del observer
        gc.collect()
        observer = HarnessAguiObserver()
        t0 = _now()
        asyncio.run(observer.resume(tail, checkpoint=data, key=KEY))
        fast.append(_now() - t0)
        t0 = _now()
        for _block in observer.state.events.sealed_blocks():  # what a later full read adds: decode every block
            pass
        decoded.append(_now() - t0)
        assert observer.state == reference
        del observer
        gc.collect()
        observer = HarnessAguiObserver()
        t0 = _now()
        asyncio.run(observer.resume(tail, checkpoint=unkeyed_data))
        unkeyed.append(_now() - t0)
        assert observer.state == reference
    return {"full_resume_s": _median(full), "checkpoint_resume_s": _median(fast),
            "ratio": _median(fast) / _median(full), "decode_rest_s": _median(decoded),
            "unkeyed_resume_s": _median(unkeyed), "unkeyed_ratio": _median(unkeyed) / _median(full),
            "checkpoint_write_s": _median(writes), "checkpoint_bytes": len(data)}


def measure_live_resume(items: list[Any], repeats: int, **mode: Any) -> dict[str, Any]:
    """Full resume against resume from a keyed checkpoint 100 items behind, for a live-only observer."""
    head, tail = items[:-BEHIND], items[-BEHIND:]
    writer = HarnessAguiObserver(retain_events=False, **mode)
    for item in head:
        writer.observe(item)
    data = writer.checkpoint(key=KEY)
    full, fast = [], []
    for _ in range(repeats):
        gc.collect()
        observer = HarnessAguiObserver(retain_events=False, **mode)
        t0 = _now()
        asyncio.run(observer.resume(items))
        full.append(_now() - t0)
        reference = observer.state
        del observer
        gc.collect()
        observer = HarnessAguiObserver(retain_events=False, **mode)
        t0 = _now()
        asyncio.run(observer.resume(tail, checkpoint=data, key=KEY))
        fast.append(_now() - t0)
        assert observer.state == reference
        del observer
    return {"full_resume_s": _median(full), "checkpoint_resume_s": _median(fast),
            "ratio": _median(fast) / _median(full), "checkpoint_bytes": len(data)}


def child_memory(size: int, seed: int, mode: str) -> dict[str, Any]:
    """Bytes the observer keeps alive per emitted event, in this process."""
    items = history(size, seed)
    kwargs = {"retained": {}, "live": {"retain_events": False},
              "live+messages": {"retain_events": False, "track_messages": True}}[mode]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    observer = HarnessAguiObserver(**kwargs)  # type: ignore[arg-type]
    half = len(items) // 2
    for item in items[:half]:
        observer.observe(item)
    gc.collect()
    middle, middle_events = tracemalloc.get_traced_memory()[0], observer.event_count
    for item in items[half:]:
        observer.observe(item)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    n = observer.event_count
    return {"mode": mode, "events": n, "bytes_per_event": (after - before) / n,
            "second_half_bytes_per_event": (after - middle) / (n - middle_events)}


def _memory(size: int, seed: int, mode: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "bench.checkpoint", "--child", mode, "--sizes", str(size),
                           "--seed", str(seed)], capture_output=True, text=True, cwd=ROOT, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def measure_catch_up(items: list[Any], repeats: int) -> dict[str, Any]:
    observer = HarnessAguiObserver()
    for item in items[:len(items) * 2 // 3]:  # mid-run: parts open, messages still streaming
        observer.observe(item)
    observer.messages()
    warm = []
    for _ in range(repeats):
        t0 = _now()
        events = observer.catch_up()
        warm.append(_now() - t0)
    cold = []
    for _ in range(repeats):
        again = HarnessAguiObserver.restore(observer.checkpoint())
        t0 = _now()
        again.catch_up()
        cold.append(_now() - t0)
    catch_up_bytes = sum(len(agui_to_json(e)) for e in events)
    stream_bytes = sum(len(agui_to_json(e)) for e in observer.snapshot())
    return {"catch_up_warm_s": _median(warm), "catch_up_cold_s": _median(cold), "catch_up_events": len(events),
            "catch_up_bytes": catch_up_bytes, "stream_events": observer.event_count, "stream_bytes": stream_bytes,
            "messages": len(observer.messages())}


def bench_size(size: int, seed: int, repeats: int, memory: bool, log: Any) -> dict[str, Any]:
    items = history(size, seed)
    out: dict[str, Any] = {"size": size}
    log(f"{size}: resume")
    out.update(measure_resume(items, repeats))
    log(f"{size}: resume, live-only")
    out["live"] = measure_live_resume(items, repeats)
    out["live_messages"] = measure_live_resume(items, repeats, track_messages=True)
    log(f"{size}: catch_up")
    out.update(measure_catch_up(items, repeats))
    if memory:
        log(f"{size}: memory")
        for mode in ("retained", "live", "live+messages"):
            out[f"memory_{mode}"] = _memory(size, seed, mode)
    return out


def _fmt_s(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def write_markdown(results: list[dict[str, Any]], meta: dict[str, Any], path: Path) -> None:
    lines = [f"# Checkpoints, live-only mode, catch-up ({meta['when']}, Python {meta['python']}, "
             f"`{meta['command']}`)", "",
             "| items | full resume | resume from keyed checkpoint 100 behind | ratio | decode the rest later | "
             "unkeyed | ratio | write checkpoint | checkpoint size |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['size']:,} | {_fmt_s(r['full_resume_s'])} | {_fmt_s(r['checkpoint_resume_s'])} | "
                     f"{r['ratio'] * 100:.2f}% | {_fmt_s(r['decode_rest_s'])} | {_fmt_s(r['unkeyed_resume_s'])} | "
                     f"{r['unkeyed_ratio'] * 100:.2f}% | {_fmt_s(r['checkpoint_write_s'])} "
                     f"| {r['checkpoint_bytes'] / 1e6:.2f} MB |")
    lines += ["", "| items | live-only: full resume | from keyed checkpoint 100 behind | ratio | checkpoint size | "
              "live-only + messages: full resume | from checkpoint | ratio | checkpoint size |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lv, lm = r["live"], r["live_messages"]
        lines.append(f"| {r['size']:,} | {_fmt_s(lv['full_resume_s'])} | {_fmt_s(lv['checkpoint_resume_s'])} | "
                     f"{lv['ratio'] * 100:.2f}% | {lv['checkpoint_bytes'] / 1e6:.2f} MB | "
                     f"{_fmt_s(lm['full_resume_s'])} | {_fmt_s(lm['checkpoint_resume_s'])} | "
                     f"{lm['ratio'] * 100:.2f}% | {lm['checkpoint_bytes'] / 1e6:.2f} MB |")
    lines += ["", "| items | kept per event: retained | live-only | live-only + messages | "
              "(second half of the Run: retained / live-only) |", "|---|---|---|---|---|"]
    for r in results:
        if "memory_live" in r:
            m = r
            lines.append(f"| {r['size']:,} | {m['memory_retained']['bytes_per_event']:.1f} B | "
                         f"{m['memory_live']['bytes_per_event']:.1f} B | "
                         f"{m['memory_live+messages']['bytes_per_event']:.1f} B | "
                         f"{m['memory_retained']['second_half_bytes_per_event']:.1f} B / "
                         f"{m['memory_live']['second_half_bytes_per_event']:.1f} B |")
    lines += ["", "| items | catch_up() warm | cold (first call folds the log) | catch-up events | catch-up JSON | "
              "full stream events | full stream JSON | messages |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['size']:,} | {_fmt_s(r['catch_up_warm_s'])} | {_fmt_s(r['catch_up_cold_s'])} | "
                     f"{r['catch_up_events']} | {r['catch_up_bytes'] / 1e3:.1f} kB | {r['stream_events']:,} | "
                     f"{r['stream_bytes'] / 1e6:.2f} MB | {r['messages']:,} |")
    lines += ["", "Targets (10^5 items): resume from a checkpoint 100 items behind < 2% of a full resume, retained "
              "(keyed and unkeyed) and live-only; live-only memory < 10 B per event."]
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checkpoint", description=__doc__)
    parser.add_argument("--sizes", default="1e3,1e4,1e5")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--child", choices=("retained", "live", "live+messages"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    if args.child:
        print(json.dumps(child_memory(sizes[0], args.seed, args.child)))
        return 0

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    results = [bench_size(s, args.seed, args.repeats, not args.no_memory, log) for s in sizes]
    import platform
    meta = {"command": "python -m bench.checkpoint " + " ".join(sys.argv[1:] if argv is None else argv),
            "when": time.strftime("%Y-%m-%d"), "python": platform.python_version()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "checkpoint.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    write_markdown(results, meta, args.out / "checkpoint.md")
    big = [r for r in results if r["size"] >= 100_000]
    for r in big:
        for what, ratio in (("keyed", r["ratio"]), ("unkeyed", r["unkeyed_ratio"]), ("live-only", r["live"]["ratio"])):
            log(f"  {'ok  ' if ratio < 0.02 else 'MISS'} resume from a {what} checkpoint at {r['size']}: "
                f"{ratio * 100:.2f}% of a full resume")
        log(f"  (live-only + messages: {r['live_messages']['ratio'] * 100:.2f}%)")
        if "memory_live" in r:
            b = r["memory_live"]["bytes_per_event"]
            log(f"  {'ok  ' if b < 10 else 'MISS'} live-only memory at {r['size']}: {b:.1f} B per event")
    log(f"wrote {args.out}/checkpoint.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
