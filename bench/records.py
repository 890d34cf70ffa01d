# What a record costs: how an AG-UI event is constructed from one, and what
# the retained form of an emitted event costs to keep.
#
# Construction. For every event of the projection of one bench history (the
# same seed as bench.run), the time per event, as the median of several
# repeats with process CPU time and the collector enabled, of:
#   - build(record): the library's path, the event class's schema validator
#     (``TypeAdapter(cls).validator``) on the record's fields;
#   - the same three public constructors fed field dicts prepared beforehand,
#     to compare the constructors alone: ``cls(**fields)`` (validated,
#     what bench.run calls the floor), ``validator.validate_python(fields)``
#     and ``cls.model_construct(**fields)`` (pydantic's unvalidated one).
# Each built event is checked against ``cls(**fields)`` first: equal, the
# same fields-set and the same JSON.
#
# Layout. The same number of retained events kept three ways: the library's
# plain tuples, a slotted class holding (type, timestamp, values), and a
# frozen attrs class with those three fields. For each: bytes per event
# (tracemalloc), CPU time to make them, whether the collector still tracks
# them after a full collection, and how long one full collection takes with
# them alive.
#
#   .venv/bin/python -m bench.records                 # 10^5 items
#   .venv/bin/python -m bench.records --size 1e4 --repeats 3

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import attrs
from pydantic import TypeAdapter

from harness_agui import HarnessAguiObserver
from harness_agui.core import _json
from harness_agui.core.records import Record, build, field_of, kind_of

from .history import DEFAULT_SEED, history

_now = time.process_time


def _fields(record: Record) -> dict[str, Any]:
    """The keyword arguments of the event a record stands for."""
    kind = kind_of(record)
    out: dict[str, Any] = {"timestamp": field_of(record, "timestamp")}
    for name in kind.fields:
        value = field_of(record, name)
        if value is not None:
            out[name] = _json.loads(value) if name in kind.json_fields else value
    return out


def _time(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = _now()
        fn()
        times.append(_now() - t0)
    return statistics.median(times)


def measure_construction(records: list[Record], repeats: int) -> tuple[dict[str, float], list[str]]:
    """Microseconds per event for each construction path, and the event
    types for which model_construct() builds something else than the
    validated constructor (it leaves nested models as plain dicts)."""
    specs = [(kind_of(r).cls, _fields(r)) for r in records]
    validators = {cls: TypeAdapter(cls).validator.validate_python for cls, _ in specs}
    checks = [(cls, f, validators[cls]) for cls, f in specs]
    for record, (cls, fields, validate) in zip(records, checks, strict=True):
        reference = cls(**fields)
        for event in (build(record), validate(fields)):
            assert event == reference and event.model_fields_set == reference.model_fields_set
            assert event.model_dump_json(by_alias=True) == reference.model_dump_json(by_alias=True)
    unequal = sorted({kind_of(r).name for r, (cls, fields) in zip(records, specs, strict=True)
                      if cls.model_construct(**fields) != cls(**fields)})

    def from_records() -> None:
        for r in records:
            build(r)

    def constructor() -> None:
        for cls, fields in specs:
            cls(**fields)

    def validator() -> None:
        for _cls, fields, validate in checks:
            validate(fields)

    def construct() -> None:
        for cls, fields in specs:
            cls.model_construct(**fields)

    n = len(records)
    return {name: _time(fn, repeats) / n * 1e6 for name, fn in (
        ("build(record)", from_records),
        ("cls(**fields)", constructor),
        ("validator.validate_python(fields)", validator),
        ("cls.model_construct(**fields)", construct),
    )}, unequal


class SlottedRecord:
    __slots__ = ("type", "timestamp", "values")

    def __init__(self, type: str, timestamp: int, values: tuple[Any, ...]) -> None:
        self.type = type
        self.timestamp = timestamp
        self.values = values


@attrs.frozen
class AttrsRecord:
    type: str
    timestamp: int
    values: tuple[Any, ...]


def _as_tuple(r: Record) -> Any:
    return (r[0], r[1], *r[2:])


def _as_slotted(r: Record) -> Any:
    return SlottedRecord(r[0], r[1], r[2:])


def _as_attrs(r: Record) -> Any:
    return AttrsRecord(r[0], r[1], r[2:])


def measure_layout(records: list[Record], repeats: int) -> dict[str, dict[str, Any]]:
    """Bytes per event, construction time, GC tracking and a full
    collection's time for each retained form."""
    out = {}
    # Each form is made from fresh copies of the values' tuple, so that the
    # tuple form is not handed the very records it is measured against.
    for name, make in (("tuple (the library)", _as_tuple), ("slotted class", _as_slotted),
                       ("frozen attrs class", _as_attrs)):
        made = _time(lambda make=make: [make(r) for r in records], repeats)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = [make(r) for r in records]
        size = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        gc.collect()
        gc.collect()
        tracked = sum(gc.is_tracked(k) for k in kept)
        collect = _time(gc.collect, repeats)
        out[name] = {
            # The list holding them is the same for all three: left out.
            "bytes_per_event": (size - 8 * len(kept) - 56) / len(kept),
            "make_us_per_event": made / len(records) * 1e6,
            "tracked_after_collection": tracked,
            "full_collection_ms": collect * 1e3,
        }
        del kept
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.records", description=__doc__)
    parser.add_argument("--size", default="1e5", help="history size (default 1e5)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    size = int(float(args.size))
    observer = HarnessAguiObserver()
    for item in history(size, args.seed):
        observer.observe(item)
    records = list(observer.state.events)
    print(f"{size:,} items, {len(records):,} events; median of {args.repeats}, process CPU time, collector enabled\n")
    print("| construction | us/event |\n|---|---|")
    times, unequal = measure_construction(records, args.repeats)
    for name, us in times.items():
        print(f"| `{name}` | {us:.3g} |")
    print(f"\nmodel_construct() differs from validated construction for: {', '.join(unequal) or 'none'}")
    print("\n| retained form | bytes/event | make, us/event | tracked after a collection | full collection, ms |")
    print("|---|---|---|---|---|")
    for name, m in measure_layout(records, args.repeats).items():
        print(f"| {name} | {m['bytes_per_event']:.0f} | {m['make_us_per_event']:.3g} | "
              f"{m['tracked_after_collection']:,} | {m['full_collection_ms']:.3g} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
