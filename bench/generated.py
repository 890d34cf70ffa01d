# Does each generated function pay? The library writes four families of
# functions at import from its declarations (``core._generated.define``):
#
#   - the frame encoders of ``core.encode`` (a record to its AG-UI wire JSON),
#   - the source builders of ``core._fast_source`` (field values to a source
#     value, the constructors' checks without attrs' __init__),
#   - the wire line writers of ``wire.codec`` (a source item to its journal line),
#   - the a13n converters of ``a13n._adapter`` (a native a13n-harness item to a
#     source item; each one holds the builders' statements inline).
#
# Beside each, this module writes the plain version: no code generated, one
# generic loop that reads the same declarations (read once into a list of
# steps) and does the same tests in the same order for every value. The a13n
# table (``_adapter._FROM``) holds a few fields as Python expressions; the
# plain converter evaluates each of those once into a function, which is what
# a hand-written table would hold. Every plain version gives what the
# generated one gives on every input of the Run (checked before timing), so
# the difference between them is what generating the code buys, nothing else.
#
# Timing: all loops in one process, taking turns in every repeat (so a busy
# machine weighs on all alike), the median of the repeats' process CPU time,
# the collector enabled, per input (a record, a source value, a source item, a
# native item). The data is the synthetic Run of bench/history.py; with
# a13n-harness installed it is that Run made native (bench/a13n.py's
# ``native_run``) and every row runs on the source items ``from_a13n`` makes
# of it. "Share" is what the plain version would add to a Host's path per
# source item, as a fraction of that path measured here too: from_a13n (with
# a13n-harness), encode (the journal line) and observe_encoded() (the
# projection as wire JSON).
#
# Results go to bench/results/generated.md and generated.json. The a13n rows
# need a13n-harness (Python 3.13); without it they are skipped with a note:
#
#   .venv-a13n/bin/python -m bench.generated             # every row, 2*10^4 items
#   .venv/bin/python -m bench.generated --no-save        # without the a13n rows

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import attrs
import pydantic_core

import harness_agui
from harness_agui import HarnessAguiObserver
from harness_agui.core import _json, encode
from harness_agui.core._fast_source import _constant, builder
from harness_agui.core.encode import EncodedEvent
from harness_agui.core.fields import MAX_JSON_INT, MAX_SOURCE_ID_LENGTH, field_spec
from harness_agui.core.jsonform import SHAPES, Shape, value_to_json
from harness_agui.core.records import _BY_TAG, Kind, Record
from harness_agui.core.source import BinaryContent, HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from harness_agui.wire import codec

from . import save
from .history import DEFAULT_SEED, history

_esc = json.encoder.encode_basestring  # type: ignore[attr-defined]


# -- frame encoders: a record to its EncodedEvent, or None for the slow path ---------------------

_CONST, _INT, _JSON, _JSON_OPT, _TEXT, _TEXT_OPT = range(6)


def plain_frame(kind: Kind) -> Callable[[Record], EncodedEvent | None]:
    """``encode._ENCODERS[kind.tag]`` as a loop over the kind's fields."""
    steps: list[tuple[int, int, str]] = []  # (what, index in the record, the text before the value)
    for name, info in kind.cls.model_fields.items():
        key = _esc(info.serialization_alias or info.alias or name)
        i = kind._at.get(name)
        omittable = not info.is_required() and info.default is None
        if name == "type":
            steps.append((_CONST, 0, "{" + key + ":" + _esc(kind.name)))
        elif i is None:
            if not omittable:
                steps.append((_CONST, 0, "," + key + ":" + pydantic_core.to_json(info.default).decode()))
        elif name == "timestamp":
            steps.append((_INT, i, "," + key + ":"))
        elif name in kind.json_fields:
            if info.annotation not in encode._JSON_ANY:
                return encode._no_frame
            steps.append((_JSON_OPT if omittable else _JSON, i, "," + key + ":"))
        else:
            steps.append((_TEXT_OPT if omittable else _TEXT, i, "," + key + ":"))
    type_name = kind.name
    surrogate = encode._SURROGATE.search

    def frame(r: Record) -> EncodedEvent | None:
        out = []
        try:
            for what, i, before in steps:
                if what == _CONST:
                    out.append(before)
                    continue
                v = r[i]
                if what == _TEXT:
                    out.append(before + _esc(v))
                elif what == _TEXT_OPT:
                    if v is not None:
                        out.append(before + _esc(v))
                elif what == _INT:
                    if v.__class__ is not int:
                        return None
                    out.append(before + str(v))
                elif v is None and what == _JSON_OPT:
                    pass
                elif "e-0" in v:
                    return None
                else:
                    out.append(before + str(v))
        except TypeError:
            return None
        t = "".join(out) + "}"
        return EncodedEvent(type_name, t) if t.isascii() or surrogate(t) is None else None

    return frame


# -- source builders: field values to a source value ----------------------------------------------

_DATETIME, _TIMEZONE = datetime, timezone
_MAX_ID, _MAX_INT = MAX_SOURCE_ID_LENGTH, MAX_JSON_INT

# ``core._fast_source._QUICK`` as functions of the value and the field's constant.
_QUICK: dict[str, Callable[[Any, Any], bool]] = {
    "text": lambda v, c: type(v) is str and v.isascii(),
    "name": lambda v, c: type(v) is str and v.isascii() and v != "" and len(v) <= _MAX_ID and not v.isspace(),
    "id_text": lambda v, c: type(v) is str and v.isascii() and len(v) <= _MAX_ID,
    "index": lambda v, c: type(v) is int and v >= 0,
    "count": lambda v, c: type(v) is int and 0 <= v <= _MAX_INT,
    "bool": lambda v, c: v is True or v is False,
    "json": lambda v, c: v is None,
    "content": lambda v, c: v is None,
    "args": lambda v, c: type(v) is str and v.isascii(),
    "text_or_object": lambda v, c: type(v) is str and v.isascii(),
    "instant": lambda v, c: (type(v) is _DATETIME and type(v.tzinfo) is _TIMEZONE and 1 < v.year < 9999),
    "bytes": lambda v, c: type(v) is bytes,
    "choice": lambda v, c: type(v) is str and v in c,
    "nested": lambda v, c: type(v) is c,
    "part": lambda v, c: type(v) in c,
    "delta": lambda v, c: type(v) in c,
    "payload": lambda v, c: type(v) in c,
    "tuple": lambda v, c: type(v) is tuple and not v,
}


@functools.cache
def plain_builder(cls: type) -> Callable[..., Any]:
    """``_fast_source.builder(cls)`` as a loop over the class's fields."""
    fields = attrs.fields(cls)
    converters = []  # (index, converter, whether the field is an instant)
    checks = []  # (index, quick test or None, constant, None passes, validator, attribute)
    for i, a in enumerate(fields):
        spec = field_spec(a)
        if a.converter is not None:
            converters.append((i, a.converter, spec.kind.name == "instant"))
        checks.append((i, _QUICK.get(spec.kind.name), _constant(spec), spec.optional or spec.may_omit,
                       a.validator, a))
    setters = [cls.__dict__[a.name].__set__ for a in fields]
    post = hasattr(cls, "__attrs_post_init__")
    new = object.__new__

    def build(*args: Any) -> Any:
        values = list(args)
        o: Any = new(cls)
        for i, convert, instant in converters:
            v = values[i]
            if not instant or type(v) is not _DATETIME or type(v.tzinfo) is not _TIMEZONE:
                values[i] = convert(v)
        for i, quick, constant, none_passes, validate, a in checks:
            v = values[i]
            if none_passes and v is None:
                continue
            if quick is None or not quick(v, constant):
                validate(o, a, v)
        for put, v in zip(setters, values, strict=True):
            put(o, v)
        if post:
            o.__attrs_post_init__()
        return o

    return build


def source_values(items: list[HarnessStreamEvent]) -> list[tuple[type, tuple[Any, ...]]]:
    """Every declared source value in the items (nested ones first), with its
    field values in declaration order: what building the Run takes."""
    out: list[tuple[type, tuple[Any, ...]]] = []

    def walk(value: Any) -> None:
        if type(value) in (list, tuple):
            for x in value:
                walk(x)
            return
        if not attrs.has(type(value)) or type(value) not in SHAPES:
            return
        values = tuple(getattr(value, a.name) for a in attrs.fields(type(value)))
        for v in values:
            walk(v)
        out.append((type(value), values))

    for item in items:
        walk(item)
    return out


# -- wire line writers: a source item to its journal line ---------------------------------------

def _text(v: Any) -> str:
    return _esc(v) if type(v) is str else _json.dumps(v)  # type: ignore[no-any-return]


def _int(v: Any) -> str:
    return int.__repr__(v) if type(v) is int else _json.dumps(v)


def _bool(v: Any) -> str:
    return "true" if v is True else "false" if v is False else _json.dumps(v)


def _instant(v: Any) -> str:
    return _esc(v.isoformat())  # type: ignore[no-any-return]


def plain_write(value: Any) -> str:
    """``codec._write``: the JSON text of a source value, by its class's plain writer if it has one."""
    write = _PLAIN_WRITERS.get(type(value))
    return write(value) if write is not None else _json.dumps(value_to_json(value))


_WRITE_KIND: dict[str, Callable[[Any], str]] = {
    "str": _text, "choice": _text, "int": _int, "bool": _bool, "datetime": _instant,
    "json": _json.dumps, "object": _json.dumps, "array": _json.dumps, "args": _json.dumps,
    "text_or_object": _json.dumps,
    "nested": plain_write, "part": plain_write, "delta": plain_write, "payload": plain_write,
}
_ALWAYS, _NOT_NONE, _NOT_DEFAULT, _NOT_FACTORY = range(4)


def plain_writer(shape: Shape, head: str) -> Callable[[Any], str] | None:
    """``codec._writer(shape, head)`` as a loop over the shape's fields."""
    if any(f.kind not in _WRITE_KIND for f in shape.fields) or shape.cls is BinaryContent:
        return None
    first = [head] + ([_json.dumps(shape.tag_key) + ":" + _json.dumps(shape.tag)] if shape.tag is not None else [])
    plan: list[tuple[str, str, Callable[[Any], str], int, Any, Any]] = []  # name, key, writer, when, default, its type
    for f in shape.fields:
        key = _json.dumps(f.name) + ":"
        if f.required or f.always:
            plan.append((f.name, key, _WRITE_KIND[f.kind], _ALWAYS, None, None))
        elif f.default_factory is not None:
            plan.append((f.name, key, _WRITE_KIND[f.kind], _NOT_FACTORY, f.is_default, None))
        elif f.default is None:
            plan.append((f.name, key, _WRITE_KIND[f.kind], _NOT_NONE, None, None))
        else:
            plan.append((f.name, key, _WRITE_KIND[f.kind], _NOT_DEFAULT, f.default, type(f.default)))

    def write(value: Any) -> str:
        out = first.copy()
        for name, key, write_value, when, default, default_type in plan:
            v = getattr(value, name)
            if when == _ALWAYS or (when == _NOT_NONE and v is not None) \
                    or (when == _NOT_DEFAULT and not (type(v) is default_type and v == default)) \
                    or (when == _NOT_FACTORY and not default(v)):
                out.append(key + write_value(v))
        return out[0] + ",".join(out[1:]) + "}"

    return write


_PLAIN_WRITERS: dict[type, Callable[[Any], str]] = {
    cls: w for cls, shape in SHAPES.items() if (w := plain_writer(shape, "{")) is not None}
_PLAIN_LINES: dict[type, Callable[[Any], str]] = {
    cls: w for cls in (HarnessEvent, HarnessRunResultEvent)
    if (w := plain_writer(SHAPES[cls], '{"v":' + str(codec.WIRE_VERSION) + ",")) is not None}


def plain_encode(item: HarnessStreamEvent) -> str:
    """``codec.encode`` by the plain writers."""
    return _PLAIN_LINES[type(item)](item)


# -- a13n converters: a native item to a source item (a13n-harness only) ------------------------

def plain_from_a13n(construct: Callable[[type], Callable[..., Any]]) -> dict[type, Callable[[Any], Any]]:
    """The converters of ``from_a13n`` (by native envelope class) as one generic converter, driven by ``_adapter._FROM``
    and the source classes' declarations, building each value with
    ``construct(cls)``."""
    from harness_agui.a13n import _adapter as ad

    lib = ad._lib()
    by_class: dict[type, Callable[[Any], Any]] = {}

    def nested(value: Any) -> Any:
        return by_class[type(value)](value)

    unknown = {family: functools.partial(ad._unknown, lib, family) for family in ad._UNKNOWN_OF}
    scope = {"_lib": lib, "_by_class": by_class, "_nested": nested, "_detached": ad._detached,
             "_content": ad._content_from, "_dumped": ad._dumped, "_citations": ad._citations,
             "_result": ad._result_from, "_binary": ad._binary_from}

    def expression(text: str) -> Callable[[Any], Any]:
        return eval(f"lambda n: {text}", scope)  # type: ignore[no-any-return]  # noqa: S307 - the table's own text

    def by_kind(kind: Any, what: str) -> Callable[[Any], Any] | None:
        wire = kind.wire
        if kind.cls is BinaryContent:
            return ad._binary_from  # type: ignore[no-any-return]
        if wire in ("json", "object", "array"):
            return lambda v: v if v is None else ad._detached(v, what)
        if wire == "args":
            return lambda v: v if v is None or type(v) is str else ad._detached(v, what)
        if wire == "text_or_object":
            return lambda v: v if type(v) is str else ad._detached(v, what)
        if wire == "content":
            return lambda v: ad._content_from(lib, v, what)
        if wire == "binary":
            return bytes
        if wire == "nested":
            return lambda v: v if v is None else nested(v)
        if wire in unknown:
            otherwise = unknown[wire]
            return lambda v: (by_class.get(type(v)) or otherwise)(v)
        if wire == "tuple":
            return lambda v: tuple(map(nested, v))
        return None

    def converter(spec: Any) -> Callable[[Any], Any]:
        cls = spec.source
        guard = None if spec.guard is None else expression(spec.guard)
        otherwise = None
        if guard is not None:
            otherwise = unknown[next(f for f, members in ad._UNIONS.items() if cls in members)]
        base = None if spec.base == "n" else expression(spec.base)
        # (an expression of the native value, or None to read the field by name; its name; its conversion)
        reads: list[tuple[Callable[[Any], Any] | None, str, Callable[[Any], Any] | None]] = []
        for a in attrs.fields(cls):
            if a.name in spec.fields:
                reads.append((expression(spec.fields[a.name]), a.name, None))
            else:
                reads.append((None, a.name, by_kind(field_spec(a).kind, f"{cls.__name__}.{a.name}")))
        build = construct(cls)

        def convert(n: Any) -> Any:
            if guard is not None and not guard(n):
                return otherwise(n)  # type: ignore[misc]
            b = n if base is None else base(n)
            values = []
            for held, name, conversion in reads:
                if held is not None:
                    values.append(held(n))
                else:
                    v = getattr(b, name)
                    values.append(v if conversion is None else conversion(v))
            return build(*values)

        return convert

    for name, spec in ad._FROM.items():
        where, _, attr = name.rpartition(".")
        native = getattr({"a13n": lib.a13n, "lib": lib, "": lib.pai}[where], attr)
        by_class[native] = converter(spec)
    return {c: by_class[c] for c in (lib.a13n.HarnessEvent, lib.a13n.HarnessRunResultEvent)}


def _a13n() -> Any:
    """harness_agui.a13n when a13n-harness is importable, else None."""
    try:
        from harness_agui import a13n
        from harness_agui.a13n import _adapter

        _adapter._lib()
    except ImportError:
        return None
    return a13n


# -- measuring -------------------------------------------------------------------------------------

def _interleaved(loops: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """The median process CPU time of each loop, the loops taking turns in every repeat."""
    times: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(repeats):
        for name, loop in loops.items():
            gc.collect()
            t0 = time.process_time()
            loop()
            times[name].append(time.process_time() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def measure(size: int, repeats: int) -> dict[str, Any]:
    a13n = _a13n()
    if a13n is None:
        natives = None
        items = history(size, DEFAULT_SEED)
    else:
        from .a13n import native_run

        natives = native_run(size)
        items = [a13n.from_a13n(x) for x in natives]

    observer = HarnessAguiObserver()
    for item in items:
        observer.observe_encoded(item)
    records = list(observer.snapshot().records)
    values = source_values(items)

    # Per generator: what one input is, the inputs, and the generated and the plain version over all of them
    # (each a list comprehension calling the function of each input's class or kind, as the package does).
    frames = {tag: encode._ENCODERS[tag] for tag in _BY_TAG}
    plain_frames = {tag: plain_frame(kind) for tag, kind in _BY_TAG.items()}
    built = [(builder(cls), args) for cls, args in values]
    plain_built = [(plain_builder(cls), args) for cls, args in values]
    lines, plain_lines = codec._LINES, _PLAIN_LINES
    Loop = Callable[[], list[Any]]
    rows: dict[str, tuple[str, int, Loop, Loop]] = {
        "frame encoders (core.encode)": (
            "record", len(records), lambda: [frames[r[0]](r) for r in records],
            lambda: [plain_frames[r[0]](r) for r in records]),
        "source builders (core._fast_source)": (
            "source value", len(values), lambda: [build(*args) for build, args in built],
            lambda: [build(*args) for build, args in plain_built]),
        "source builders: the public constructors, cls(*fields), in place of the plain loop": (
            "source value", len(values), lambda: [build(*args) for build, args in built],
            lambda: [cls(*args) for cls, args in values]),
        "wire line writers (wire.codec)": (
            "source item", len(items), lambda: [lines[type(i)](i) for i in items],
            lambda: [plain_lines[type(i)](i) for i in items]),
    }
    if a13n is not None:
        assert natives is not None
        from harness_agui.a13n import _adapter

        converters = (_adapter._CONVERTERS or _adapter._converters()).items
        plain, plain_calling_builders = plain_from_a13n(plain_builder), plain_from_a13n(builder)
        rows["a13n converters (a13n._adapter)"] = (
            "native item", len(natives), lambda: [converters[type(x)](x) for x in natives],
            lambda: [plain[type(x)](x) for x in natives])
        rows["a13n converters: the plain loop calling the generated builders"] = (
            "native item", len(natives), lambda: [converters[type(x)](x) for x in natives],
            lambda: [plain_calling_builders[type(x)](x) for x in natives])

    for name, (_, _, generated, plain_loop) in rows.items():
        assert generated() == plain_loop(), f"{name}: the plain version differs from the generated one"
    slow = sum(1 for e in rows["frame encoders (core.encode)"][2]() if e is None)  # RUN_FINISHED: a nested model
    assert slow <= 2, f"{slow} records take the slow path"

    def host() -> None:  # a Host's path per item: from_a13n (with a13n-harness), the journal line, the projection
        projecting = HarnessAguiObserver()
        if natives is not None:
            for x in natives:
                item = a13n.from_a13n(x)
                codec.encode(item)
                projecting.observe_encoded(item)
        else:
            for item in items:
                codec.encode(item)
                projecting.observe_encoded(item)

    loops: dict[str, Callable[[], Any]] = {"host path": host}
    for name, (_, _, generated, plain_loop) in rows.items():
        loops[name + " | generated"], loops[name + " | plain"] = generated, plain_loop
    load = os.getloadavg()
    times = _interleaved(loops, repeats)
    n = len(items)
    out_rows = []
    for name, (unit, count, _, _) in rows.items():
        generated_s, plain_s = times[name + " | generated"], times[name + " | plain"]
        out_rows.append({"generator": name, "unit": unit, "inputs": count,
                         "generated_us": generated_s / count * 1e6, "plain_us": plain_s / count * 1e6,
                         "ratio": plain_s / generated_s, "saved_us_per_item": (plain_s - generated_s) / n * 1e6,
                         "share": (plain_s - generated_s) / times["host path"]})
    return {"items": n, "repeats": repeats, "a13n": a13n is not None, "host_us_per_item": times["host path"] / n * 1e6,
            "rows": out_rows, "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}", "version": harness_agui.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_at_start": load[0], "load_at_end": os.getloadavg()[0],
            "command": "python -m bench.generated " + " ".join(sys.argv[1:])}


def report(result: dict[str, Any]) -> str:
    host = ("from_a13n + encode + observe_encoded()" if result["a13n"] else "encode + observe_encoded()")
    lines = [
        f"# Generated code against its plain version ({result['items']} items of the synthetic Run)",
        "",
        f"`{result['command'].strip()}`, harness-agui {result['version']}, {result['machine']}, {result['date']}, "
        f"load average {result['load_at_start']:.1f} at the start and {result['load_at_end']:.1f} at the end; "
        f"median of {result['repeats']} interleaved repeats, process CPU time, one process. \"plain\" is a "
        "generic loop over the same declarations written in bench/generated.py, equal output checked on every "
        "input first. µs per input (the unit column); \"share\" is what the plain version would add per source "
        f"item, over a Host's path per item measured beside it ({host}: "
        f"{result['host_us_per_item']:.2f} µs).",
        "",
        "| generator | per | inputs | generated µs | plain µs | plain / generated | added per item µs | share |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {r['generator']} | {r['unit']} | {r['inputs']} | {r['generated_us']:.3f} | {r['plain_us']:.3f} | "
              f"{r['ratio']:.2f}x | {r['saved_us_per_item']:.2f} | {r['share']:.1%} |" for r in result["rows"]]
    lines += ["", "The builders' statements run inside the a13n converters (only BinaryContent calls a builder "
                  "itself): outside a13n-harness they are not on a Host's path, and the a13n converters' plain row "
                  "(plain construction too) holds their difference again. The row with the generated builders "
                  "isolates the converters' own generation."]
    if not result["a13n"]:
        lines += ["", "a13n-harness is not importable here: the a13n converter rows are left out "
                      "(run under .venv-a13n, Python 3.13)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="each generated function against its plain version")
    parser.add_argument("--size", type=float, default=2e4, help="items in the Run (default 2e4)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-save", action="store_true", help="print only, do not write bench/results/")
    args = parser.parse_args(argv)
    if _a13n() is None:
        print("note: a13n-harness is not importable: the a13n converters are not measured "
              "(run under .venv-a13n, Python 3.13, for them)", file=sys.stderr)
    result = measure(int(args.size), args.repeats)
    text = report(result)
    print(text)
    if not args.no_save:
        save("generated", text, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
