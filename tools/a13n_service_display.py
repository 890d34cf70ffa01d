"""What a13n-service 0.0.94 stores of real a13n-harness 0.5 Runs, with upstream a13n-stream-protocol 0.5.4 and
then with harness-agui's compat package swapped in (``harness_agui.compat.install()``), compared.

The service's worker folds each Harness item of a Run through its own ``Coalescer`` and ``DisplayFold``
(``a13n_service.runs``): the AG-UI events it streams (each with its sequence and the display item it changed)
and the display it commits at a checkpoint are what it stores. Both need PostgreSQL and Redis only to be written;
this driver runs the service's own fold code on the Runs of ``tools/make_a13n05_runs.py`` (made afresh, offline)
with a recording stream in place of Redis, once per vocabulary, in one process: first with upstream imported,
then with the service's display module and upstream's modules dropped from ``sys.modules``, the swap applied,
and the service's modules imported again.

Usage (in the venv ``make test-a13n-05`` builds)::

    python tools/a13n_service_display.py      # prints one JSON line: counts and the first differences

Exit status 0 when both vocabularies stored the same thing for every Run, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import logging
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SERVICE_MODULES = ("a13n_service.runs.display", "a13n_service.runs.coalesce")


class RecordingStream:
    """The service's ThreadStream as far as the coalescer uses it: what it would append to Redis, kept."""

    def __init__(self) -> None:
        self.deltas: list[dict[str, Any]] = []
        self.boundaries: list[int] = []

    def delta(self, observed: Any) -> None:
        self.deltas.append(observed.model_dump(mode="json"))

    def boundary(self, sequence: int) -> None:
        self.boundaries.append(sequence)


def stored(runs: list[list[Any]]) -> list[dict[str, Any]]:
    """For each Run, what the service stores: the streamed events (sequence, AG-UI event, item changed) and the
    committed display, by the service modules imported now."""
    display = importlib.import_module("a13n_service.runs.display")
    coalesce = importlib.import_module("a13n_service.runs.coalesce")
    out = []
    for run in runs:
        fold = display.DisplayFold(run[0].run_id, display.Display(), attempt=1, max_bytes=8 * 1024 * 1024)
        stream = RecordingStream()
        coalescer = coalesce.Coalescer(fold, stream, window=0)  # type: ignore[arg-type]
        for item in run:
            coalescer.observe(item)
        coalescer.flush()
        snapshot = fold.snapshot()
        out.append({"run_id": run[0].run_id, "deltas": stream.deltas, "display": snapshot.model_dump(mode="json")})
    return out


def vocabulary() -> str:
    """The module of the observer the service's display module folds with, as imported now."""
    return str(importlib.import_module("a13n_service.runs.display").HarnessAguiStreamObserver.__module__)


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_a13n05_runs", ROOT / "tools" / "make_a13n05_runs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _differences(a: Any, b: Any, where: str = "", out: list[str] | None = None) -> list[str]:
    out = [] if out is None else out
    if type(a) is not type(b):
        out.append(f"{where}: {a!r} != {b!r}")
    elif isinstance(a, dict):
        for key in sorted(a.keys() | b.keys()):
            if key not in a or key not in b:
                out.append(f"{where}.{key}: only in {'upstream' if key in a else 'compat'}")
            else:
                _differences(a[key], b[key], f"{where}.{key}", out)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} != {len(b)} entries")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _differences(x, y, f"{where}[{i}]", out)
    elif a != b:
        out.append(f"{where}: {a!r} != {b!r}")
    return out


def compare() -> dict[str, Any]:
    """Run the scenarios, store them with upstream, swap, store them again; the summary of the comparison."""
    if "a13n_stream_protocol" in sys.modules:
        raise RuntimeError("a13n_stream_protocol was imported before the driver")
    logging.getLogger("a13n_harness").setLevel(logging.ERROR)  # the failing scenarios fail on purpose
    scenarios = asyncio.run(_generator().run_scenarios())
    runs = [run for scenario in scenarios for run in scenario.runs]
    upstream, upstream_vocabulary = stored(runs), vocabulary()
    for name in [n for n in sys.modules if n == "a13n_stream_protocol" or n.startswith("a13n_stream_protocol.")
                 or n in SERVICE_MODULES]:
        del sys.modules[name]
    from harness_agui.compat import install

    install()
    compat, compat_vocabulary = stored(runs), vocabulary()
    differences = _differences(upstream, compat)
    return {"runs": len(runs), "items": sum(len(run) for run in runs),
            "deltas": sum(len(r["deltas"]) for r in upstream), "display_items": sum(
                len(r["display"]["items"]) for r in upstream),
            "vocabularies": [upstream_vocabulary, compat_vocabulary],
            "differences": len(differences), "first_differences": differences[:10]}


def main() -> int:
    summary = compare()
    print(json.dumps(summary))
    return 0 if summary["differences"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
