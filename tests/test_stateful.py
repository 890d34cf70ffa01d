# One observer driven through random interleavings of observe, resume
# (successful, failing and cancelled), snapshot and property reads, against
# a simple model: the Run's items, how many of them the projection holds,
# and whether the observer is still fresh. The oracle for "what the
# projection holds" is the per-item output of one uninterrupted live
# observer. Every SPEC section 5 rule is checked either by the rule that
# exercises it or by the invariant after every step.

import asyncio
from typing import Any

import attrs
import pytest
from ag_ui.core import BaseEvent
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from harness_agui import INITIAL_STATE, AguiObservationError, HarnessAguiObserver, HarnessEvent
from harness_agui.source import ObservationEvent
from harness_agui.testing import complete_histories, replay_stable_processors, wrong_type_items
from harness_agui.wire.agui import agui_to_json


class InjectedFailure(Exception):
    """Raised on purpose by a history or the processor."""


@attrs.define
class Switchable:
    """The observer's processor: ``inner`` (or pass-through), except that
    when armed with n it raises on its n-th call and disarms."""

    inner: Any
    armed: int | None = None

    def __call__(self, item: Any, event: BaseEvent) -> BaseEvent | None:
        if self.armed is not None:
            self.armed -= 1
            if self.armed == 0:
                self.armed = None
                raise InjectedFailure("processor")
        return event if self.inner is None else self.inner(item, event)


async def _yield_then_fail(items, fail: bool):
    for item in items:
        yield item
    if fail:
        raise InjectedFailure("history")


class ObserverMachine(RuleBasedStateMachine):
    @initialize(history=complete_histories(max_steps=14, large_payloads=False),
                processor=st.none() | replay_stable_processors())
    def start(self, history, processor):
        self.history = history
        self.switch = Switchable(processor)
        self.observer = HarnessAguiObserver(self.switch)
        reference = HarnessAguiObserver(processor)
        self.outputs = [reference.observe(item) for item in history]
        self.position = 0  # items held by the projection
        self.fresh = True

    # -- the model --------------------------------------------------------------------

    def expected(self) -> list[BaseEvent]:
        return [e for out in self.outputs[:self.position] for e in out]

    def assert_unchanged(self, state) -> None:
        assert self.observer.state is state

    def later_item(self, **changes: Any) -> HarnessEvent:
        last = self.history[self.position - 1]
        fields = {"thread_id": last.thread_id, "run_id": last.run_id, "sequence": last.sequence + 1,
                  "occurred_at": last.occurred_at, "event": ObservationEvent(name="late"), **changes}
        return HarnessEvent(**fields)

    # -- observe ------------------------------------------------------------------------

    @precondition(lambda self: self.position < len(self.history))
    @rule()
    def observe_next(self):
        out = self.observer.observe(self.history[self.position])
        assert type(out) is tuple
        assert out == self.outputs[self.position]
        for event in out:  # returned events are detached
            event.timestamp = 0
        self.position += 1
        self.fresh = False

    @precondition(lambda self: self.position < len(self.history))
    @rule(calls=st.integers(1, 3))
    def observe_with_a_failing_processor(self, calls):
        before = self.observer.state
        self.switch.armed = calls
        try:
            out = self.observer.observe(self.history[self.position])
        except InjectedFailure:
            self.assert_unchanged(before)
            return
        finally:
            self.switch.armed = None
        assert out == self.outputs[self.position]  # the processor was called fewer times than armed
        self.position += 1
        self.fresh = False

    @precondition(lambda self: self.position > 0)
    @rule(data=st.data())
    def observe_an_item_already_held(self, data):
        before = self.observer.state
        item = self.history[data.draw(st.integers(0, self.position - 1))]
        with pytest.raises(AguiObservationError):
            self.observer.observe(item)
        self.assert_unchanged(before)

    @precondition(lambda self: self.position > 0)
    @rule(which=st.sampled_from(["thread_id", "run_id"]))
    def observe_an_item_of_another_run(self, which):
        before = self.observer.state
        item = self.later_item(**{which: getattr(self.history[0], which) + "-other"})
        with pytest.raises(AguiObservationError):
            self.observer.observe(item)
        self.assert_unchanged(before)

    @precondition(lambda self: self.position == len(self.history))
    @rule(second_result=st.booleans())
    def observe_after_the_terminal_item(self, second_result):
        before = self.observer.state
        last = self.history[-1]
        item = attrs.evolve(last, sequence=last.sequence + 1) if second_result else self.later_item()
        with pytest.raises(AguiObservationError):
            self.observer.observe(item)
        self.assert_unchanged(before)

    @rule(value=wrong_type_items())
    def observe_a_wrong_type(self, value):
        before = self.observer.state
        with pytest.raises(TypeError):
            self.observer.observe(value)
        self.assert_unchanged(before)

    # -- resume ---------------------------------------------------------------------------

    @precondition(lambda self: not self.fresh)
    @rule()
    def restart_with_a_fresh_observer(self):
        # The Host's process restarts: the projection is gone, a new
        # observer will resume from the journal.
        self.observer = HarnessAguiObserver(self.switch)
        self.position = 0
        self.fresh = True

    @precondition(lambda self: self.fresh)
    @rule(data=st.data(), plain=st.booleans())
    def resume_a_prefix(self, data, plain):
        k = data.draw(st.integers(0, len(self.history)), label="prefix length")
        prefix = self.history[:k]
        history = prefix if plain else _yield_then_fail(prefix, fail=False)
        assert asyncio.run(self.observer.resume(history)) is None
        self.position = k
        self.fresh = False

    @precondition(lambda self: not self.fresh)
    @rule()
    def resume_a_used_observer(self):
        before = self.observer.state
        with pytest.raises(AguiObservationError):
            asyncio.run(self.observer.resume(self.history))
        self.assert_unchanged(before)

    @precondition(lambda self: self.fresh)
    @rule(data=st.data())
    def resume_from_a_history_that_fails(self, data):
        k = data.draw(st.integers(0, len(self.history)), label="items before the failure")
        with pytest.raises(InjectedFailure):
            asyncio.run(self.observer.resume(_yield_then_fail(self.history[:k], fail=True)))

    @precondition(lambda self: self.fresh and len(self.history) > 1)
    @rule(data=st.data())
    def resume_from_a_history_with_a_repeated_item(self, data):
        k = data.draw(st.integers(1, len(self.history) - 1), label="prefix length")
        j = data.draw(st.integers(0, k - 1), label="repeated item")
        with pytest.raises(AguiObservationError):
            asyncio.run(self.observer.resume([*self.history[:k], self.history[j]]))

    @precondition(lambda self: self.fresh)
    @rule(data=st.data(), calls=st.integers(1, 20))
    def resume_with_a_failing_processor(self, data, calls):
        k = data.draw(st.integers(0, len(self.history)), label="prefix length")
        self.switch.armed = calls
        try:
            asyncio.run(self.observer.resume(self.history[:k]))
        except InjectedFailure:
            return
        finally:
            self.switch.armed = None
        self.position = k  # the prefix called the processor fewer times than armed
        self.fresh = False

    @precondition(lambda self: self.fresh)
    @rule(data=st.data())
    def resume_cancelled_while_waiting_for_an_item(self, data):
        k = data.draw(st.integers(0, len(self.history) - 1), label="items before the wait")
        observer, history = self.observer, self.history

        async def scenario() -> None:
            reached, never = asyncio.Event(), asyncio.Event()

            async def stalling():
                for item in history[:k]:
                    yield item
                reached.set()
                await never.wait()
                yield history[k]  # pragma: no cover - cancelled before

            task = asyncio.create_task(observer.resume(stalling()))
            await reached.wait()
            # While the resume waits, reads show the fresh observer and
            # state-changing calls are refused.
            self.check_fresh()
            with pytest.raises(AguiObservationError):
                observer.observe(history[0])
            with pytest.raises(AguiObservationError):
                await observer.resume(history)
            self.check_fresh()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(scenario())

    # -- reads --------------------------------------------------------------------------

    @rule(start=st.none() | st.integers(-40, 40), stop=st.none() | st.integers(-40, 40))
    def read_a_snapshot_slice(self, start, stop):
        assert self.observer.snapshot(start, stop) == tuple(self.expected()[start:stop])

    @rule(start=st.none() | st.integers(-5, 5))
    def mutate_snapshotted_events(self, start):
        for event in self.observer.snapshot(start):
            event.timestamp = -1
            if isinstance(getattr(event, "delta", None), str):
                event.delta = "mutated"

    def check_fresh(self) -> None:
        assert self.observer.is_fresh
        assert self.observer.state is INITIAL_STATE
        assert self.observer.snapshot() == ()
        assert (self.observer.thread_id, self.observer.run_id, self.observer.event_count) == (None, None, 0)
        assert not self.observer.finished

    @invariant()
    def matches_the_model(self):
        if not hasattr(self, "observer"):
            return
        expected = self.expected()
        snapshot = self.observer.snapshot()
        assert len(snapshot) == self.observer.event_count == len(expected)
        assert [agui_to_json(e) for e in snapshot] == [agui_to_json(e) for e in expected]
        assert self.observer.is_fresh == self.fresh
        if self.fresh:
            self.check_fresh()
        bound = self.history[0] if self.position else None
        assert self.observer.thread_id == (bound.thread_id if bound else None)
        assert self.observer.run_id == (bound.run_id if bound else None)
        assert self.observer.finished == (self.position == len(self.history))


ObserverMachine.TestCase.settings = settings(ObserverMachine.TestCase.settings, stateful_step_count=40)
test_observer_follows_the_model_through_any_interleaving = ObserverMachine.TestCase
