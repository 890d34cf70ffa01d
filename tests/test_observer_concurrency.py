"""The observer refuses a state-changing call that overlaps another one.

The Host must serialize observe() and resume(); these tests break that rule on
purpose (two threads, a processor that calls back into its own observer) and
check that the library notices, refuses the late call with
AguiObservationError and keeps the projection whole.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections import Counter

import pytest

from harness_agui import AguiObservationError, HarnessAguiObserver
from harness_agui.testing import SourceBuilder


def _long_run(items: int) -> list:
    b = SourceBuilder("thread-c", "run-c").user("go").request()
    b.text(0, ["x"] * (items - 6))
    b.completed("done")
    return b.items


def _busy(error: AguiObservationError) -> bool:
    return "in progress" in str(error)


def test_two_threads_hammering_one_observer_accept_every_item_exactly_once() -> None:
    items = _long_run(10_000)
    observer = HarnessAguiObserver()
    accepted: Counter[int] = Counter()
    refused: Counter[int] = Counter()
    events_of: dict[int, tuple] = {}
    lock = threading.Lock()
    start = threading.Barrier(2)

    def worker() -> None:
        start.wait()
        for item in items:
            while True:
                try:
                    events = observer.observe(item)
                except AguiObservationError as e:
                    if _busy(e):
                        continue  # the other thread holds the observer: try this item again
                    with lock:
                        refused[item.sequence] += 1
                    break
                with lock:
                    accepted[item.sequence] += 1
                    events_of[item.sequence] = events
                break

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)

    assert all(n == 1 for n in accepted.values())
    assert sorted(accepted) == [item.sequence for item in items]
    assert all(n == 1 for n in refused.values())  # the other thread saw each one as a repeat

    serial = HarnessAguiObserver()
    expected = [serial.observe(item) for item in items]
    assert observer.snapshot() == serial.snapshot()
    assert [events_of[item.sequence] for item in items] == expected


def test_a_processor_that_observes_on_its_own_observer_is_refused_and_nothing_is_kept_twice() -> None:
    items = SourceBuilder().user("hi").request().text(0, ["a", "b"]).completed("ab").items
    inner_errors: list[AguiObservationError] = []

    def reentrant(item, event):  # type: ignore[no-untyped-def]
        if item.sequence == 3:
            try:
                observer.observe(items[4])
            except AguiObservationError as e:
                inner_errors.append(e)
        return event

    observer = HarnessAguiObserver(processor=reentrant)
    for item in items:
        observer.observe(item)

    assert len(inner_errors) == 1 and _busy(inner_errors[0])
    serial = HarnessAguiObserver()
    for item in items:
        serial.observe(item)
    assert observer.snapshot() == serial.snapshot()


def test_a_reentrant_call_that_propagates_fails_the_outer_call_atomically() -> None:
    items = SourceBuilder().user("hi").request().text(0, ["a"]).items

    def reentrant(item, event):  # type: ignore[no-untyped-def]
        observer.observe(items[-1])
        return event

    observer = HarnessAguiObserver(processor=reentrant)
    with pytest.raises(AguiObservationError, match="in progress"):
        observer.observe(items[0])
    assert observer.is_fresh


def test_observe_during_a_resume_is_refused_and_the_resume_still_commits() -> None:
    items = SourceBuilder().user("hi").request().text(0, ["a", "b"]).completed("ab").items
    observer = HarnessAguiObserver()
    refusals: list[AguiObservationError] = []

    async def history():  # type: ignore[no-untyped-def]
        for item in items:
            try:
                observer.observe(item)
            except AguiObservationError as e:
                refusals.append(e)
            yield item

    asyncio.run(observer.resume(history()))
    assert len(refusals) == len(items)
    assert all("resume() is in progress" in str(e) for e in refusals)
    serial = HarnessAguiObserver()
    for item in items:
        serial.observe(item)
    assert observer.snapshot() == serial.snapshot()
