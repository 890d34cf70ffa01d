# Invalid input, live and in resume: every fault the SPEC names raises
# AguiObservationError, every wrong Python type raises TypeError, nothing
# else escapes, and the observer is left exactly as it was.

import asyncio

import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness_agui import INITIAL_STATE, AguiObservationError, HarnessAguiObserver, HarnessRunResultEvent
from harness_agui.source import BinaryContent, ContentList
from harness_agui.testing import (
    FAULTS,
    contract_breaking_processors,
    histories,
    invalid_cases,
    replay_stable_processors,
    wrong_type_items,
)


def observed(history, processor=None) -> HarnessAguiObserver:
    observer = HarnessAguiObserver(processor)
    for item in history:
        observer.observe(item)
    return observer


def assert_fresh(observer: HarnessAguiObserver) -> None:
    assert observer.is_fresh
    assert observer.state is INITIAL_STATE
    assert observer.snapshot() == ()
    assert (observer.thread_id, observer.run_id, observer.event_count) == (None, None, 0)


# Every fault is exercised on every run: each gets its own examples.
per_fault = settings(max_examples=20)


@pytest.mark.parametrize("fault", FAULTS)
@per_fault
@given(data=st.data(), processor=st.none() | replay_stable_processors())
def test_an_invalid_item_is_refused_with_the_documented_error_and_changes_nothing(fault, data, processor):
    case = data.draw(invalid_cases(faults=(fault,)), label="case")
    observer = observed(case.history, processor)
    before, snapshot = observer.state, observer.snapshot()
    with pytest.raises((AguiObservationError, TypeError)) as raised:
        observer.observe(case.item)
    assert type(raised.value) is case.error, f"{case.fault}: {raised.value!r}"
    assert observer.state is before
    assert observer.snapshot() == snapshot
    assert observer.event_count == len(snapshot)


@pytest.mark.parametrize("fault", FAULTS)
@per_fault
@given(data=st.data(), processor=st.none() | replay_stable_processors())
def test_a_resume_reaching_an_invalid_item_leaves_the_observer_fresh_for_a_retry(fault, data, processor):
    case = data.draw(invalid_cases(faults=(fault,)), label="case")
    observer = HarnessAguiObserver(processor)
    with pytest.raises((AguiObservationError, TypeError)) as raised:
        asyncio.run(observer.resume([*case.history, case.item]))
    assert type(raised.value) is case.error, f"{case.fault}: {raised.value!r}"
    assert_fresh(observer)
    asyncio.run(observer.resume(case.history))
    assert observer.snapshot() == observed(case.history, processor).snapshot()


@given(value=wrong_type_items())
def test_observing_something_that_is_not_a_source_item_raises_type_error(value):
    observer = HarnessAguiObserver()
    with pytest.raises(TypeError):
        observer.observe(value)
    assert_fresh(observer)


@pytest.mark.parametrize("history", [None, 42, "lines of a journal", b"bytes", object()])
def test_resuming_from_something_that_is_not_an_iterable_of_items_raises_type_error(history):
    observer = HarnessAguiObserver()
    with pytest.raises(TypeError):
        asyncio.run(observer.resume(history))
    assert_fresh(observer)


@pytest.mark.parametrize("processor", [42, "drop everything", {"TEXT_MESSAGE_CONTENT": None}])
def test_an_observer_refuses_a_processor_that_is_not_callable(processor):
    with pytest.raises(TypeError):
        HarnessAguiObserver(processor)


def _attrs_fields(value, path=()):
    """Every (owner, field name, path) inside a frozen source value."""
    for field in attrs.fields(type(value)):
        yield value, field.name, (*path, field.name)
        inner = getattr(value, field.name)
        if attrs.has(type(inner)):
            yield from _attrs_fields(inner, (*path, field.name))


wrong_values = st.sampled_from([b"bytes", (1, 2), {"a set"}, object(), 1j])
# The fields for which one of those is the right type: binary data is bytes, content items a tuple.
_RIGHT_TYPE = {(BinaryContent, "data"): bytes, (ContentList, "items"): tuple}


def _rebuild(item, path, value):
    if len(path) == 1:
        return attrs.evolve(item, **{path[0]: value})
    return attrs.evolve(item, **{path[0]: _rebuild(getattr(item, path[0]), path[1:], value)})


@given(history=histories(max_steps=10, large_payloads=False).filter(bool), data=st.data())
def test_source_values_refuse_a_field_of_the_wrong_python_type_with_type_error(history, data):
    item = data.draw(st.sampled_from(history))
    fields = list(_attrs_fields(item))
    owner, name, path = data.draw(st.sampled_from(fields))
    wrong = data.draw(wrong_values)
    assume(not isinstance(wrong, _RIGHT_TYPE.get((type(owner), name), ())))
    with pytest.raises(TypeError):
        _rebuild(item, path, wrong)


@given(history=histories(large_payloads=False), processor=contract_breaking_processors())
def test_a_processor_breaking_the_contract_is_refused_exactly_where_it_breaks(history, processor):
    reference = HarnessAguiObserver()
    observer = HarnessAguiObserver(processor)
    breaks_at = None
    for i, item in enumerate(history):
        expected = reference.observe(item)
        if any(e.type.value == processor.target for e in expected):
            before = observer.state
            with pytest.raises(AguiObservationError):
                observer.observe(item)
            assert observer.state is before
            breaks_at = i
            break
        assert observer.observe(item) == expected

    resumed = HarnessAguiObserver(processor)
    if breaks_at is None:
        asyncio.run(resumed.resume(history))
        assert resumed.snapshot() == reference.snapshot()
    else:
        with pytest.raises(AguiObservationError):
            asyncio.run(resumed.resume(history))
        assert_fresh(resumed)


@given(history=histories(complete=True, max_steps=10, large_payloads=False))
def test_resume_on_an_observer_that_observed_or_resumed_raises_without_reading_the_history(history):
    consumed = []

    def watched():
        for item in history:
            consumed.append(item)
            yield item

    live = observed(history[:1])
    resumed = HarnessAguiObserver()
    asyncio.run(resumed.resume(history))
    for observer in (live, resumed):
        before = observer.state
        with pytest.raises(AguiObservationError):
            asyncio.run(observer.resume(watched()))
        assert observer.state is before
    assert consumed == []


@given(history=histories(complete=True, max_steps=10, large_payloads=False))
def test_nothing_is_accepted_after_the_terminal_item(history):
    observer = observed(history)
    last = history[-1]
    assert isinstance(last, HarnessRunResultEvent) and observer.finished
    later = attrs.evolve(last, sequence=last.sequence + 1)
    before = observer.state
    with pytest.raises(AguiObservationError):
        observer.observe(later)
    assert observer.state is before


def test_importing_the_strategies_without_hypothesis_raises_a_clear_import_error(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.delitem(sys.modules, "harness_agui.testing")
    monkeypatch.delitem(sys.modules, "harness_agui.testing.strategies")
    testing = importlib.import_module("harness_agui.testing")
    assert testing.SourceBuilder is not None  # the builder needs no hypothesis
    with pytest.raises(ImportError, match="harness_agui.testing needs hypothesis"):
        testing.complete_histories  # noqa: B018
