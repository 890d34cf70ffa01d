"""a13n-stream-protocol 0.5's fragments module: its CUSTOM event frames and their assembler, which are 0.21's
(0.21 added only the assembler's ``export`` / ``restore``)."""

from __future__ import annotations

from ..a13n_stream_protocol.fragments import FRAGMENT_EVENT_NAME, CustomEventAssembler, fragment_custom_event

__all__ = ["FRAGMENT_EVENT_NAME", "CustomEventAssembler", "fragment_custom_event"]
