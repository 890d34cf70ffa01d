# What a Host running a13n-harness pays to turn each native item into a
# source item (``harness_agui.a13n.from_a13n``), on the synthetic Run of
# bench/history.py made native with ``to_a13n`` (its observations, which
# a13n-harness never emits, become diagnostic extension events, and its
# terminal item a cancelled result: a completed one needs a HarnessState).
#
# Side by side in one process, per item, the median of several repeats of a
# loop over the whole Run (process CPU time, the collector enabled):
#   - from_a13n: this release (one converter per native class, generated from
#     the declarations, that builds its source value with the statements of
#     core._fast_source, the constructors' checks without attrs' __init__);
#   - the same converters calling core._fast_source's builders instead, and
#     calling the public constructors (``cls(*fields)``), to show what the
#     private path saves (it stays only while this pays);
#   - with ``--before REV``: from_a13n of the a13n adapter as it was at
#     the git revision REV, loaded beside this one (it runs on this release's
#     source model, which keeps the same classes);
#   - the wire line of each item (``encode``: what the journal stores), and
#     from_a13n + encode, a Host's ingest of one item;
#   - from_a13n + observe_encoded(), the projection of the item.
# Every variant gives equal items (checked before timing).
#
# Results go to bench/results/a13n.md and a13n.json. Needs a13n-harness
# (Python 3.13: ``make .venv-a13n/.installed``):
#
#   .venv-a13n/bin/python -m bench.a13n                          # 2*10^4 items
#   .venv-a13n/bin/python -m bench.a13n --before 642a051 --size 5e4

from __future__ import annotations

import argparse
import gc
import importlib.util
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

import harness_agui
from harness_agui import HarnessAguiObserver, a13n
from harness_agui.a13n import _adapter
from harness_agui.core._fast_source import builder
from harness_agui.core.source import (
    ExtensionEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    ObservationEvent,
    RunResult,
)
from harness_agui.wire.codec import encode

from . import save
from .history import DEFAULT_SEED, history

ROOT = Path(__file__).resolve().parent.parent


def native_run(size: int, seed: int = DEFAULT_SEED) -> list[Any]:
    """The synthetic Run as a13n-harness items."""
    out = []
    for item in history(size, seed):
        if isinstance(item, HarnessEvent) and isinstance(item.event, ObservationEvent):
            item = HarnessEvent(thread_id=item.thread_id, run_id=item.run_id, sequence=item.sequence,
                                occurred_at=item.occurred_at, event=ExtensionEvent(
                                    kind="diagnostic", schema_version="1",
                                    payload={"name": item.event.name, "value": item.event.value}))
        elif isinstance(item, HarnessRunResultEvent):
            item = attrs.evolve(item, result=RunResult(status="cancelled", usage=item.result.usage))
        out.append(a13n.to_a13n(item))
    return out


def adapter_at(revision: str) -> Any:
    """The a13n adapter as it was at ``revision`` (``harness_agui/a13n.py``
    before it became a package, ``harness_agui/a13n/_adapter.py`` since),
    loaded as a module of this package under another name."""
    packages = {"harness_agui/a13n/_adapter.py": "harness_agui.a13n", "harness_agui/a13n.py": "harness_agui"}
    for path in packages:
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{path}"], capture_output=True, text=True)
        if shown.returncode == 0:
            break
    else:
        raise SystemExit(f"--before {revision}: no a13n adapter at that revision: {shown.stderr.strip()}")
    package = packages[path]
    name = f"{package}._a13n_at_{revision.replace('-', '_').replace('/', '_')}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    sys.modules[name] = module
    exec(compile(shown.stdout, f"{revision}:{path}", "exec"), module.__dict__)  # noqa: S102
    return module


def from_a13n_building_with(construct: Callable[[type], Any]) -> Callable[[Any], Any]:
    """from_a13n with the same converters, each calling ``construct(cls)`` to build its value."""
    items = _adapter._converter_set(construct).items

    def convert(item: Any) -> Any:
        return items[type(item)](item)

    return convert


def _interleaved(loops: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """The median process CPU time of each loop, the loops taking turns in
    every repeat so that a busy machine weighs on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(repeats):
        for name, loop in loops.items():
            gc.collect()
            t0 = time.process_time()
            loop()
            times[name].append(time.process_time() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def _upstream_observer() -> Any:
    """The observer class of the real a13n-stream-protocol 0.21 (upstream), when it is installed (``make
    .venv-a13n/.installed`` installs it), never this library's compat package put behind its name."""
    try:
        import a13n_stream_protocol
    except ImportError:
        return None
    if "harness_agui" in (getattr(a13n_stream_protocol, "__file__", None) or ""):
        return None
    return a13n_stream_protocol.HarnessAguiObserver


def measure(size: int, repeats: int, before: str | None) -> dict[str, Any]:
    natives = native_run(size)
    items = [a13n.from_a13n(x) for x in natives]
    variants: dict[str, Callable[[Any], HarnessStreamEvent]] = {
        "from_a13n": a13n.from_a13n,
        "calling the builders": from_a13n_building_with(builder),
        "calling the public constructors": from_a13n_building_with(lambda cls: cls),
    }
    if before is not None:
        old = adapter_at(before)
        variants[f"from_a13n at {before}"] = old.from_a13n
    for convert in variants.values():
        assert [convert(x) for x in natives] == items

    def project() -> None:
        observer = HarnessAguiObserver()
        for x in natives:
            observer.observe_encoded(a13n.from_a13n(x))

    loops: dict[str, Callable[[], Any]] = {
        name: (lambda convert=convert: [convert(x) for x in natives]) for name, convert in variants.items()}
    loops["encode (the journal line)"] = lambda: [encode(i) for i in items]
    loops["from_a13n + encode"] = lambda: [encode(a13n.from_a13n(x)) for x in natives]
    loops["from_a13n + observe_encoded()"] = project
    upstream = _upstream_observer()
    if upstream is not None:
        def upstream_observe() -> None:
            observer = upstream()
            for x in natives:
                observer.observe(x)

        def upstream_json() -> None:
            observer = upstream()
            for x in natives:
                for event in observer.observe(x):
                    event.model_dump_json(by_alias=True)

        loops["a13n-stream-protocol 0.21 observe()"] = upstream_observe
        loops["a13n-stream-protocol 0.21 observe() + model_dump_json"] = upstream_json
    n = len(natives)
    rows = {name: t / n * 1e6 for name, t in _interleaved(loops, repeats).items()}
    return {"items": n, "repeats": repeats, "us_per_item": rows}


def report(result: dict[str, Any]) -> str:
    rows = result["us_per_item"]
    base = rows["from_a13n"]
    lines = [
        f"# from_a13n on the synthetic Run ({result['items']} native items)",
        "",
        f"harness-agui {harness_agui.__version__}, Python {platform.python_version()}, {platform.machine()}; "
        f"median of {result['repeats']} interleaved repeats, process CPU time per item, one process.",
        "",
        "| what | us per item | vs from_a13n |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {us:.2f} | {us / base:.2f}x |" for name, us in rows.items()]
    ours = rows["from_a13n + observe_encoded()"]
    for name in ("a13n-stream-protocol 0.21 observe()", "a13n-stream-protocol 0.21 observe() + model_dump_json"):
        if name in rows:
            lines += ["", f"from_a13n + observe_encoded() is {rows[name] / ours:.1f}x faster than {name} "
                          f"(target: 15x)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="from_a13n per item on the synthetic Run")
    parser.add_argument("--size", type=float, default=2e4, help="items in the Run (default 2e4)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before", metavar="REV", help="also time harness_agui/a13n.py as it was at git REV")
    parser.add_argument("--no-save", action="store_true", help="print only, do not write bench/results/")
    args = parser.parse_args(argv)
    result = measure(int(args.size), args.repeats, args.before)
    text = report(result)
    print(text)
    if not args.no_save:
        save("a13n", text, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
