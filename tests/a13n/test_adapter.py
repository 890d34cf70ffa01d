# harness_agui.a13n on real a13n-harness Runs made afresh: every item of every
# Run survives from_a13n -> encode -> decode -> to_a13n unchanged (the terminal
# result too: HarnessState, usage records, all_messages()/new_messages(),
# structured output, binaries, signatures, provider details, timestamps), the
# generator writes journals that read back as the same items, and each Run's
# items project without error. Fresh Runs carry new ids and clocks, so they are
# compared with the committed fixtures by shape only.

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import attrs
import pytest

from harness_agui import HarnessAguiObserver
from harness_agui.a13n import a13n_differences, a13n_equal, from_a13n, to_a13n
from harness_agui.core.source import HarnessRunResultEvent
from harness_agui.wire.codec import decode, encode
from harness_agui.wire.jsonl import check_journal

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "a13n"


def test_every_scenario_ran_and_the_committed_fixtures_hold_the_same_scenarios(scenarios: list[Any]) -> None:
    names = [s.name for s in scenarios]
    assert len(names) >= 13
    assert sorted(names) == sorted(p.stem for p in FIXTURES.glob("*.jsonl"))


def test_every_item_of_every_fresh_run_survives_the_round_trip_through_the_wire(scenarios: list[Any]) -> None:
    checked = 0
    for scenario in scenarios:
        for native in scenario.items:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a pydantic serializer warning would be a silent loss
                item = from_a13n(native)
                line = encode(item)
                assert decode(line) == item
                assert encode(decode(line)) == line
                back = to_a13n(decode(line), output_type=scenario.output_type)
            differences = a13n_differences(native, back)
            assert not differences, f"{scenario.name} {native.run_id} #{native.sequence}: {differences}"
            checked += 1
    assert checked > 400


def test_the_terminal_result_comes_back_whole(scenarios: list[Any]) -> None:
    for scenario in scenarios:
        for run in scenario.runs:
            native = run[-1].result
            back = to_a13n(decode(encode(from_a13n(run[-1]))), output_type=scenario.output_type).result
            assert back.state == native.state and back.state is not None
            assert back.all_messages() == native.all_messages()
            assert back.new_messages() == native.new_messages()
            assert back.usage == native.usage and back.usage_records == native.usage_records
            assert back.failure == native.failure and back.deferred == native.deferred
            assert type(back.output) is type(native.output) and back.output == native.output
            if native.status == "completed":
                assert back.output_json() == native.output_json()


def test_structured_output_comes_back_as_its_type_only_when_given_it(scenarios: list[Any]) -> None:
    (structured,) = [s for s in scenarios if s.name == "structured_output"]
    terminal = structured.runs[0][-1]
    item = from_a13n(terminal)
    assert item.result.output == {"city": "Paris", "temp_c": 21}
    assert to_a13n(item).result.output == {"city": "Paris", "temp_c": 21}
    assert not a13n_equal(terminal, to_a13n(item))
    typed = to_a13n(item, output_type=structured.output_type)
    assert a13n_equal(terminal, typed)
    assert typed.result.output == terminal.result.output == structured.output_type(city="Paris", temp_c=21)


def test_the_equality_helper_sees_a_change_anywhere(scenarios: list[Any]) -> None:
    terminal = scenarios[0].runs[0][-1]
    same = to_a13n(from_a13n(terminal))
    assert a13n_equal(terminal, same)
    changed = from_a13n(terminal)
    history = changed.result.history
    assert history is not None and history.messages
    shorter = attrs.evolve(changed, result=attrs.evolve(changed.result, history=attrs.evolve(
        history, messages=history.messages[:-1], new_message_index=0)))
    assert any("all_messages" in d for d in a13n_differences(terminal, to_a13n(shorter)))
    event = scenarios[0].runs[0][0]
    assert a13n_differences(event, terminal) == ["types differ: HarnessEvent and HarnessRunResultEvent"]


def test_the_generator_writes_every_run_as_a_journal_that_reads_back(scenarios: list[Any],
                                                                     fresh_journals: Path) -> None:
    for scenario in scenarios:
        path = fresh_journals / f"{scenario.name}.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        assert [decode(line) for line in lines] == [from_a13n(x) for x in scenario.items]
        report = check_journal(path)
        assert report.ok, (scenario.name, report)
        terminals = [json.loads(line)["run_id"] for line in lines if json.loads(line)["kind"] == "result"]
        assert len(terminals) == len(scenario.runs)


def _shape(items: list[Any]) -> tuple[Any, ...]:
    """What stays the same between two generations: the Runs' terminal
    statuses, the payload types used, the number of Runs."""
    terminals = tuple(i.result.status for i in items if isinstance(i, HarnessRunResultEvent))
    kinds = frozenset(type(getattr(i, "event", None)).__name__ for i in items)
    return terminals, kinds, len({i.run_id for i in items})


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.jsonl")))
def test_a_fresh_run_has_the_shape_of_its_committed_fixture(name: str, scenarios: list[Any]) -> None:
    (scenario,) = [s for s in scenarios if s.name == name]
    committed = [decode(line) for line in (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
    assert _shape([from_a13n(x) for x in scenario.items]) == _shape(committed)


def test_each_fresh_run_projects_without_error(scenarios: list[Any]) -> None:
    # The root Runs only: a delegating stream interleaves its children's Runs,
    # whose projection belongs to the subagent work.
    for scenario in scenarios:
        items = [from_a13n(x) for x in scenario.items]
        for root in [i.run_id for i in items if isinstance(i, HarnessRunResultEvent)]:
            observer = HarnessAguiObserver()
            for item in items:
                if item.run_id == root:
                    observer.observe(item)
            assert observer.finished, (scenario.name, root)
