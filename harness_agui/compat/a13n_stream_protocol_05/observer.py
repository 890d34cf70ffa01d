"""a13n-stream-protocol 0.5's observers: the 0.21 compat observers' shell over this library's reducer, projecting
in 0.5's vocabulary (``vocabulary.VOCABULARY_05``), without what 0.21 added (``retain_events``, ``export`` /
``restore``)."""

from __future__ import annotations

from ..a13n_stream_protocol._base import AguiEventProcessor, AguiObservationError
from ..a13n_stream_protocol.observer import Observer, stream_correlation
from ..a13n_stream_protocol.vocabulary import VOCABULARY_05

__all__ = ["AguiEventProcessor", "AguiObservationError", "HarnessAguiObserver", "HarnessAguiStreamObserver"]


class HarnessAguiObserver(Observer):
    """Converts and accumulates one public Harness Run as AG-UI events, in
    a13n-stream-protocol 0.5's vocabulary.

    ``observe()`` takes a13n-harness 0.5 items (or this library's source
    items); ``processor(native_item, event) -> event | None`` may drop an
    event or rewrite its one content field. Making one with another
    a13n-harness release installed raises ImportError naming both.
    """

    _vocabulary = VOCABULARY_05
    _supported = ((0, 5),)

    def __init__(self, *, processor: AguiEventProcessor | None = None) -> None:
        super().__init__(processor=processor)


class HarnessAguiStreamObserver(HarnessAguiObserver):
    """Observes a Host's root stream and its forwarded inline children in
    source order, as a13n-stream-protocol 0.5 does (see the 0.21 package's
    stream observer)."""

    _stream = True
    _check_correlation = staticmethod(stream_correlation)  # type: ignore[assignment]
