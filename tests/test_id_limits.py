# Issue 36, item 4: how long an id may be, and why that keeps every event
# within the Host's cap. Every piece an event is cut into (a delta, a CUSTOM
# fragment) repeats its ids, so an id that nearly filled max_event_bytes left
# room for one character a piece: a 70,000-character message id with a 100 KB
# delta gave 100,001 events of 70 KB each, all over the cap, and MemoryError
# in the observer, project_run and the CLI. The source model now refuses an id
# or a name longer than MAX_SOURCE_ID_LENGTH characters, naming the field, at
# every door (constructors, the a13n adapter's builders, the wire decoder, the
# journal readers), and max_event_bytes is at least MIN_EVENT_BYTES, which
# leaves room for the longest ids written in the most bytes JSON takes.

from __future__ import annotations

import asyncio
import json
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver, assemble_custom
from harness_agui.core import fit as fitting
from harness_agui.core import records as ev
from harness_agui.core import source, state
from harness_agui.core._fast_source import builder
from harness_agui.core.fields import declared_classes, field_spec
from harness_agui.core.source import ExtensionEvent, HarnessEvent
from harness_agui.core.state import MAX_EVENT_BYTES, ProjectionOptions
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, project_run
from harness_agui.host._sqlite import checksum
from harness_agui.host.journal import ITEMS
from harness_agui.testing import SourceBuilder
from harness_agui.testing.strategies import source_values
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import DecodeError, decode, encode

# Spelt out, so that the tests read the same before and after the change (and fail before it, not at import).
LIMIT = 512  # core.source.MAX_SOURCE_ID_LENGTH
MIN_EVENT_BYTES = 16384  # core.state.MIN_EVENT_BYTES
WORST = "\x01"  # a control character: six bytes as JSON ("\u0001"), the most any character takes
BIG = 100_000


def _sizes(events: Any) -> list[int]:
    return [len(agui_to_json(e).encode("utf-8")) for e in events]


def _wire(events: Any) -> list[dict[str, Any]]:
    return [json.loads(agui_to_json(e)) for e in events]


def _joined(events: Any) -> list[dict[str, Any]]:
    """Consecutive deltas of one message or call joined: what cutting a delta leaves unchanged."""
    out: list[dict[str, Any]] = []
    for e in _wire(events):
        last = out[-1] if out else None
        key = e.get("messageId", e.get("toolCallId"))
        if (last is not None and e["type"].endswith(("_CONTENT", "_ARGS")) and last["type"] == e["type"]
                and last.get("messageId", last.get("toolCallId")) == key and last["timestamp"] == e["timestamp"]):
            last["delta"] += e["delta"]
        else:
            out.append(e)
    return out


def _every_kind_of_large_event(thread_id: str, run_id: str, name: str, size: int = BIG) -> list[Any]:
    """One Run whose every id and name is ``thread_id``, ``run_id`` or ``name``, with a large event of every
    way of cutting: a prompt and a text delta (deltas), tool args (deltas), a tool result and a run result
    (harness.event fragments and a stand-in), an observation and an extension (CUSTOM fragments)."""
    blob = "x\"\u00e9\U0001f600" * (size // 4)
    b = SourceBuilder(thread_id, run_id).user(blob, input_id=name).request()
    b.text(0, [blob], id=name).tool_call(1, "f", name, [json.dumps({"a": blob})])
    b.tool_result(name, "f", {"rows": blob}).observation(name, {"blob": blob})
    b.event(ExtensionEvent(kind=name, schema_version="1", payload={"blob": blob}))
    return b.completed({"report": blob}).items


def _observed(items: list[Any], limit: int | None) -> list[Any]:
    observer = HarnessAguiObserver(max_event_bytes=limit)
    return [e for item in items for e in observer.observe(item)]


# -- the source model: every id field, at the limit and one past it -------------------------------

ID_FIELDS = [(cls, a.name) for cls in declared_classes() for a in attrs.fields(cls)
             if field_spec(a).kind.name in ("name", "id_text")]


def test_every_field_that_holds_an_id_is_bounded_by_the_documented_limits() -> None:
    ids = {(cls.__name__, a.name) for cls in declared_classes() for a in attrs.fields(cls)
           if a.name == "id" or a.name.endswith(("_id", "identifier", "identity"))}
    bounded = {(cls.__name__, name) for cls, name in ID_FIELDS}
    assert ids and ids <= bounded, ids - bounded
    assert {("HarnessEvent", "thread_id"), ("HarnessRunResultEvent", "run_id"), ("ToolCallPart", "id"),
            ("InputEvent", "tool_call_id"), ("ExtensionEvent", "kind")} <= bounded
    assert getattr(source, "MAX_SOURCE_ID_LENGTH", None) == LIMIT
    assert getattr(state, "MIN_EVENT_BYTES", None) == MIN_EVENT_BYTES


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.parametrize(("cls", "name"), ID_FIELDS, ids=[f"{c.__name__}.{n}" for c, n in ID_FIELDS])
@given(data=st.data())
def test_an_id_at_the_limit_is_accepted_and_one_longer_is_refused_naming_the_field(
        cls: type, name: str, data: st.DataObject) -> None:
    value = data.draw(source_values(cls))
    fields = {a.name: getattr(value, a.name) for a in attrs.fields(cls)}
    for make in (cls, builder(cls)):  # the constructor and the a13n adapter's builder
        for text in ("i" * LIMIT, WORST * LIMIT):
            try:
                made = make(**dict(fields, **{name: text})) if make is cls else make(
                    *dict(fields, **{name: text}).values())
                assert getattr(made, name) == text
            except ValueError as e:  # only a rule tying fields together (a deferred call's target)
                assert "characters long" not in str(e)
        for text in ("i" * (LIMIT + 1), WORST * 70_000):
            args = dict(fields, **{name: text})
            with pytest.raises(ValueError, match=rf"^{cls.__name__}\.{name} is {len(text)} characters long; "
                                                 rf"an id or name may have at most {LIMIT}$"):
                make(**args) if make is cls else make(*args.values())


def test_every_wire_id_the_server_takes_is_an_id_the_source_model_takes() -> None:
    # A served Run may be journaled under its wire ids (host.bindings.WireRun.same).
    serve = pytest.importorskip("harness_agui.serve")
    assert serve.MAX_ID_LENGTH <= getattr(source, "MAX_SOURCE_ID_LENGTH", 0)


def test_a_host_kit_client_id_is_bounded_like_a_source_id() -> None:
    assert ProjectionOptions(client_run_id="r" * LIMIT).client_run_id == "r" * LIMIT
    for name in ("client_thread_id", "client_run_id"):
        with pytest.raises(ValueError, match=f"^{name} is {LIMIT + 1} characters long"):
            ProjectionOptions(**{name: "r" * (LIMIT + 1)})


# -- the decoder ------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["thread_id", "run_id"])
def test_a_wire_line_with_an_id_past_the_limit_is_a_decode_error_naming_the_field(field: str) -> None:
    item = SourceBuilder().observation("n", None).items[0]
    at_limit = attrs.evolve(item, **{field: WORST * LIMIT})
    assert decode(encode(at_limit)) == at_limit
    line = encode(item).replace(f'"{field}":"{getattr(item, field)}"', f'"{field}":"{"x" * (LIMIT + 1)}"')
    with pytest.raises(DecodeError, match=f"^line 7: invalid item: HarnessEvent.{field} is {LIMIT + 1} characters"):
        decode(line, line=7)


def test_a_wire_line_with_a_long_part_id_is_a_decode_error_naming_the_part_field() -> None:
    item = SourceBuilder().request().text(0, ["hi"], id="m").items[1]
    line = encode(item).replace('"id":"m"', f'"id":"{"m" * 70_000}"')
    with pytest.raises(DecodeError, match="invalid item: TextPart.id is 70000 characters long"):
        decode(line)


# -- the observer: what ids at the limit give ---------------------------------------------------

@pytest.mark.parametrize("limit", [MIN_EVENT_BYTES, MAX_EVENT_BYTES])
def test_ids_at_the_limit_fit_every_limit_the_observer_takes_and_a_smaller_limit_is_refused(limit: int) -> None:
    with pytest.raises(ValueError, match=f"at least {MIN_EVENT_BYTES}"):  # it could not hold them
        HarnessAguiObserver(max_event_bytes=MIN_EVENT_BYTES - 1)
    # Every id and name at the limit, in the most bytes JSON takes.
    items = _every_kind_of_large_event(WORST * LIMIT, "\x02" * LIMIT, "\x03" * LIMIT)
    events = _observed(items, limit)
    assert max(_sizes(events)) <= limit
    # A piece holds kilobytes, not a character: the events are a few hundred, not hundreds of thousands.
    assert len(events) < 8 * 6 * BIG // (limit - 4 * 6 * LIMIT)
    whole = _observed(items, None)
    assert _joined(assemble_custom(events)) == _joined(whole)
    replayed = HarnessAguiObserver(max_event_bytes=limit)
    asyncio.run(replayed.resume(items))
    assert _wire(replayed.snapshot()) == _wire(events)


_ID_ALPHABET = st.characters(codec="utf-8", exclude_characters=":")  # ":" separates generated ids' parts


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limit=st.sampled_from([1024, 4096, MIN_EVENT_BYTES - 1, MIN_EVENT_BYTES, MAX_EVENT_BYTES]),
       lengths=st.tuples(*[st.integers(1, LIMIT + 40)] * 3), data=st.data())
def test_no_event_exceeds_any_limit_the_options_take_for_any_ids_the_source_model_takes(
        limit: int, lengths: tuple[int, int, int], data: st.DataObject) -> None:
    ids = [data.draw(st.text(st.sampled_from([WORST, "\"", "\\", "\u00e9", "\U0001f600"]) | _ID_ALPHABET,
                             min_size=n, max_size=n).filter(str.strip)) for n in lengths]
    try:
        options = ProjectionOptions(max_event_bytes=limit)
        items = _every_kind_of_large_event(*ids, size=5_000)
    except ValueError:
        assume(False)  # refused at the boundary: a limit below the least, an id past the longest
    events = _observed(items, options.max_event_bytes)
    assert max(_sizes(events)) <= limit


# -- the slicer's own guard ---------------------------------------------------------------------

def test_cutting_refuses_rather_than_emit_pieces_over_the_limit_when_repeated_ids_leave_no_room() -> None:
    item = HarnessEvent(thread_id=WORST * LIMIT, run_id=WORST * LIMIT, sequence=0,
                        occurred_at=SourceBuilder().observation("n", None).items[0].occurred_at,
                        event=ExtensionEvent(kind="k", schema_version="1"))
    # The most a piece repeats: a fragment's Thread, Run and subagent ids and its name; a delta's ids.
    custom = ev.attributed(ev.custom(0, "harness.extension." + WORST * LIMIT, json.dumps({"blob": "x" * 20_000})),
                           WORST * LIMIT)
    delta = ev.attributed(ev.text_content(0, WORST * LIMIT + ":request-0:part-0:text", "y" * 20_000),
                          WORST * LIMIT)
    for record, too_small in ((custom, 12_000), (delta, 6_000)):
        pieces = fitting.fit([record], item, MIN_EVENT_BYTES)
        assert len(pieces) > 1
        assert max(len(agui_to_json(ev.build(p)).encode()) for p in pieces) <= MIN_EVENT_BYTES
        with pytest.raises(ValueError, match="no room for content"):
            fitting.fit([record], item, too_small)


# -- project_run and the command line --------------------------------------------------------------

def test_project_run_takes_ids_at_the_limit_and_refuses_a_journal_row_past_it_naming_the_field(
        tmp_path: Path) -> None:
    at_limit = tmp_path / "at.db"
    run_id = WORST * LIMIT
    items = _every_kind_of_large_event("\x02" * LIMIT, run_id, "\x03" * LIMIT, size=20_000)
    with SqliteSourceJournal(at_limit, synchronous="OFF") as journal, \
            SqliteDeliveryLog(at_limit, synchronous="OFF") as log:
        for item in items:
            journal.append(item)
        observer = asyncio.run(asyncio.wait_for(project_run(run_id, journal, log), 60))
    assert max(_sizes(observer.snapshot())) <= MAX_EVENT_BYTES

    past = tmp_path / "past.db"
    with SqliteSourceJournal(past, synchronous="OFF") as journal:
        for item in SourceBuilder("t", "r").request().text(0, ["hello"], id="m").completed("ok").items:
            journal.append(item)
    with sqlite3.connect(past) as conn:  # rows an earlier release wrote, which took any id: sealed as it sealed them
        for rowid, *values, _crc in conn.execute(f"SELECT {ITEMS.select} FROM {ITEMS.name}").fetchall():
            values[-1] = values[-1].replace('"id":"m"', f'"id":"{"m" * (LIMIT + 1)}"')
            conn.execute(f"UPDATE {ITEMS.name} SET line = ?, crc = ? WHERE rowid = ?",
                         (values[-1], checksum(values), rowid))
    with SqliteSourceJournal(past, synchronous="OFF") as journal, SqliteDeliveryLog(past, synchronous="OFF") as log, \
            pytest.raises(DecodeError, match=f"TextPart.id is {LIMIT + 1} characters long"):
        asyncio.run(asyncio.wait_for(project_run("r", journal, log), 30))


def _journal_file(path: Path, id_length: int) -> Path:
    """The issue's journal: a message id of ``id_length`` characters and a 100 KB delta."""
    items = SourceBuilder("t", "r").request().text(0, ["d" * BIG], id="m").completed("ok").items
    lines = [encode(i).replace('"id":"m"', f'"id":"{"m" * id_length}"') for i in items]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _cli(*args: str | Path, stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    def at_most_3_gib() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    return subprocess.run([sys.executable, "-m", "harness_agui", *map(str, args)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, encoding="utf-8", timeout=120,
                          preexec_fn=at_most_3_gib)


def test_check_and_replay_take_an_id_at_the_limit_and_refuse_one_past_it_naming_the_field(tmp_path: Path) -> None:
    path = _journal_file(tmp_path / "at.jsonl", LIMIT)
    check = _cli("check", path)
    assert check.returncode == 0, check.stdout + check.stderr
    replay = _cli("replay", path)
    assert replay.returncode == 0, replay.stderr
    assert max(len(line.encode()) for line in replay.stdout.splitlines()) <= MAX_EVENT_BYTES

    path = _journal_file(tmp_path / "past.jsonl", LIMIT + 1)
    check = _cli("check", path)
    assert check.returncode == 1 and "Traceback" not in check.stderr
    assert f"undecodable: line 2: invalid item: TextPart.id is {LIMIT + 1} characters long" in check.stdout
    replay = _cli("replay", path)
    assert replay.returncode == 1 and "Traceback" not in replay.stderr
    assert replay.stderr == (f"harness-agui: {path}:2: invalid item: TextPart.id is {LIMIT + 1} characters long; "
                             f"an id or name may have at most {LIMIT}\n")


def test_the_issue_s_journal_file_ends_in_an_error_naming_the_field_within_3_gib(tmp_path: Path) -> None:
    path = _journal_file(tmp_path / "issue.jsonl", 70_000)
    assert path.stat().st_size < 450_000  # some 340 KB: a file as small as the issue's (421 KB)
    check = _cli("check", path, stdout=subprocess.PIPE)
    assert check.returncode == 1 and "TextPart.id is 70000 characters long" in check.stdout, check.stderr[-500:]
    replay = _cli("replay", path, stdout=subprocess.DEVNULL)
    assert replay.returncode == 1 and "TextPart.id is 70000 characters long" in replay.stderr, replay.stderr[-500:]
