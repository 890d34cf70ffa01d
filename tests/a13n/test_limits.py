# Real a13n-harness Runs at the edges of what a13n-harness itself carries
# (tools/make_a13n_fixtures.py LIMIT_SCENARIOS, made afresh, never
# committed): a tool result nested as deep as the Harness passes end to end,
# one a level deeper, a 2 MiB tool result that makes a terminal line of tens
# of MB, raw bytes a tool returned. Each Run the Harness completes converts,
# round-trips the wire and to_a13n losslessly, is journaled and projects onto
# a valid AG-UI run; what is beyond is a ValueError naming the field.

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness_agui import HarnessAguiObserver
from harness_agui.a13n import a13n_differences, a13n_equal, from_a13n, to_a13n
from harness_agui.core._json import MAX_JSON_DEPTH
from harness_agui.core.source import BinaryContent, ToolResultEvent, describe_wrong_item
from harness_agui.wire.codec import decode, encode
from harness_agui.wire.jsonl import Journal, check_journal

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

MiB = 1024 * 1024


@pytest.fixture(scope="session")
def limits(generator: ModuleType) -> dict[str, Any]:
    logging.getLogger("a13n_harness").setLevel(logging.ERROR)
    return {name: asyncio.run(generator.run_scenario(name)) for name in generator.LIMIT_SCENARIOS}


def depth(value: Any) -> int:
    level, d = [value], 0
    while any(isinstance(v, (list, dict)) for v in level):
        level = [x for v in level if isinstance(v, (list, dict)) for x in (v.values() if isinstance(v, dict) else v)]
        d += 1
    return d


def project(items: list[Any]) -> tuple[HarnessAguiObserver, list[dict[str, Any]]]:
    from harness_agui.wire.agui import agui_to_json

    observer = HarnessAguiObserver()
    events = [json.loads(agui_to_json(e)) for item in items for e in observer.observe(item)]
    return observer, events


def assert_valid_run(items: list[Any]) -> None:
    from ag_ui_validate.pytest_plugin import validate_agui

    observer, events = project(items)
    assert observer.finished and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    report = validate_agui(events)
    assert (report.summary.errors, report.summary.warnings) == (0, 0), report.diagnostics


def assert_lossless(scenario: Any) -> list[Any]:
    items = []
    for native in scenario.items:
        item = from_a13n(native)
        line = encode(item)
        assert decode(line) == item
        back = to_a13n(decode(line), output_type=scenario.output_type, tool_types=scenario.tool_types)
        assert not a13n_differences(native, back)
        items.append(item)
    return items


def test_a_tool_result_as_deep_as_a13n_harness_carries_round_trips_and_projects(generator: ModuleType,
                                                                                 limits: dict[str, Any]) -> None:
    items = assert_lossless(limits["deep_tool_result"])
    (result,) = [i.event for i in items if isinstance(getattr(i, "event", None), ToolResultEvent)]
    assert depth(result.content) == generator.DEEPEST
    terminal = items[-1].result
    assert depth(terminal.state) > generator.DEEPEST + 4 and depth(terminal.history.messages) > generator.DEEPEST
    assert max(depth(terminal.state), depth(terminal.history.messages)) <= MAX_JSON_DEPTH
    assert_valid_run(items)


def test_one_level_deeper_the_terminal_item_is_refused_naming_its_history(limits: dict[str, Any]) -> None:
    # a13n-harness completes the Run, but its own result can no longer give the Run's messages.
    scenario = limits["too_deep_tool_result"]
    *events, terminal = scenario.items
    assert all(from_a13n(x) is not None for x in events)
    with pytest.raises(ValueError, match=r"^RunResult\.history: a13n-harness could not give the Run's messages"):
        from_a13n(terminal)


def test_a_tool_result_deeper_than_the_limit_is_a_value_error_naming_the_field(generator: ModuleType,
                                                                               limits: dict[str, Any]) -> None:
    import dataclasses

    native = next(x for x in limits["deep_tool_result"].items
                  if type(getattr(x, "event", None)).__name__ == "FunctionToolResultEvent")
    part = dataclasses.replace(native.event.part, content=generator.nested_json(MAX_JSON_DEPTH + 1))
    deeper = dataclasses.replace(native, event=dataclasses.replace(native.event, part=part))
    with pytest.raises(ValueError, match=f"ToolResultEvent.content is nested more than {MAX_JSON_DEPTH}"):
        from_a13n(deeper)


def test_a_2_mib_tool_result_is_journaled_whole_and_its_terminal_line_read_back(
        limits: dict[str, Any], tmp_path: Path) -> None:
    from harness_agui.host import SqliteSourceJournal

    scenario = limits["large_tool_result"]
    items = assert_lossless(scenario)
    lines = [encode(i) for i in items]
    assert len(lines[-1].encode()) > 16 * MiB  # more than the old default line limit, two copies of the history
    path = tmp_path / "large.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert list(Journal(path)) == items and check_journal(path).ok
    journal = SqliteSourceJournal(str(tmp_path / "host.db"))
    try:
        assert all(journal.append(i) for i in items)

        async def read() -> list[Any]:
            return [i async for i in journal.read_prefix(items[0].run_id, through=len(items) - 1)]

        assert asyncio.run(read()) == items
    finally:
        journal.close()
    assert_valid_run(items)


def test_a_tool_result_that_is_a_pydantic_model_comes_back_as_its_type_only_when_given_it(
        generator: ModuleType, limits: dict[str, Any]) -> None:
    scenario = limits["large_tool_result"]
    native = next(x for x in scenario.items if type(getattr(x, "event", None)).__name__ == "FunctionToolResultEvent")
    item = from_a13n(native)
    assert isinstance(item.event.content, dict) and item.event.content["title"] == "large"
    assert not a13n_equal(native, to_a13n(item))
    typed = to_a13n(item, tool_types={"read_report": generator.Report})
    assert a13n_equal(native, typed) and type(typed.event.part.content) is generator.Report


def test_raw_bytes_a_tool_returned_become_binary_content(limits: dict[str, Any]) -> None:
    scenario = limits["bytes_tool_result"]
    items = [from_a13n(x) for x in scenario.items]
    (item,) = [i for i in items if isinstance(getattr(i, "event", None), ToolResultEvent)]
    assert item.event.content == BinaryContent(data=b"\xff\x00", media_type="application/octet-stream")
    assert [decode(encode(i)) for i in items] == items
    assert bytes(to_a13n(item).event.part.content.data) == b"\xff\x00"
    assert_valid_run(items)


@pytest.mark.parametrize(("field", "value", "says"), [
    ("content", object(), "ToolResultEvent.content holds a object, which is neither JSON nor content"),
    ("metadata", {"raw": b"\xff\x00"}, "ToolResultEvent.metadata holds a dict"),
    ("metadata", object(), "ToolResultEvent.metadata holds a object"),
])
def test_a_value_pydantic_cannot_write_as_json_is_a_value_error_naming_the_field(
        limits: dict[str, Any], field: str, value: Any, says: str) -> None:
    import dataclasses

    native = next(x for x in limits["bytes_tool_result"].items
                  if type(getattr(x, "event", None)).__name__ == "FunctionToolResultEvent")
    part = dataclasses.replace(native.event.part, **{field: value})
    changed = dataclasses.replace(native, event=dataclasses.replace(native.event, part=part))
    with pytest.raises(ValueError, match=f"^{says}"):
        from_a13n(changed)


def test_an_a13n_item_given_where_a_source_item_belongs_is_told_to_go_through_from_a13n(
        limits: dict[str, Any]) -> None:
    native = limits["bytes_tool_result"].items[0]
    message = describe_wrong_item(native)
    assert "a13n_harness" in message and "harness_agui.a13n.from_a13n(item)" in message
    with pytest.raises(TypeError):
        HarnessAguiObserver().observe(native)
