# Vocabularies: what a projection says, apart from how it keeps track.
#
# The reducer (``core.reduce``) is one step for every Run of a stream. What it
# does for every vocabulary alike is the machinery: routing an item to its Run
# (the root or a child), the Run's order (``core.history``, under the
# stream's order policy), the delegation lifecycle (a child held, announced,
# ended, cut off), publishing ids, the processor applied once per event,
# appending to the log, atomicity, checkpoints and resume. What a vocabulary
# decides is the rest, as a value the machinery consults:
#
#   - ``convert``: the rulebook of one Run, for every item but the terminal
#     (parts, tokens, tool calls and results, inputs, notices): the records
#     it emits and the Run's state after it;
#   - ``close`` and ``terminal``: what ends a Run's open parts (at a
#     delegation end, a cut-off) and what its terminal item emits;
#   - ``announces_run``: where RUN_STARTED goes, and ``run_started`` the
#     record: "first_item" has the machinery put it before the events of the
#     root Run's first item, whatever that is; "run_started" leaves it to the
#     rulebook, which makes it of the root's lifecycle ``run_started`` notice,
#     and the machinery gives a child's such notice no event at all;
#   - the subagent lifecycle as events (``subagent_started``,
#     ``subagent_finished``, ``subagent_failed``), and its policy: whether a
#     child's events before its announcement wait for it (``holds_children``)
#     and whether a delegation end or the root's terminal ends the children
#     still running below (``closes_children``);
#   - ``renames_ids``: whether an id two Runs of the stream publish is
#     published under another name by the later one;
#   - ``process``: the processor contract (which fields a processor may
#     change, what it may answer, the errors), applied by the machinery
#     once per event;
#   - ``frame``: how the processed events of an item are framed for
#     transport, or None.
#
# The order policy (``ProjectionOptions.order``) is not a vocabulary's: every
# vocabulary runs under every policy, and the policy says what the machinery
# refuses (``core.reduce``'s module comment).
#
# A state names its vocabulary (``ProjectionOptions.vocabulary``), so a
# checkpoint and a replay keep it, and its options hold the value itself
# (``ProjectionOptions.rules``): a caller passes the ``Vocabulary``
# (``ProjectionOptions(vocabulary=VOCABULARY)``, as the compat observers do),
# or a name. A name resolves here, among a fixed set of exact names, to the
# vocabulary made under it; nothing here imports anything, so no checkpoint
# and no caller's string ever makes this library import code: a name whose
# vocabulary was not made yet is refused. ``DEFAULT_VOCABULARY`` is this
# library's own vocabulary (``core.reduce`` builds it); a vocabulary made
# elsewhere (the a13n-stream-protocol ones, in ``harness_agui.compat``)
# registers itself where it is made, so that its name resolves too.

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import attrs

if TYPE_CHECKING:
    from .history import HistoryCursor
    from .records import Record
    from .source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent

RunState = Any
"""A Run's state, ``core.state.RunState`` (not imported: core.state imports this module)."""
ProjectionOptions = Any
"""``core.state.ProjectionOptions`` (not imported, likewise)."""

__all__ = ["Vocabulary", "DEFAULT_VOCABULARY", "NAMES", "register", "resolve", "made", "known"]

DEFAULT_VOCABULARY = "harness-agui"
"""The name of this library's own vocabulary (SPEC section 4)."""

NAMES: frozenset[str] = frozenset((DEFAULT_VOCABULARY, "a13n-stream-protocol/0.21", "a13n-stream-protocol/0.5"))
"""Every vocabulary name a state may hold."""

Convert = Callable[[RunState, "HistoryCursor", "HarnessEvent", int, "list[Record]", ProjectionOptions], RunState]
Close = Callable[[RunState, int, "list[Record]"], RunState]
Terminal = Callable[[RunState, "HarnessRunResultEvent", int, "list[Record]"], RunState]
Process = Callable[[Callable[[Any, Any], Any], "HarnessStreamEvent", "list[Record]"], "list[Record]"]
Frame = Callable[["HarnessStreamEvent", "list[Record]", int], "list[Record]"]
"""``frame(item, records, first)``: an item's processed records with the large ones framed, ``first`` the
place of ``records[0]`` among the item's processed records (frames are named by it)."""


@attrs.frozen(eq=False, repr=False)
class Vocabulary:
    """One vocabulary: the decisions of the module comment, as functions
    and flags. Compared by identity (one value per name)."""

    name: str
    convert: Convert
    close: Close
    terminal: Terminal
    run_started: Callable[[int, str, str], Record]
    announces_run: Literal["first_item", "run_started"]
    subagent_started: Callable[[int, str, str, str | None, str | None], Record]
    subagent_finished: Callable[[int, str, str | None], Record]
    subagent_failed: Callable[[int, str, str | None, str], Record]
    holds_children: bool
    closes_children: bool
    renames_ids: bool
    process: Process
    frame: Frame | None = None

    def __repr__(self) -> str:
        return f"<Vocabulary {self.name}>"


_MADE: dict[str, Vocabulary] = {}  # by name: the vocabularies made so far (``register``)


def register(vocabulary: Vocabulary) -> None:
    """Make ``vocabulary`` the one its name resolves to. Raises ValueError
    for a name outside ``NAMES`` or one already registered."""
    if vocabulary.name not in NAMES:
        raise ValueError(f"{vocabulary.name!r} is not a vocabulary name this library knows")
    if vocabulary.name in _MADE:
        raise ValueError(f"vocabulary {vocabulary.name!r} is registered already")
    _MADE[vocabulary.name] = vocabulary


def known(name: object) -> bool:
    """Whether ``name`` is a vocabulary name (registered or not)."""
    return type(name) is str and name in NAMES


def made(name: str) -> Vocabulary | None:
    """The vocabulary made as ``name``, or None."""
    return _MADE.get(name)


def resolve(name: str) -> Vocabulary:
    """The vocabulary made as ``name``. Raises ValueError for a name outside
    ``NAMES``, and for one whose vocabulary was not made yet (pass the
    ``Vocabulary`` itself, or import the module that makes it)."""
    found = _MADE.get(name)
    if found is not None:
        return found
    if not known(name):
        raise ValueError(f"unknown vocabulary {name!r} (known: {', '.join(sorted(NAMES))})")
    raise ValueError(f"vocabulary {name!r} is not made yet: pass its Vocabulary value (ProjectionOptions("
                     "vocabulary=...)), or import the module that makes it first")
