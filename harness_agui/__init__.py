"""harness_agui: project a Harness agent Run onto AG-UI events.

The pure core is ``reduce(state, item) -> (state, events)`` over immutable
values; ``HarnessAguiObserver`` is the thin shell a Host embeds. See the
README for a quick start.
"""

import sys as _sys
import warnings as _warnings
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if _TYPE_CHECKING:  # at run time, imported on first use by __getattr__ (below)
    from ._exports import (
        INITIAL_STATE,
        AfterTerminalError,
        AguiObservationError,
        CheckpointError,
        DecodeError,
        EncodedEvent,
        EventLog,
        EventsNotRetainedError,
        FinishedSubagentError,
        ForeignRunError,
        HarnessAguiError,
        HarnessAguiObserver,
        HarnessEvent,
        HarnessRunResultEvent,
        HarnessStreamEvent,
        HistoryError,
        IncompletePrefixError,
        Processor,
        ProjectionOptions,
        ProjectionState,
        SequenceGapError,
        SequenceOrderError,
        UnknownSubagentError,
        assemble_custom,
        decode_line,
        encode_line,
        reduce,
    )

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
_MOVED: dict[str, str] = {
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


# The modules importing the exported names makes attributes of the package, as ``import harness_agui`` did
# before the names were loaded on first use.
_LOADED_MODULES = frozenset({"core", "source", "wire"})


def __getattr__(name: str) -> _Any:
    if name not in __all__ and name not in _SOURCE and name not in _MOVED and name not in _LOADED_MODULES:
        raise AttributeError(f"module 'harness_agui' has no attribute {name!r}")
    from . import _exports

    if name in __all__:
        value = getattr(_exports, name)
        globals()[name] = value  # asked once: the next lookup finds it without calling this
        return value
    if name in _LOADED_MODULES:
        if name not in globals():  # asked while _exports is importing it (``from . import source``)
            raise AttributeError(f"module 'harness_agui' has no attribute {name!r}")
        return globals()[name]
    home = "harness_agui.source" if name in _SOURCE else _MOVED[name]
    _warnings.warn(f"harness_agui.{name} moved to {home}.{name}; the old name goes in the next release",
                   DeprecationWarning, stacklevel=2)
    return getattr(_sys.modules[home], name)


def __dir__() -> list[str]:
    return sorted(__all__)
