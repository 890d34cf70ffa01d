# The names the top level of the package exports, imported. ``harness_agui/__init__.py`` loads this module
# the first time one of them (or an old name of ``_MOVED``) is asked for, so that ``import harness_agui``,
# and with it the ``harness-agui`` command, whose ``--version`` and ``--help`` need none of them, costs
# nothing: the core imports ag_ui and pydantic, most of a second on Python 3.13. The modules imported
# without a name are the homes of the old names, looked up in ``sys.modules`` by ``__getattr__``.

from . import source  # noqa: F401
from .core import custom, history, state  # noqa: F401
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
from .wire import codec  # noqa: F401
from .wire.codec import DecodeError
from .wire.codec import decode as decode_line
from .wire.codec import encode as encode_line

__all__ = [
    "AfterTerminalError", "AguiObservationError", "CheckpointError", "DecodeError", "EncodedEvent", "EventLog",
    "EventsNotRetainedError", "FinishedSubagentError", "ForeignRunError", "HarnessAguiError", "HarnessAguiObserver",
    "HarnessEvent", "HarnessRunResultEvent", "HarnessStreamEvent", "HistoryError", "INITIAL_STATE",
    "IncompletePrefixError", "Processor", "ProjectionOptions", "ProjectionState", "SequenceGapError",
    "SequenceOrderError", "UnknownSubagentError", "assemble_custom", "decode_line", "encode_line", "reduce",
]
