# The Host pipeline, from a source item's wire line to the AG-UI bytes a
# client receives, per item and per event, against two floors.
#
# For one bench history (bench/history.py, same seed as bench.run) it
# measures, as the median of several repeats in this one process, with
# process CPU time and the collector enabled:
#   - decode: ``wire.codec.decode`` of each item's wire line;
#   - observe(): the events as ag_ui.core objects;
#   - observe() + EventEncoder: what a Host did before ``observe_encoded``:
#     every returned event through ``ag_ui.encoder.EventEncoder().encode``;
#   - observe() + agui_to_json: the same events through this library's
#     ``agui_to_json``, which writes an event that holds only what a record
#     would without pydantic;
#   - observe_encoded(): the events' wire JSON written straight from the
#     records (``core.encode``), no event built;
#   - the whole pipeline: decode + observe_encoded() + the SSE frame of each
#     event (``wire.agui.sse_frame``) as UTF-8 bytes;
#   - encoding alone, over the whole projection: ``encoded(snapshot)``
#     (records to JSON text), ``agui_to_json`` of built events, and pydantic's
#     ``model_dump_json(by_alias=True)`` (what EventEncoder runs);
#   - FLOOR build: constructing the same AG-UI events with the validated
#     ag_ui.core constructors (as bench.run);
#   - FLOOR json: ``json.dumps`` of each event's JSON dict (prepared
#     beforehand), with a JSONEncoder built once for compact, UTF-8 output, so
#     that it writes the same text; plain ``json.dumps(d)`` is shown too.
# Flat cost: observe_encoded() over a longer history (--flat-size, 10^6
# items) in tenths (last / first), and over a tool-heavy Run (--calls tool
# calls, three short arg chunks each and its result, nothing else).
#
# Results go to bench/results/: pipeline.md (table and target check),
# pipeline.json, and pipeline.png (per-event costs as bars) when matplotlib
# is installed.
#
#   .venv/bin/python -m bench.pipeline          # 10^5 items; flat: 10^6 items, 10^5 tool calls
#   .venv/bin/python -m bench.pipeline --size 2e4 --flat-size 1e5 --calls 2e4 --repeats 3   # quick

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from ag_ui.encoder import EventEncoder

import harness_agui
from harness_agui import HarnessAguiObserver
from harness_agui.core.encode import encoded
from harness_agui.core.source import (
    ExtensionEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RunResult,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
)
from harness_agui.wire.agui import agui_to_json, sse_frame
from harness_agui.wire.codec import decode, encode

from .history import DEFAULT_SEED, RUN_ID, START, STEP, THREAD_ID, history

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

_now = time.process_time


def tool_heavy_history(calls: int) -> list[HarnessStreamEvent]:
    """A Run of ``calls`` tool calls and nothing else: model requests of
    four calls, each streamed in three arg chunks, then their results."""
    items: list[HarnessStreamEvent] = []
    at = START

    def add(payload: Any) -> None:
        nonlocal at
        items.append(HarnessEvent(thread_id=THREAD_ID, run_id=RUN_ID, sequence=len(items), occurred_at=at,
                                  event=payload))
        at += STEP

    request, made = 0, 0
    while made < calls:
        add(ExtensionEvent(kind="lifecycle", schema_version="1",
                           payload={"type": "model_request_started", "request_index": request}))
        batch = [f"call-{made + i}" for i in range(min(4, calls - made))]
        for index, call_id in enumerate(batch):
            add(PartStartEvent(index=index, part=ToolCallPart(tool_name="lookup", args=None, tool_call_id=call_id)))
            for chunk in ('{"q": ', f'"{call_id}"', "}"):
                add(PartDeltaEvent(index=index, delta=ToolCallPartDelta(args_delta=chunk)))
            add(PartEndEvent(index=index, part=ToolCallPart(tool_name="lookup", args=f'{{"q": "{call_id}"}}',
                                                           tool_call_id=call_id)))
        for call_id in batch:
            add(ToolResultEvent(tool_call_id=call_id, tool_name="lookup", outcome="success", content={"ok": True}))
        made += len(batch)
        request += 1
    items.append(HarnessRunResultEvent(thread_id=THREAD_ID, run_id=RUN_ID, sequence=len(items),
                                       occurred_at=at + timedelta(seconds=1), result=RunResult(status="completed")))
    return items


# -- one measurement each ------------------------------------------------------------------

def _timed(fn: Any, *args: Any) -> float:
    gc.collect()
    t0 = _now()
    fn(*args)
    return _now() - t0


def run_decode(lines: list[str]) -> None:
    for line in lines:
        decode(line)


def run_observe(items: list[HarnessStreamEvent]) -> None:
    observe = HarnessAguiObserver().observe
    for item in items:
        observe(item)


def run_observe_event_encoder(items: list[HarnessStreamEvent]) -> None:
    observe = HarnessAguiObserver().observe
    frame = EventEncoder().encode
    for item in items:
        for event in observe(item):
            frame(event).encode()


def run_observe_agui_to_json(items: list[HarnessStreamEvent]) -> None:
    observe = HarnessAguiObserver().observe
    for item in items:
        for event in observe(item):
            agui_to_json(event)


def run_observe_encoded(items: list[HarnessStreamEvent]) -> None:
    observe = HarnessAguiObserver().observe_encoded
    for item in items:
        observe(item)


def run_pipeline(lines: list[str]) -> None:
    """The Host's whole path for a live item: wire line in, SSE bytes out."""
    observe = HarnessAguiObserver().observe_encoded
    for line in lines:
        for e in observe(decode(line)):
            sse_frame(e).encode()


def run_encode_records(observer: HarnessAguiObserver) -> None:
    for _ in encoded(observer.snapshot()):
        pass


def run_agui_to_json(events: list[Any]) -> None:
    for e in events:
        agui_to_json(e)


def run_pydantic_dump(events: list[Any]) -> None:
    for e in events:
        e.model_dump_json(by_alias=True)


def run_floor_build(specs: list[tuple[type, dict[str, Any]]]) -> None:
    for cls, kwargs in specs:
        cls(**kwargs)


_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def run_floor_json(dicts: list[dict[str, Any]]) -> None:
    dumps = _compact
    for d in dicts:
        dumps(d)


def run_floor_json_default(dicts: list[dict[str, Any]]) -> None:
    dumps = json.dumps
    for d in dicts:
        dumps(d)


def tenths(items: list[HarnessStreamEvent]) -> list[float]:
    """observe_encoded() over ``items``, the CPU time of each tenth."""
    gc.collect()
    n = len(items)
    bounds = [n * i // 10 for i in range(11)]
    observe = HarnessAguiObserver().observe_encoded
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        t0 = _now()
        for item in items[lo:hi]:
            observe(item)
        out.append(_now() - t0)
    return out


# -- the run -------------------------------------------------------------------------------

MEASURES = [
    # key, label, per (item/event), group
    ("decode", "decode the wire line"),
    ("observe", "observe()"),
    ("observe_event_encoder", "observe() + EventEncoder (before)"),
    ("observe_agui_to_json", "observe() + agui_to_json"),
    ("observe_encoded", "observe_encoded()"),
    ("pipeline", "decode + observe_encoded() + SSE bytes"),
    ("encode_records", "encode: records to JSON (encoded(snapshot))"),
    ("agui_to_json", "encode: agui_to_json(event)"),
    ("pydantic_dump", "encode: model_dump_json(by_alias=True)"),
    ("floor_build", "**floor** build the events (ag_ui.core)"),
    ("floor_json", "**floor** json.dumps of the events' dicts (compact, UTF-8)"),
    ("floor_json_default", "json.dumps(d), default arguments"),
]


def bench(size: int, calls: int, flat_size: int, seed: int, repeats: int, log: Any) -> dict[str, Any]:
    t0 = _now()
    items = history(size, seed)
    lines = [encode(item) for item in items]
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    events = list(observer.snapshot())
    n_events = len(events)
    specs = [(type(e), e.model_dump(exclude_unset=True)) for e in events]
    dicts = [json.loads(agui_to_json(e)) for e in events]
    assert [_compact(d) for d in dicts[:2000]] == [agui_to_json(e) for e in events[:2000]]
    log(f"{size} items, {n_events} events prepared in {_now() - t0:.1f}s; {repeats} repeats")
    jobs = {
        "decode": (run_decode, lines), "observe": (run_observe, items),
        "observe_event_encoder": (run_observe_event_encoder, items),
        "observe_agui_to_json": (run_observe_agui_to_json, items), "observe_encoded": (run_observe_encoded, items),
        "pipeline": (run_pipeline, lines), "encode_records": (run_encode_records, observer),
        "agui_to_json": (run_agui_to_json, events), "pydantic_dump": (run_pydantic_dump, events),
        "floor_build": (run_floor_build, specs), "floor_json": (run_floor_json, dicts),
        "floor_json_default": (run_floor_json_default, dicts),
    }
    runs: dict[str, list[float]] = {k: [] for k in jobs}
    for r in range(repeats):
        for key, (fn, arg) in jobs.items():  # interleaved: every measure sees the same machine
            runs[key].append(_timed(fn, arg))
        log(f"  repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in runs.items()))
    seconds = {k: statistics.median(v) for k, v in runs.items()}
    del specs, dicts, events, lines, observer
    if flat_size != size:
        del items
        items = history(flat_size, seed)
    flat = [tenths(items) for _ in range(max(1, repeats // 2))]
    log(f"  tenths of {flat_size} items: " + " ".join(f"{x:.2f}" for x in flat[-1]))
    del items
    heavy = tool_heavy_history(calls)
    flat_calls = [tenths(heavy) for _ in range(max(1, repeats // 2))]
    log(f"  tenths of {calls} tool calls: " + " ".join(f"{x:.2f}" for x in flat_calls[-1]))
    result = {
        "size": size, "events": n_events, "calls": calls, "heavy_items": len(heavy), "flat_size": flat_size,
        "repeats": repeats,
        "seconds": seconds, "all_seconds": runs,
        "us_per_item": {k: v / size * 1e6 for k, v in seconds.items()},
        "us_per_event": {k: v / n_events * 1e6 for k, v in seconds.items()},
        "tenths": flat, "tenths_calls": flat_calls,
        "flat": statistics.median(t[-1] / t[0] for t in flat),
        "flat_calls": statistics.median(t[-1] / t[0] for t in flat_calls),
    }
    return result


def targets(r: dict[str, Any]) -> list[tuple[str, str, bool]]:
    s = r["seconds"]
    enc = s["encode_records"] / s["floor_json"]
    whole = s["observe_encoded"] / s["floor_build"]
    return [
        ("encoding an event <= 1.5x the json.dumps floor", f"{enc:.2f}x", enc <= 1.5),
        ("observe + encode <= 3x the event-building floor", f"{whole:.2f}x", whole <= 3),
        (f"flat: last / first tenth at {r['flat_size']:,} items <= 1.2", f"{r['flat']:.2f}", r["flat"] <= 1.2),
        (f"flat: last / first tenth with {r['calls']:,} tool calls <= 1.2", f"{r['flat_calls']:.2f}",
         r["flat_calls"] <= 1.2),
    ]


def write_markdown(r: dict[str, Any], meta: dict[str, Any], path: Path) -> None:
    floor_b = r["us_per_event"]["floor_build"]
    floor_j = r["us_per_event"]["floor_json"]
    lines = [
        "# harness-agui pipeline benchmark",
        "",
        f"Generated by `{meta['command']}` on {meta['when']} (Python {meta['python']}, harness-agui "
        f"{meta['version']}, {meta['machine']}). Seed {meta['seed']}; {r['size']:,} source items, "
        f"{r['events']:,} AG-UI events; each figure is the median of {r['repeats']} interleaved repeats in one "
        "process, timed with process CPU time, the garbage collector enabled. Times are microseconds; "
        "`build` is the ratio to the floor of building the events with ag_ui.core, `json` to the floor of "
        "`json.dumps` of the events' dicts.",
        "",
        "| measure | us/item | us/event | x build floor | x json floor |",
        "|---|---|---|---|---|",
    ]
    for key, label in MEASURES:
        pi, pe = r["us_per_item"][key], r["us_per_event"][key]
        lines.append(f"| {label} | {pi:.2f} | {pe:.2f} | {pe / floor_b:.2f} | {pe / floor_j:.2f} |")
    lines += ["", "observe_encoded(), CPU seconds per tenth of the Run, each run (the target takes the median "
              "of their last / first ratios):", ""]
    for name, key, n in (("history", "tenths", f"{r['flat_size']:,} items"),
                         ("tool calls", "tenths_calls", f"{r['calls']:,} tool calls, {r['heavy_items']:,} items")):
        for t in r[key]:
            lines.append(f"- {name} ({n}): " + " ".join(f"{x:.2f}" for x in t) + f"; last / first {t[-1] / t[0]:.2f}")
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    for name, value, ok in targets(r):
        lines.append(f"| {name} | {value} | {'yes' if ok else '**no**'} |")
    if (path.parent / "pipeline.png").exists():
        lines += ["", "![cost per event](pipeline.png)"]
    else:
        lines += ["", "(No chart: matplotlib is not installed.)"]
    lines.append("")
    path.write_text("\n".join(lines))


def write_chart(r: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib
    except ModuleNotFoundError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label.replace("**", "") for _, label in MEASURES]
    values = [r["us_per_event"][k] for k, _ in MEASURES]
    fig, ax = plt.subplots(figsize=(10, 5))
    colors = ["0.55" if k.startswith("floor") else "C0" for k, _ in MEASURES]
    ax.barh(labels[::-1], values[::-1], color=colors[::-1])
    ax.set(xlabel="microseconds per AG-UI event", title=f"Host pipeline, {r['size']:,}-item Run")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline", description=__doc__)
    parser.add_argument("--size", default="1e5", help="source items of the history (default 1e5)")
    parser.add_argument("--calls", default="1e5", help="tool calls of the tool-heavy Run (default 1e5)")
    parser.add_argument("--flat-size", default="1e6", help="items of the history cut in tenths (default 1e6)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-chart", action="store_true")
    parser.add_argument("--report-only", action="store_true", help="rewrite pipeline.md and the chart from "
                                                                   "pipeline.json without measuring")
    args = parser.parse_args(argv)
    if args.report_only:
        saved = json.loads((args.out / "pipeline.json").read_text())
        if not args.no_chart:
            write_chart(saved["result"], args.out / "pipeline.png")
        write_markdown(saved["result"], saved["meta"], args.out / "pipeline.md")
        return 0

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    r = bench(int(float(args.size)), int(float(args.calls)), int(float(args.flat_size)), args.seed, args.repeats, log)
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python -m bench.pipeline" + ("" if argv is None and len(sys.argv) == 1 else " " + " ".join(
        sys.argv[1:] if argv is None else argv))
    meta = {"command": command, "when": time.strftime("%Y-%m-%d"), "python": platform.python_version(),
            "version": harness_agui.__version__, "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
            "seed": args.seed}
    (args.out / "pipeline.json").write_text(json.dumps({"meta": meta, "result": r}, indent=1))
    if not args.no_chart:
        write_chart(r, args.out / "pipeline.png")
    write_markdown(r, meta, args.out / "pipeline.md")
    for name, value, ok in targets(r):
        log(f"  {'ok  ' if ok else 'MISS'} {name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
