# The projection state: one immutable value per point in a Run's stream.
#
# A stream is one root Run and, when it delegates, the child Runs whose items
# the Harness forwards into it (see ``reduce``). Every Run of the stream, the
# root and each child alike, has a ``RunState``: where its history stands (a
# ``HistoryCursor``), its model request, the parts it has open, what became
# of each of its tool calls, the message ids it has given, and the ids it
# publishes under another name because another Run of the stream published
# them first. A child also has a ``SubagentState``: its link to its parent
# (name, parent Run, delegating tool call, depth), its status, the events it
# produced before it was announced, and its latest assistant text (what its
# SUBAGENT_FINISHED reports).
#
# ``ProjectionState`` holds the root's RunState, the children by run id, the
# owner of every AG-UI message id and tool call id published in the stream
# (so an id two Runs use can be renamed), how many children were announced,
# and the emitted events: a ``RecordLog`` of records, or for a live-only
# observer a ``LiveLog`` that only counts them. Nothing in the reducer reads
# the events back: whatever a rule needs is in these values.
#
# ``OpenPart``, ``RunState``, ``RunLedger`` and ``HistoryCursor`` are
# NamedTuples: named fields, and the cheapest frozen values CPython makes. A
# token rebuilds a part, its Run's cursor and its RunState, which therefore
# holds only those (and the ledger of everything else, unchanged).
# ``ProjectionState`` and ``SubagentState`` are frozen attrs classes. The
# Run-long maps of tool calls and message ids are ``idmap`` tries, so that
# the collector's share of an item stays flat over a long Run. Open parts
# are a short tuple ordered by index: a model response has a handful of parts
# open at once, and rebuilding a tuple of three is cheaper than a map update.
#
# Nothing in here is mutable. Every transition in ``reduce`` builds new values
# and leaves the old ones intact, so any earlier state can be kept, compared
# (``is`` for "nothing changed") and resumed from.

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import attrs
from pyrsistent import PMap, PVector, pmap

from . import fit
from . import vocabulary as vocabularies
from .fields import MAX_SOURCE_ID_LENGTH
from .history import INITIAL_CURSOR, HistoryCursor, advance_by_name
from .idmap import IdMap, IdSet
from .livelog import LiveLog
from .records import EventLog, Record, RecordLog

__all__ = [
    "OpenPart", "RunState", "RunLedger", "ProjectionState", "INITIAL_STATE", "INITIAL_RUN", "CallStatus", "PartKind",
    "SubagentState", "SubagentStatus", "find_part", "ProjectionOptions", "DEFAULT_OPTIONS", "MAX_EVENT_BYTES",
    "MIN_EVENT_BYTES",
    "ORDER_POLICIES", "OrderPolicy",
]

PartKind = Literal["text", "thinking", "tool_call"]
CallStatus = Literal["open", "ended", "resumed", "answered"]
SubagentStatus = Literal["pending", "running", "completed", "failed", "cut_off"]


class OpenPart(NamedTuple):
    """A part that has started and not yet ended.

    ``message_id`` is the AG-UI message id (the tool call id for tool calls);
    ``streamed`` counts the characters of content or args already emitted;
    a tool call whose name is not yet known holds its args text in
    ``pending`` and has ``started`` false; a tool call streaming its args as
    JSON objects holds their merge, as compact JSON text, in
    ``object_args_json``. For a tool call, ``part_id`` is the id the Harness
    gave the call (``message_id`` is its id in the Run's events, which differs
    when the Harness used the id before). A text or thinking part the source
    ended while a later part of its response streams (pydantic-ai ends a part
    when the next one starts, and can still stream it afterwards) is
    ``ended``: it takes deltas as before, and its END waits for the end of
    its response.
    """

    index: int  # type: ignore[assignment]  # the field hides tuple.index, which nothing calls on a part
    kind: PartKind
    message_id: str
    part_id: str | None = None
    streamed: int = 0
    started: bool = True
    tool_name: str = ""
    pending: str = ""
    object_args_json: str | None = None
    signature: str | None = None
    ended: bool = False

    def __repr__(self) -> str:
        extra = "" if self.started else f", pending={len(self.pending)} chars"
        if self.ended:
            extra += ", ended"
        return f"OpenPart({self.index} {self.kind} {self.message_id!r}, streamed={self.streamed}{extra})"


def find_part(parts: tuple[OpenPart, ...], index: int) -> OpenPart | None:
    """The part of ``parts`` at ``index``, if any (a few parts: a scan)."""
    for p in parts:
        if p.index == index:
            return p
    return None


EMPTY_MAP: PMap[Any, Any] = pmap()
"""pyrsistent's one empty map: ``m is EMPTY_MAP`` tells a map that never had an entry, without a call."""
_NO_RENAMES: PMap[str, str] = EMPTY_MAP

MAX_EVENT_BYTES = 65536
"""The default largest event, in bytes of its compact JSON (``ProjectionOptions.max_event_bytes``)."""


MIN_EVENT_BYTES = 4 * 6 * MAX_SOURCE_ID_LENGTH + 4096
"""The smallest ``max_event_bytes`` (16 KiB). Every piece an event is cut into repeats up to four ids and
names: a fragment its Thread and Run ids, its subagent Run id and its CUSTOM name, a delta its message or
call id and subagent Run id. Each has at most ``MAX_SOURCE_ID_LENGTH`` (512) characters, written in at
most six bytes a character (a control character's JSON escape), and 4 KiB more holds the fixed fields and
the piece's content; so any event of any item the source model accepts fits."""


def _max_event_bytes(inst: object, attribute: attrs.Attribute, value: object) -> None:
    if value is None:
        return
    if type(value) is not int:
        raise TypeError(f"max_event_bytes must be an int or None, not {type(value).__name__}")
    if value < MIN_EVENT_BYTES:
        raise ValueError(f"max_event_bytes must be at least {MIN_EVENT_BYTES} (MIN_EVENT_BYTES: room for the ids "
                         f"every piece of a cut event repeats), not {value}")


def _client_id(inst: object, attribute: attrs.Attribute, value: object) -> None:
    if type(value) is not str:
        raise TypeError(f"{attribute.name} must be a str or None, not {type(value).__name__}")
    if len(value) > MAX_SOURCE_ID_LENGTH:
        raise ValueError(f"{attribute.name} is {len(value)} characters long; an id may have at most "
                         f"{MAX_SOURCE_ID_LENGTH}")
    if not value.strip():
        raise ValueError(f"{attribute.name} must not be blank")


def _vocabulary(inst: object, attribute: attrs.Attribute, value: object) -> None:
    if not vocabularies.known(value):
        raise ValueError(f"vocabulary must be one of {sorted(vocabularies.NAMES)}, not {value!r}")


ORDER_POLICIES: tuple[str, ...] = ("strict", "tap", "unchecked")
"""The order policies of ``core.history``, strictest first."""

OrderPolicy = Literal["strict", "tap", "unchecked"]


class _Derived:
    """What ``ProjectionOptions`` derives from its fields, kept beside them in
    slots of their own (not attrs fields: options compare, hash and
    checkpoint by their fields alone)."""

    __slots__ = ("plain", "advance", "rules", "delta_chars")


@attrs.frozen(getstate_setstate=False, init=False)
class ProjectionOptions(_Derived):
    """How a stream is projected, fixed for an observer's life (a checkpoint
    keeps them, and resumes only under the same).

    ``show_hidden``: publish what the Harness marks for the model only (an
    input or a tool result supplement whose content metadata says
    ``display: false``, such as the trusted dynamic context); by default it
    never reaches an AG-UI event (the journal keeps it all).
    ``max_event_bytes``: the largest event, in bytes of its compact JSON; a
    larger one is cut into consecutive deltas where AG-UI allows, else
    carried in CUSTOM fragments (see ``core.fit``); None for no limit; at
    least ``MIN_EVENT_BYTES`` (16 KiB: room for the longest ids the source
    model takes, which every piece repeats), else ValueError.
    ``user_messages``: whether a user input of the root Run becomes a user
    text message (a Host whose client already holds its own user messages may
    turn it off: the input then emits nothing).
    ``client_thread_id`` and ``client_run_id``: the Thread and Run that
    RUN_STARTED and RUN_FINISHED name, when a Host's clients know the Run by
    other ids than the Harness gave it (a served a13n-harness Run is the
    request's); None: the root Run's own. Everything else (CUSTOM correlation,
    generated message ids) keeps the Harness's ids. Like a source id, each
    has at most ``MAX_SOURCE_ID_LENGTH`` characters, else ValueError.
    ``vocabulary``: the vocabulary the stream is projected in
    (``core.vocabulary``): its ``Vocabulary`` value, or its name (this
    library's own, the default, or one whose vocabulary was made: see
    ``core.vocabulary``). The field keeps the name; ``rules`` the value.
    ``order``: the order policy its items are checked against
    (``core.history``): "strict" (each Run numbered from 0 with no gap: a
    Run's own stream), "tap" (each Run's numbers increase, the root's
    terminal result comes last: a producer tap followed by the public
    terminal item) or "unchecked" (the Host keeps the order).

    Derived, for the reducer: ``plain``, whether they name this library's
    vocabulary and the strict order (the reducer's common case, which it
    takes without looking anything up); ``advance``, the order policy's
    function of ``core.history``; ``rules``, the ``core.vocabulary.Vocabulary``
    the name resolves to; ``delta_chars``, the characters a delta may
    hold and surely fit ``max_event_bytes`` (``core.fit.delta_chars``).
    """

    show_hidden: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    max_event_bytes: int | None = attrs.field(default=MAX_EVENT_BYTES, validator=_max_event_bytes)
    user_messages: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    client_thread_id: str | None = attrs.field(default=None, validator=attrs.validators.optional(_client_id))
    client_run_id: str | None = attrs.field(default=None, validator=attrs.validators.optional(_client_id))
    vocabulary: str = attrs.field(default="harness-agui", validator=_vocabulary)
    order: OrderPolicy = attrs.field(default="strict", validator=attrs.validators.in_(ORDER_POLICIES))

    if TYPE_CHECKING:
        plain: bool
        advance: Callable[[HistoryCursor, Any], HistoryCursor]
        rules: vocabularies.Vocabulary
        delta_chars: int

    def __init__(self, show_hidden: bool = False, max_event_bytes: int | None = MAX_EVENT_BYTES,
                 user_messages: bool = True, client_thread_id: str | None = None, client_run_id: str | None = None,
                 vocabulary: str | vocabularies.Vocabulary = vocabularies.DEFAULT_VOCABULARY,
                 order: OrderPolicy = "strict") -> None:
        given = vocabulary if isinstance(vocabulary, vocabularies.Vocabulary) else None
        self.__attrs_init__(show_hidden, max_event_bytes, user_messages, client_thread_id, client_run_id,
                            vocabulary if given is None else given.name, order)  # type: ignore[arg-type]
        if given is not None:
            object.__setattr__(self, "rules", given)
        elif self.rules is None and self.vocabulary != vocabularies.DEFAULT_VOCABULARY:
            vocabularies.resolve(self.vocabulary)  # raises, naming what to pass

    @classmethod
    def unresolved(cls, *fields: Any) -> ProjectionOptions:
        """Options of these field values whose vocabulary may not be made in
        this process (``rules`` None then): a checkpoint's, which its
        restorer completes (``core.observer``). Raises what the field
        validators raise."""
        options = cls.__new__(cls)
        options.__attrs_init__(*fields)
        return options

    def __attrs_post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "plain", self.vocabulary == vocabularies.DEFAULT_VOCABULARY and self.order == "strict")
        set_(self, "advance", advance_by_name(self.order))
        # None in DEFAULT_OPTIONS, made before core.reduce makes the vocabulary it names (and fills it), and for
        # a name whose vocabulary was not made (``unresolved``).
        set_(self, "rules", vocabularies.made(self.vocabulary))
        set_(self, "delta_chars", fit.delta_chars(self.max_event_bytes))

    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, a.name) for a in attrs.fields(type(self)))

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for a, value in zip(attrs.fields(type(self)), state, strict=True):
            object.__setattr__(self, a.name, value)
        self.__attrs_post_init__()


DEFAULT_OPTIONS = ProjectionOptions()


class RunLedger(NamedTuple):
    """What one Run of the stream has done so far, beside where its history
    stands and what it is streaming (``RunState``), which change on every
    token while these change a few times per model response.

    ``request_index`` is the Run's latest model request (None before any),
    ``parent_message_id`` the latest assistant text message of that request
    (the parent of its tool calls), ``retired`` the parts closed since their
    index was last used (they ended, or a new model request closed them
    before their end): a late delta or end of one is taken and kept as a
    CUSTOM event, as pydantic-ai sends such; ``calls`` what became of each
    tool call (by its id in this Run's events), ``message_ids`` the ids given
    to its text, reasoning and user messages (each unique in the Run).
    ``reused_calls`` maps a tool call id the Harness used again for a later
    call (OpenAI-compatible servers number calls per response) to the id that
    later call has in this Run's events, ``<id>:<sequence of its start>``.
    ``renamed_messages`` and ``renamed_calls`` map the message and tool call
    ids this Run uses to the ones published for it, where those differ
    (another Run of the stream published the id first).
    """

    request_index: int | None = None
    parent_message_id: str | None = None
    retired: tuple[OpenPart, ...] = ()
    calls: IdMap[CallStatus] = IdMap()
    message_ids: IdSet = IdSet()
    renamed_messages: PMap[str, str] = _NO_RENAMES
    renamed_calls: PMap[str, str] = _NO_RENAMES
    reused_calls: PMap[str, str] = _NO_RENAMES


class RunState(NamedTuple):
    """What the projection knows of one Run of the stream (the root or a
    child): ``history``, the Run's cursor; ``parts``, the parts it has open,
    in index order; ``ledger``, everything else (see RunLedger, whose fields
    read through)."""

    history: HistoryCursor = INITIAL_CURSOR
    parts: tuple[OpenPart, ...] = ()
    ledger: RunLedger = RunLedger()

    @property
    def request_index(self) -> int | None:
        return self.ledger.request_index

    @property
    def parent_message_id(self) -> str | None:
        return self.ledger.parent_message_id

    @property
    def retired(self) -> tuple[OpenPart, ...]:
        return self.ledger.retired

    @property
    def calls(self) -> IdMap[CallStatus]:
        return self.ledger.calls

    @property
    def message_ids(self) -> IdSet:
        return self.ledger.message_ids

    @property
    def renamed_messages(self) -> PMap[str, str]:
        return self.ledger.renamed_messages

    @property
    def renamed_calls(self) -> PMap[str, str]:
        return self.ledger.renamed_calls

    def call_id(self, source_id: str) -> str:
        """The id of the latest call the Harness named ``source_id``, in this Run's events."""
        reused = self.ledger.reused_calls
        return reused.get(source_id, source_id) if reused is not _NO_RENAMES else source_id

    @property
    def thread_id(self) -> str | None:
        return self.history.thread_id

    @property
    def run_id(self) -> str | None:
        return self.history.run_id

    @property
    def last_sequence(self) -> int:
        """The sequence of the Run's last item, -1 before the first."""
        return self.history.next_sequence - 1

    @property
    def finished(self) -> bool:
        return self.history.finished

    def part(self, index: int) -> OpenPart | None:
        """The open part at ``index``, if any."""
        return find_part(self.parts, index)

    @property
    def open_parts(self) -> tuple[OpenPart, ...]:
        """The parts still open, in index order."""
        return self.parts

    def __repr__(self) -> str:
        parts = ", ".join(f"{p.index}:{p.kind}" for p in self.parts) or "none"
        return (f"RunState({self.history!r}, request={self.request_index}, open parts={parts}, "
                f"calls={len(self.calls)})")


INITIAL_RUN = RunState()
"""The RunState of a Run that has no item yet."""


@attrs.frozen(repr=False, slots=False)
class SubagentState:
    """One child Run in the stream of a root Run.

    ``run`` is its RunState. ``status`` is "pending" from its first item
    until its announcement links it to its parent, then "running", and
    finally "completed", "failed" or "cut_off" (still running when its parent
    finished or the root Run ended). ``name`` is the subagent's name,
    ``parent_run_id`` the delegating Run, ``parent_tool_call_id`` the
    delegating tool call as published (renamed if its id was renamed),
    ``depth`` 1 for a child of the root Run, 2 for a grandchild, ...;
    ``order`` counts announcements in the stream. ``pending`` holds the
    records of its items before the announcement (processed when they came).
    ``last_text`` is the published id of its latest assistant text message and
    the content that message published so far.
    """

    run_id: str
    run: RunState
    status: SubagentStatus = "pending"
    name: str | None = None
    parent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    depth: int = 0
    order: int = -1
    pending: tuple[Record, ...] = ()
    last_text: tuple[str, PVector[str]] | None = None

    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed", "cut_off")

    def __repr__(self) -> str:
        link = "" if self.parent_run_id is None else f" of {self.parent_run_id!r} via {self.parent_tool_call_id!r}"
        return (f"SubagentState({self.run_id!r} {self.name or '?'} {self.status}{link}, "
                f"last_sequence={self.run.last_sequence}, open parts={len(self.run.open_parts)})")


_NO_SUBAGENTS: PMap[str, SubagentState] = EMPTY_MAP
_NO_OWNERS: IdMap[str] = IdMap()


class ProjectionState(NamedTuple):
    """The whole projection of one Run's stream up to some item.

    ``root`` is the root Run's RunState; ``subagents`` one SubagentState per
    child Run, by run id (empty for a Run that never delegated);
    ``message_owners`` and ``call_owners`` the Run that published each AG-UI
    message id and tool call id; ``announced`` how many children were
    announced; ``events`` the emitted events as records (a ``LiveLog``, which
    only counts them, for a live-only observer); ``options`` how the stream
    is projected. The root's fields read through (``history``, ``parts``,
    ``calls``, ...). A NamedTuple, like the values it holds: every item
    builds a new one (``_replace`` makes a changed copy).
    """

    root: RunState = INITIAL_RUN
    subagents: PMap[str, SubagentState] = _NO_SUBAGENTS
    message_owners: IdMap[str] = _NO_OWNERS
    call_owners: IdMap[str] = _NO_OWNERS
    announced: int = 0
    events: RecordLog | LiveLog = RecordLog()
    options: ProjectionOptions = DEFAULT_OPTIONS

    # -- the root Run ------------------------------------------------------------------------

    @property
    def history(self) -> HistoryCursor:
        return self.root.history

    @property
    def thread_id(self) -> str | None:
        """The Thread bound by the first item, else None."""
        return self.root.history.thread_id

    @property
    def run_id(self) -> str | None:
        """The Run bound by the first item, else None."""
        return self.root.history.run_id

    @property
    def last_sequence(self) -> int:
        """The sequence of the root Run's last item, -1 before the first."""
        return self.root.history.next_sequence - 1

    @property
    def finished(self) -> bool:
        """Whether the terminal item arrived."""
        return self.root.history.finished

    @property
    def request_index(self) -> int | None:
        return self.root.request_index

    @property
    def parent_message_id(self) -> str | None:
        return self.root.parent_message_id

    @property
    def parts(self) -> tuple[OpenPart, ...]:
        return self.root.parts

    @property
    def calls(self) -> IdMap[CallStatus]:
        return self.root.calls

    @property
    def message_ids(self) -> IdSet:
        return self.root.message_ids

    def part(self, index: int) -> OpenPart | None:
        """The root Run's open part at ``index``, if any."""
        return self.root.part(index)

    @property
    def open_parts(self) -> tuple[OpenPart, ...]:
        """The root Run's parts still open, in index order."""
        return self.root.open_parts

    @property
    def delegation(self) -> PMap[str, SubagentState] | None:
        """The subagent Runs of a stream that delegates; None for a Run that
        never did."""
        return self.subagents or None

    # -- the stream ----------------------------------------------------------------------------

    @property
    def position(self) -> int:
        """The position of the last item taken in the Run's stream (counted
        as the Host kit's journal counts it: from the root Run's first
        sequence, child Runs' items included; -1 before the first)."""
        return self.last_sequence + sum(sub.run.history.next_sequence for sub in self.subagents.values())

    @property
    def event_count(self) -> int:
        return len(self.events)

    def snapshot(self) -> EventLog:
        """The accumulated events as an immutable, lazily built sequence.
        Raises EventsNotRetainedError for the state of a live-only observer
        (its ``events`` keep only their number, see ``livelog``)."""
        if not isinstance(self.events, RecordLog):
            from .errors import EventsNotRetainedError
            raise EventsNotRetainedError("the state of a live-only observer keeps no events (retain_events=False)")
        return EventLog(self.events)

    def __repr__(self) -> str:
        if self.run_id is None:
            return "ProjectionState(fresh)"
        status = "finished" if self.finished else "live"
        parts = ", ".join(f"{p.index}:{p.kind}" for p in self.open_parts) or "none"
        subagents = f", subagents={len(self.subagents)}" if self.subagents else ""
        return (
            f"ProjectionState(run={self.run_id!r} {status}, last_sequence={self.last_sequence}, "
            f"request={self.request_index}, open parts={parts}, calls={len(self.calls)}{subagents}, "
            f"events={len(self.events)})"
        )


INITIAL_STATE = ProjectionState()
"""The state of an observer that has seen nothing."""
