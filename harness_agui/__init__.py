"""harness_agui: project a Harness agent Run onto AG-UI events.

The pure core is ``reduce(state, item) -> (state, events)`` over immutable
values; ``HarnessAguiObserver`` is the thin shell a Host embeds. See the
README for a quick start.
"""

from .core.custom import assemble_custom, is_fragment
from .core.errors import (
    AfterTerminalError,
    AguiObservationError,
    ForeignRunError,
    HarnessAguiError,
    HistoryError,
    IncompletePrefixError,
    SequenceGapError,
    SequenceOrderError,
)
from .core.history import HistoryCursor
from .core.observer import HarnessAguiObserver
from .core.records import EventLog
from .core.reduce import CUSTOM_MAX_CHARS, INPUT_CHUNK_CHARS, Processor, advance, reduce
from .core.source import (
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    Failure,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    ObservationEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
    Usage,
)
from .core.state import INITIAL_STATE, OpenPart, ProjectionState
from .wire.codec import DecodeError, Migration, decode, encode

__version__ = "0.1.0"

__all__ = [
    "HarnessAguiObserver",
    "AguiObservationError",
    "HarnessAguiError",
    "HistoryError",
    "ForeignRunError",
    "SequenceOrderError",
    "SequenceGapError",
    "AfterTerminalError",
    "IncompletePrefixError",
    "HistoryCursor",
    "reduce",
    "advance",
    "Processor",
    "ProjectionState",
    "OpenPart",
    "INITIAL_STATE",
    "EventLog",
    "assemble_custom",
    "is_fragment",
    "INPUT_CHUNK_CHARS",
    "CUSTOM_MAX_CHARS",
    "encode",
    "decode",
    "DecodeError",
    "Migration",
    "HarnessEvent",
    "HarnessRunResultEvent",
    "HarnessStreamEvent",
    "PartStartEvent",
    "PartDeltaEvent",
    "PartEndEvent",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "TextPartDelta",
    "ThinkingPartDelta",
    "ToolCallPartDelta",
    "ToolResultEvent",
    "InputEvent",
    "ExtensionEvent",
    "ObservationEvent",
    "RunResult",
    "Usage",
    "Failure",
    "Deferred",
    "DeferredToolCall",
]
