# Fuzzing the boundary: hostile input at the two outer doors, the
# wire decoder and the command line, checked for one rule: every input is
# either taken or refused with the documented error, and whatever is taken
# can go all the way through (observed, serialised by every AG-UI serialiser,
# written back to a line, stored) without a late failure.
#
# Inputs are random bytes, random JSON, and valid lines (realistic Runs from
# the builder) mutated at the byte level and at the JSON level, where a
# mutation drops in one of the values that broke earlier releases: nesting
# past the limit, lone surrogates as keys and values, integers past 2**53,
# 2**63 and 4000 digits, datetimes at the ends of the calendar, terminal
# escapes in field names. Each test is bounded in examples (a few hundred
# for the decoder, fewer for the command line, which reads files).

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ag_ui.encoder import EventEncoder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.cli import main
from harness_agui.core.errors import AguiObservationError, HarnessAguiError
from harness_agui.core.source import ExtensionEvent, InputEvent
from harness_agui.testing import complete_histories
from harness_agui.testing.builder import SourceBuilder, simulated_run
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import DecodeError, decode, encode

# -- the seed corpus and the hostile values ---------------------------------------------------


def _seed_runs() -> list[list[str]]:
    other = SourceBuilder("thread-x", "run-x")
    other.event(InputEvent(input_id="in-1", source="user", content={"media": "image/png", "uri": "s3://b/k"},
                           metadata={"client": {"lang": "fr"}}))
    other.event(ExtensionEvent(kind="lifecycle", schema_version="1",
                               payload={"type": "model_request_started", "request_index": 0}))
    other.tool_call(0, "delete_files", "call-del", ['{"paths": ["/tmp/a"]}'])
    other.suspended(("call-del", "delete_files", {"paths": ["/tmp/a"]}))
    failed = SourceBuilder("thread-y", "run-y").user("hi").request().text(0, ["par", "tial"]).failed("boom", "it broke")
    return [[encode(i) for i in run] for run in (simulated_run(), other.items, failed.items)]


SEED_RUNS = _seed_runs()
SEED_LINES = [line for run in SEED_RUNS for line in run]


def _nested(depth: int) -> Any:
    value: Any = 0
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


# JSON text fragments, each dropped in as a whole value.
HOSTILE_VALUES = [
    json.dumps(_nested(129)), json.dumps(_nested(127)), json.dumps(_nested(300)), "[" * 2000 + "]" * 2000,
    '{"\\ud800":1}', '{"ok":[{"a\\udfffb":null}]}', '"\\udfff"', '"a\\ud83d"', '"\\ud83c\\udf0d"',
    str(2**63), str(2**64), str(2**53), str(2**53 - 1), "-1", "1" + "0" * 4300, "1" + "0" * 3999, "1e400",
    "-0.0", "1.5", '"0001-01-01T00:00:00+09:00"', '"9999-12-31T23:59:59.999999-05:00"',
    '"0001-01-01T00:00:00+00:00"', '"9999-12-31T23:59:59.999999+00:00"', '"2026-11-30T09:00:00"',
    '"2026-11-30T09:00:00+23:59:59.999999"', '"0001-01-01T00:00:00-23:59"', '"\\u001b[2J\\nfake: line 2"',
    '""', '" "', "null", "true", "[]", "{}", '"x"', '{"type":"text"}', '"\\u0000"', '"\\u202e"',
]
# The slots where those values did harm: the envelope's numbers and dates,
# the JSON-valued payload fields, text streamed to AG-UI.
AIMED_KEYS = {"sequence", "occurred_at", "content", "payload", "value", "output", "args", "args_delta",
              "metadata", "content_delta", "run_id", "tool_call_id", "message", "name"}
JSON_KEYS = {"content", "payload", "value", "output", "args", "args_delta", "metadata"}


def _json_kind(value: Any) -> str:
    return {str: "string", int: "number", float: "number", list: "array", dict: "object"}.get(type(value), "other")


def _fragment_kind(fragment: str) -> str:
    try:
        return _json_kind(json.loads(fragment))
    except ValueError:  # more digits than Python reads
        return "number"
    except RecursionError:
        return "array"


HOSTILE_BY_KIND: dict[str, list[str]] = {"any": HOSTILE_VALUES}
for _fragment in HOSTILE_VALUES:
    HOSTILE_BY_KIND.setdefault(_fragment_kind(_fragment), []).append(_fragment)

HOSTILE_KEYS = ["\x1b[2J\nfake: line 2", "\ud800", "type", "v", "", "\u202e", "extra"]
_HOLE = "\x00hole\x00"


def _containers(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key or index) slot of a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((value, k))
            _containers(v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((value, i))
            _containers(v, out)
    return out


def _mutated(draw: st.DrawFn, line: str) -> str | bytes:
    """``line`` with one mutation: a hostile value in a slot, a hostile key,
    a key dropped, or a few bytes flipped, inserted, deleted or cut."""
    how = draw(st.sampled_from(["value", "value", "value", "value", "key", "drop", "bytes"]))
    if how == "bytes":
        data = bytearray(line.encode("utf-8"))
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(data)))
            op = draw(st.sampled_from(["flip", "insert", "delete", "cut"]))
            if op == "flip" and at < len(data):
                data[at] ^= 1 << draw(st.integers(0, 7))
            elif op == "insert":
                data[at:at] = draw(st.binary(min_size=1, max_size=4))
            elif op == "delete":
                del data[at:at + draw(st.integers(1, 8))]
            elif op == "cut":
                del data[at:]
        return bytes(data)
    obj = json.loads(line)
    slots = _containers(obj, [])
    aimed = [(c, k) for c, k in slots if k in AIMED_KEYS]
    container, key = draw(st.sampled_from(aimed if aimed and draw(st.integers(0, 4)) else slots))
    fragment = None
    if how == "value":
        # Mostly a value of the type the slot holds (or anything, in a JSON-valued slot), so
        # that the line gets past the type checks to the limits; sometimes anything at all.
        kind = "any" if key in JSON_KEYS or draw(st.integers(0, 3)) == 0 else _json_kind(container[key])
        container[key] = _HOLE
        fragment = draw(st.sampled_from(HOSTILE_BY_KIND.get(kind) or HOSTILE_VALUES))
    elif how == "key":
        target = container if isinstance(container, dict) else obj
        target[draw(st.sampled_from(HOSTILE_KEYS))] = _HOLE
        fragment = draw(st.sampled_from(HOSTILE_VALUES))
    elif isinstance(container, dict):
        del container[key]
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()), separators=(",", ":"))
    return text if fragment is None else text.replace(json.dumps(_HOLE), fragment)


@st.composite
def mutated_lines(draw: st.DrawFn) -> str | bytes:
    return _mutated(draw, draw(st.sampled_from(SEED_LINES)))


@st.composite
def lines_in_context(draw: st.DrawFn) -> tuple[list[str], str | bytes]:
    """A mutated line with the lines of its Run before it, so that an item
    that decodes meets the state it would meet in a real history."""
    run = draw(st.sampled_from(SEED_RUNS))
    at = draw(st.integers(0, len(run) - 1))
    return run[:at], _mutated(draw, run[at])


def _json_values() -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


@st.composite
def random_json_items(draw: st.DrawFn) -> str:
    """A JSON object shaped like a wire line, with random values."""
    obj = json.loads(draw(st.sampled_from(SEED_LINES)))
    for container, key in draw(st.lists(st.sampled_from(_containers(obj, [])), max_size=3)):
        try:
            container[key] = draw(_json_values())
        except (IndexError, KeyError):  # a slot inside a value replaced just before
            pass
    return json.dumps(obj, ensure_ascii=draw(st.booleans()))


any_line = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=100),
    _json_values().map(json.dumps),
    random_json_items(),
    mutated_lines(),
)


# -- what "goes all the way through" means ----------------------------------------------------

ENCODER = EventEncoder()


def assert_emittable(events: Any) -> None:
    for e in events:
        e.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")
        agui_to_json(e).encode("utf-8")
        ENCODER.encode(e).encode("utf-8")


def decoded(line: str | bytes) -> Any:
    """The item a line holds, or None when it is refused with DecodeError.
    Any other exception fails the test."""
    try:
        item = decode(line)
    except DecodeError:
        return None
    again = encode(item)
    again.encode("utf-8")
    assert decode(again) == item
    return item


def observed(observer: HarnessAguiObserver, item: Any) -> None:
    try:
        events = observer.observe(item)
    except (AguiObservationError, TypeError):
        return
    assert_emittable(events)


# -- the wire decoder ----------------------------------------------------------------------------

FUZZ = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                          HealthCheck.filter_too_much])


@FUZZ
@given(st.one_of(any_line.map(lambda line: ([], line)), lines_in_context(), lines_in_context()))
def test_every_line_decodes_to_an_item_that_observes_and_serialises_or_is_a_decode_error(
        case: tuple[list[str], str | bytes]) -> None:
    before, line = case
    item = decoded(line)
    if item is not None:
        observer = HarnessAguiObserver()
        for good in before:
            observer.observe(decode(good))
        observed(observer, item)
        assert_emittable(observer.snapshot())


@st.composite
def mutated_runs(draw: st.DrawFn) -> list[str | bytes]:
    run = draw(st.sampled_from(SEED_RUNS))
    lines: list[str | bytes] = list(run)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = _mutated(draw, run[at])
    if draw(st.booleans()):
        at = draw(st.integers(0, len(lines) - 1))
        lines.insert(draw(st.integers(0, len(lines))), lines[at])  # a duplicate or out-of-order line
    return lines


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                   HealthCheck.function_scoped_fixture])
@given(lines=mutated_runs())
def test_a_mutated_run_is_observed_item_by_item_and_every_accepted_item_can_be_stored(
        lines: list[str | bytes], tmp_path_factory: pytest.TempPathFactory) -> None:
    from harness_agui.host import SqliteSourceJournal

    observer = HarnessAguiObserver()
    store = SqliteSourceJournal(tmp_path_factory.mktemp("store") / "host.db", synchronous="NORMAL")
    try:
        for line in lines:
            item = decoded(line)
            if item is None:
                continue
            observed(observer, item)
            try:
                store.append(item)
            except HarnessAguiError:  # the Run's order, as the Host kit documents
                pass
    finally:
        store.close()
    assert_emittable(observer.snapshot())


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(history=complete_histories())
def test_every_event_of_any_generated_run_serialises_and_every_item_round_trips(history: list[Any]) -> None:
    observer = HarnessAguiObserver()
    for item in history:
        assert decode(encode(item)) == item
        observer.observe(item)
    assert_emittable(observer.snapshot())


def test_the_hostile_values_are_each_refused_or_taken_in_every_slot_of_every_seed_line() -> None:
    # The exhaustive sweep behind the random one: every value in every slot.
    for line in SEED_LINES:
        obj = json.loads(line)
        for index in range(len(_containers(obj, []))):
            for fragment in HOSTILE_VALUES:
                copy = json.loads(line)
                container, key = _containers(copy, [])[index]
                container[key] = _HOLE
                item = decoded(json.dumps(copy).replace(json.dumps(_HOLE), fragment))
                if item is not None:
                    observed(HarnessAguiObserver(), item)


# -- the command line ------------------------------------------------------------------------------

def run_main(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8"))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    status = main(argv)
    out.flush()
    err.flush()
    return status, out.buffer.getvalue().decode("utf-8"), err.buffer.getvalue().decode("utf-8")


@st.composite
def journal_files(draw: st.DrawFn) -> bytes:
    lines = draw(mutated_runs())
    if draw(st.booleans()):
        lines += draw(mutated_runs())
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(any_line))
    chunks = [x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass") for x in lines]
    return b"\n".join(chunks) + draw(st.sampled_from([b"\n", b"", b"\n\n"]))


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                   HealthCheck.function_scoped_fixture])
@given(data=journal_files(), command=st.sampled_from([["replay"], ["replay", "--format", "sse"], ["check"],
                                                      ["replay", "--format", "pretty"],
                                                      ["replay", "--max-line-bytes", "300"]]))
def test_the_command_line_exits_0_1_or_2_with_at_most_one_escaped_line_on_stderr(
        data: bytes, command: list[str], tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path_factory.mktemp("cli") / "journal.jsonl"
    path.write_bytes(data)
    status, out, err = run_main([*command[:1], str(path), *command[1:]], monkeypatch)
    assert status in (0, 1, 2)
    assert err.count("\n") <= 1 and (err == "") == (status == 0 or command[0] == "check")
    assert "\x1b" not in err
    if command[0] == "check":
        assert "\x1b" not in out and out.endswith(("OK: no problems\n", "problem\n", "problems\n"))


def test_the_command_line_in_a_subprocess_never_prints_a_traceback(tmp_path: Path) -> None:
    # A few whole processes, for what only the interpreter's exit does (the final flush of stdout).
    rng = random.Random(13)
    for n in range(6):
        lines = [line.encode() for line in rng.choice(SEED_RUNS)]
        for _ in range(3):
            at = rng.randrange(len(lines))
            lines[at] = bytes(b ^ (1 << rng.randrange(8)) if rng.random() < 0.02 else b for b in lines[at])
        path = tmp_path / f"j{n}.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        for command in ("replay", "check"):
            proc = subprocess.run([sys.executable, "-m", "harness_agui", command, str(path)], capture_output=True,
                                  timeout=120)
            assert proc.returncode in (0, 1, 2), proc.stderr
            assert b"Traceback" not in proc.stderr and proc.stderr.count(b"\n") <= 1, proc.stderr
