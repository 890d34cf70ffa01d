# The benchmark: how fast is the projection, and what does it keep in memory,
# compared with the cost of the AG-UI events themselves.
#
# For each history size (bench/history.py, one seed) it measures, as the
# median of several repeats in this one process:
#   - observe() over the live stream (us per item and per emitted event), also
#     split in deciles so that the first and last 10% can be compared;
#   - one snapshot() at the end, and iterating that whole snapshot;
#   - resume() of the full history;
#   - the same with a trivial replay-stable processor (returns the event);
#   - the FLOOR: constructing the same AG-UI events (same classes, same field
#     values) with the validated ag_ui.core constructors, each dropped at once
#     as a Host publishing them would.
# Every time is also reported as a ratio to that floor. Two fresh child
# processes per size report retained memory per accumulated event
# (tracemalloc, counting everything the observer keeps alive, including the
# source strings it shares) and the peak RSS of observing the whole history.
#
# The garbage collector stays enabled: a Host runs with it, and what the
# projection costs the collector is part of what it costs.
#
# Results go to bench/results/: results.md (table and target check),
# results.json (raw figures) and scaling.png (log-log chart).
#
#   .venv/bin/python -m bench.run                                # 10^3..10^5, a few minutes
#   .venv/bin/python -m bench.run --sizes 1e3,1e4,1e5,1e6        # the full table

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from ag_ui.core import BaseEvent

import harness_agui
from harness_agui import HarnessAguiObserver

from .history import DEFAULT_SEED, history

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
TARGET_SIZE = 100_000
SNAPSHOT_BATCH = 2000

# CPU time of this process by default: on a shared machine it is far less
# noisy than wall time, and everything measured here is single-threaded and
# CPU-bound (the garbage collector included). --clock wall switches.
_now = time.process_time


def trivial_processor(item: Any, event: BaseEvent) -> BaseEvent:
    """Replay-stable and content-preserving: returns the event it was given."""
    return event


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _settle() -> None:
    gc.collect()


# -- one measurement each ------------------------------------------------------------

def measure_observe(items: list, processor: Any) -> dict[str, Any]:
    """Observe every item on a fresh observer, timing each tenth of the stream."""
    n = len(items)
    bounds = [n * i // 10 for i in range(11)]
    observer = HarnessAguiObserver(processor=processor)
    observe = observer.observe
    block_times, block_events = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        emitted = 0
        t0 = _now()
        for item in items[lo:hi]:
            emitted += len(observe(item))
        block_times.append(_now() - t0)
        block_events.append(emitted)
    return {"observer": observer, "seconds": sum(block_times), "events": sum(block_events),
            "block_seconds": block_times, "block_events": block_events}


def measure_snapshot(observer: HarnessAguiObserver) -> dict[str, float]:
    """The cost of one snapshot() call (timed over a batch of calls, as one
    call is shorter than the clock's own cost), then iterating it all."""
    take = observer.snapshot
    batches = []
    for _ in range(5):
        t0 = _now()
        for _ in range(SNAPSHOT_BATCH):
            snap = take()
        batches.append((_now() - t0) / SNAPSHOT_BATCH)
    singles = batches
    t0 = _now()
    for _event in snap:
        pass
    iterate = _now() - t0
    return {"snapshot_seconds": _median(singles), "iterate_seconds": iterate}


def check_detached(observer: HarnessAguiObserver) -> bool:
    """Mutating what a snapshot yields changes nothing inside the observer."""
    snap = observer.snapshot()
    before = [e.model_dump(mode="json", by_alias=True) for e in snap[:50]] + [snap[-1].model_dump(mode="json")]
    for event in list(snap[:50]) + [snap[-1]]:
        event.timestamp = -1
        for name in ("delta", "message_id", "tool_call_id", "name", "value", "metadata", "content"):
            if hasattr(event, name):
                setattr(event, name, "mutated")
    again = observer.snapshot()
    after = [e.model_dump(mode="json", by_alias=True) for e in again[:50]] + [again[-1].model_dump(mode="json")]
    return before == after


def measure_resume(items: list, processor: Any) -> tuple[float, int]:
    observer = HarnessAguiObserver(processor=processor)
    t0 = _now()
    asyncio.run(observer.resume(items))
    return _now() - t0, observer.event_count


def floor_specs(observer: HarnessAguiObserver) -> list[tuple[type, dict[str, Any]]]:
    """The class and constructor keywords of every event of the projection:
    what a producer that knows the events would pass to ag_ui.core."""
    return [(type(e), e.model_dump(exclude_unset=True)) for e in observer.snapshot()]


def measure_floor(specs: list[tuple[type, dict[str, Any]]]) -> float:
    t0 = _now()
    for cls, kwargs in specs:
        cls(**kwargs)
    return _now() - t0


# -- child processes: memory ------------------------------------------------------------

def child_memory(size: int, seed: int) -> dict[str, Any]:
    """Retained bytes per accumulated event (tracemalloc): everything the
    observer keeps alive once the history itself has been dropped."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    items = history(size, seed)
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    del items, item
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return {"retained_bytes": retained, "events": observer.event_count,
            "bytes_per_event": retained / observer.event_count}


def _rss_now_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _peak_rss_kib() -> int:
    # Linux carries getrusage()'s ru_maxrss across exec, so a child started by
    # a big benchmark process would report the parent's peak. The kernel's
    # high-water mark of this address space (VmHWM) is the child's own.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child_rss(size: int, seed: int) -> dict[str, Any]:
    """Peak RSS of a fresh process that generates the history and observes it all."""
    items = history(size, seed)
    history_rss = _rss_now_kib()
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return {"history_rss_kib": history_rss, "peak_rss_kib": _peak_rss_kib(), "events": observer.event_count}


def _run_child(mode: str, size: int, seed: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.run", "--child", mode, "--sizes", str(size), "--seed", str(seed)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- one size -----------------------------------------------------------------------------

def bench_size(size: int, seed: int, repeats: int, memory: bool, log: Any) -> dict[str, Any]:
    t0 = _now()
    items = history(size, seed)
    log(f"{size:>9} items: history generated in {_now() - t0:.1f}s; {repeats} repeats")
    runs: dict[str, list[float]] = {k: [] for k in (
        "observe", "observe_p", "snapshot", "snapshot_p", "iterate", "iterate_p", "resume", "resume_p", "floor",
        "first10", "last10", "first10_p", "last10_p")}
    events = 0
    detached = True
    specs = None
    for _ in range(repeats):
        for key, processor in (("", None), ("_p", trivial_processor)):
            _settle()
            obs = measure_observe(items, processor)
            events = obs["events"]
            observer = obs["observer"]
            runs["observe" + key].append(obs["seconds"])
            be, bs = obs["block_events"], obs["block_seconds"]
            runs["first10" + key].append(bs[0] / max(be[0], 1))
            runs["last10" + key].append(bs[-1] / max(be[-1], 1))
            snap = measure_snapshot(observer)
            runs["snapshot" + key].append(snap["snapshot_seconds"])
            runs["iterate" + key].append(snap["iterate_seconds"])
            if specs is None:
                specs = floor_specs(observer)
                detached = check_detached(observer)
            del observer, obs
            _settle()
            seconds, count = measure_resume(items, processor)
            assert count == events, (count, events)
            runs["resume" + key].append(seconds)
        _settle()
        assert specs is not None
        runs["floor"].append(measure_floor(specs))
    med = {k: _median(v) for k, v in runs.items()}
    result: dict[str, Any] = {"size": size, "events": events, "repeats": repeats, "detached": detached,
                              "seconds": med, "all_seconds": runs}
    floor_per_event = med["floor"] / events
    per_event = {k: med[k] / events for k in ("observe", "observe_p", "iterate", "iterate_p", "resume", "resume_p",
                                              "floor")}
    per_event["first10"], per_event["last10"] = med["first10"], med["last10"]
    per_event["first10_p"], per_event["last10_p"] = med["first10_p"], med["last10_p"]
    result["us_per_event"] = {k: v * 1e6 for k, v in per_event.items()}
    result["us_per_item"] = {k: med[k] / size * 1e6 for k in ("observe", "observe_p", "resume", "resume_p")}
    result["snapshot_us"] = {"plain": med["snapshot"] * 1e6, "processor": med["snapshot_p"] * 1e6}
    result["ratio_to_floor"] = {k: v / floor_per_event for k, v in per_event.items() if k != "floor"}
    del items, specs
    if memory:
        result["memory"] = _run_child("memory", size, seed)
        result["rss"] = _run_child("rss", size, seed)
    log(f"{size:>9} items, {events} events: observe {result['us_per_event']['observe']:.2f} us/event "
        f"({result['ratio_to_floor']['observe']:.2f}x floor {result['us_per_event']['floor']:.2f} us), "
        f"with processor {result['ratio_to_floor']['observe_p']:.2f}x, resume {result['ratio_to_floor']['resume']:.2f}x"
        f" / {result['ratio_to_floor']['resume_p']:.2f}x, snapshot {result['snapshot_us']['plain']:.2f} us"
        + (f", {result['memory']['bytes_per_event']:.0f} B/event" if memory else ""))
    return result


# -- report -------------------------------------------------------------------------------

def _targets(results: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    by_size = {r["size"]: r for r in results}
    checks: list[tuple[str, str, bool]] = []
    r = by_size.get(TARGET_SIZE)
    if r is not None:
        q = r["ratio_to_floor"]
        checks.append(("observe() <= 3x floor per emitted event, no processor", f"{q['observe']:.2f}x",
                       q["observe"] <= 3))
        checks.append(("observe() <= 5x floor per emitted event, trivial processor", f"{q['observe_p']:.2f}x",
                       q["observe_p"] <= 5))
        checks.append(("resume() <= 2x floor, no processor", f"{q['resume']:.2f}x", q["resume"] <= 2))
        checks.append(("resume() <= 2x floor, trivial processor", f"{q['resume_p']:.2f}x", q["resume_p"] <= 2))
        flat = r["us_per_event"]["last10"] / r["us_per_event"]["first10"]
        checks.append(("observe() flat: last 10% / first 10% per event (<= 1.25)", f"{flat:.2f}", flat <= 1.25))
        if "memory" in r:
            b = r["memory"]["bytes_per_event"]
            checks.append(("retained memory <= 300 bytes per accumulated event", f"{b:.0f} B", b <= 300))
    if len(by_size) >= 2:
        small, large = by_size[min(by_size)], by_size[max(by_size)]
        s0, s1 = small["snapshot_us"]["plain"], large["snapshot_us"]["plain"]
        # "Within noise": a single call is a fraction of a microsecond, so allow
        # twice the small-history figure or half a microsecond, whichever is more.
        ok = s1 <= max(2 * s0, s0 + 0.5)
        checks.append((f"snapshot() independent of length: 10^{len(str(large['size'])) - 1} vs "
                       f"10^{len(str(small['size'])) - 1}", f"{s1:.2f} us vs {s0:.2f} us", ok))
    det = all(r["detached"] for r in results)
    checks.append(("snapshot() detached: mutating yielded events changes nothing", "yes" if det else "NO", det))
    return checks


def _fmt(v: float) -> str:
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


def write_markdown(results: list[dict[str, Any]], meta: dict[str, Any], path: Path) -> None:
    sizes = [r["size"] for r in results]
    head = "| measure | " + " | ".join(f"{s:,} items" for s in sizes) + " |"
    rule = "|---|" + "---|" * len(sizes)
    lines = [
        "# harness-agui benchmark",
        "",
        f"Generated by `{meta['command']}` on {meta['when']} "
        f"(Python {meta['python']}, harness-agui {meta['version']}, {meta['machine']}).",
        f"Seed {meta['seed']}; each figure is the median of {meta['repeats']} repeats in one process, timed with "
        f"{'process CPU time' if meta['clock'] == 'cpu' else 'wall time'}; "
        "the garbage collector is enabled. Times are microseconds; `(Nx)` is the ratio to the floor, "
        "the cost of constructing the same AG-UI events with the validated `ag_ui.core` constructors.",
        "",
        head,
        rule,
    ]

    def row(label: str, cell: Any) -> None:
        lines.append(f"| {label} | " + " | ".join(cell(r) for r in results) + " |")

    def with_ratio(key: str) -> Any:
        return lambda r: f"{_fmt(r['us_per_event'][key])} ({r['ratio_to_floor'][key]:.2f}x)"

    row("AG-UI events emitted", lambda r: f"{r['events']:,}")
    row("**floor**: construct each event, us/event", lambda r: _fmt(r["us_per_event"]["floor"]))
    row("observe(), us/event", with_ratio("observe"))
    row("observe(), us/item", lambda r: _fmt(r["us_per_item"]["observe"]))
    row("observe() first 10%, us/event", with_ratio("first10"))
    row("observe() last 10%, us/event", with_ratio("last10"))
    row("snapshot(), us per call", lambda r: _fmt(r["snapshot_us"]["plain"]))
    row("iterate whole snapshot, us/event", with_ratio("iterate"))
    row("resume() of full history, us/event", with_ratio("resume"))
    row("observe() + trivial processor, us/event", with_ratio("observe_p"))
    row("observe() + processor first 10%, us/event", with_ratio("first10_p"))
    row("observe() + processor last 10%, us/event", with_ratio("last10_p"))
    row("snapshot() + processor, us per call", lambda r: _fmt(r["snapshot_us"]["processor"]))
    row("iterate snapshot + processor, us/event", with_ratio("iterate_p"))
    row("resume() + trivial processor, us/event", with_ratio("resume_p"))
    if all("memory" in r for r in results):
        row("retained memory, bytes/event (tracemalloc)", lambda r: f"{r['memory']['bytes_per_event']:.0f}")
        row("peak RSS of a fresh process, MiB", lambda r: f"{r['rss']['peak_rss_kib'] / 1024:.1f}")
        row("of which the history itself, MiB", lambda r: f"{r['rss']['history_rss_kib'] / 1024:.1f}")
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    for name, value, ok in _targets(results):
        lines.append(f"| {name} | {value} | {'yes' if ok else '**no**'} |")
    lines += ["", "![cost against history size](scaling.png)", ""]
    path.write_text("\n".join(lines))


def write_chart(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    sizes = [r["size"] for r in results]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    series = [("floor", "floor (construct events)", "k--"), ("observe", "observe() stream", "o-"),
              ("observe_p", "observe() + processor", "s-"), ("resume", "resume()", "^-"),
              ("resume_p", "resume() + processor", "v-"), ("iterate", "iterate snapshot", "d-")]
    for key, label, style in series:
        left.plot(sizes, [r["seconds"][key] for r in results], style, label=label)
        right.plot(sizes, [r["us_per_event"][key] for r in results], style, label=label)
    left.plot(sizes, [r["seconds"]["snapshot"] for r in results], "x-", label="snapshot() (one call)")
    left.set(xscale="log", yscale="log", xlabel="history size (source items)", ylabel="seconds, whole history",
             title="Total cost against history size")
    right.set(xscale="log", yscale="log", xlabel="history size (source items)", ylabel="microseconds per event",
              title="Cost per emitted AG-UI event")
    right.yaxis.set_major_formatter(ScalarFormatter())
    right.yaxis.set_minor_formatter(ScalarFormatter())
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _parse_sizes(text: str) -> list[int]:
    return [int(float(s)) for s in text.split(",") if s.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--sizes", default="1e3,1e4,1e5", help="comma-separated history sizes (default 1e3,1e4,1e5; "
                                                                 "add 1e6 for the full table)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--repeats", type=int, default=5, help="repeats per size (default 5; 3 at 10^6 and above)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder (default bench/results)")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc and RSS child processes")
    parser.add_argument("--no-chart", action="store_true", help="do not draw scaling.png")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="process CPU time (default; steadier on a shared machine) or wall time")
    parser.add_argument("--child", choices=("memory", "rss"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    global _now
    _now = time.process_time if args.clock == "cpu" else time.perf_counter
    sizes = _parse_sizes(args.sizes)
    if args.child:
        fn = child_memory if args.child == "memory" else child_rss
        print(json.dumps(fn(sizes[0], args.seed)))
        return 0

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    started = _now()
    results = [bench_size(s, args.seed, args.repeats if s < 10**6 else min(args.repeats, 3), not args.no_memory, log)
               for s in sizes]
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python -m bench.run" + ("" if argv is None and len(sys.argv) == 1 else " " + " ".join(
        sys.argv[1:] if argv is None else argv))
    meta = {"command": command, "when": time.strftime("%Y-%m-%d"), "python": platform.python_version(),
            "version": harness_agui.__version__, "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
            "seed": args.seed, "repeats": args.repeats, "clock": args.clock}
    (args.out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    write_markdown(results, meta, args.out / "results.md")
    if not args.no_chart:
        write_chart(results, args.out / "scaling.png")
    log(f"done in {_now() - started:.0f}s; wrote {args.out}/results.md")
    for name, value, ok in _targets(results):
        log(f"  {'ok  ' if ok else 'MISS'} {name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
