"""harness_agui: project a Harness agent Run onto AG-UI events.

The pure core is ``reduce(state, item) -> (state, events)`` over immutable
values; ``HarnessAguiObserver`` is the thin shell a Host embeds. See the
README for a quick start.
"""

import warnings as _warnings
from typing import Any as _Any

from .core.custom import assemble_custom
from .core.encode import EncodedEvent
from .core.errors import (
    AfterTerminalError,
    AguiObservationError,
    CheckpointError,
    EventsNotRetainedError,
    FinishedSubagentError,
    ForeignRunError,
    HarnessAguiError,
    HistoryError,
    IncompletePrefixError,
    SequenceGapError,
    SequenceOrderError,
    UnknownSubagentError,
)
from .core.observer import HarnessAguiObserver
from .core.records import EventLog
from .core.reduce import Processor, reduce
from .core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from .core.state import INITIAL_STATE, ProjectionOptions, ProjectionState
from .wire.codec import DecodeError
from .wire.codec import decode as decode_line
from .wire.codec import encode as encode_line

__version__ = "0.1.0"

__all__ = [
    # the shell, and the pure core under it
    "HarnessAguiObserver",
    "ProjectionOptions",
    "reduce",
    "ProjectionState",
    "INITIAL_STATE",
    "Processor",
    # what it gives
    "EventLog",
    "EncodedEvent",
    "assemble_custom",
    # the items it takes (every other source class: harness_agui.source)
    "HarnessEvent",
    "HarnessRunResultEvent",
    "HarnessStreamEvent",
    # a source item as one wire line, and back
    "encode_line",
    "decode_line",
    "DecodeError",
    # the errors
    "HarnessAguiError",
    "AguiObservationError",
    "HistoryError",
    "ForeignRunError",
    "SequenceOrderError",
    "SequenceGapError",
    "AfterTerminalError",
    "IncompletePrefixError",
    "UnknownSubagentError",
    "FinishedSubagentError",
    "CheckpointError",
    "EventsNotRetainedError",
]

# Names this package exported before 0.2, kept for one release: each import warns and says where it lives.
_MOVED = {
    "advance": "harness_agui.core.reduce",
    "OpenPart": "harness_agui.core.state",
    "SubagentState": "harness_agui.core.state",
    "HistoryCursor": "harness_agui.core.history",
    "StreamCursor": "harness_agui.core.history",
    "advance_stream": "harness_agui.core.history",
    "is_fragment": "harness_agui.core.custom",
    "INPUT_CHUNK_CHARS": "harness_agui.core.reduce",
    "CUSTOM_MAX_CHARS": "harness_agui.core.custom",
    "encode": "harness_agui.wire.codec",
    "decode": "harness_agui.wire.codec",
    "Migration": "harness_agui.wire.codec",
}
_SOURCE = frozenset({
    "PartStartEvent", "PartDeltaEvent", "PartEndEvent", "TextPart", "ThinkingPart", "ToolCallPart",
    "TextPartDelta", "ThinkingPartDelta", "ToolCallPartDelta", "ToolResultEvent", "InputEvent", "ExtensionEvent",
    "ObservationEvent", "RunResult", "Usage", "Failure", "Deferred", "DeferredToolCall", "BinaryContent",
    "BuiltinToolReturnPart", "CapabilityEvent", "ContentList", "DeferredToolRequestsEvent", "EnqueuedMessagesEvent",
    "FilePart", "FinalResultEvent", "MediaContent", "MessageHistory", "RetryInfo", "ToolCallEvent", "ToolContent",
    "UnknownDelta", "UnknownEvent", "UnknownPart",
})


def __getattr__(name: str) -> _Any:
    import importlib

    where = "harness_agui.source" if name in _SOURCE else _MOVED.get(name)
    if where is None:
        raise AttributeError(f"module 'harness_agui' has no attribute {name!r}")
    _warnings.warn(f"harness_agui.{name} moved to {where}.{name}; the old name goes in the next release",
                   DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(where), name)


def __dir__() -> list[str]:
    return sorted(__all__)
