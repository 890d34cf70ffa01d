"""A projection's options hold its vocabulary value: a caller may pass the ``Vocabulary`` itself, and a
checkpoint keeps only its name, so restoring one whose vocabulary this process has not made needs it passed."""

from __future__ import annotations

import attrs
import pytest

from harness_agui import HarnessAguiObserver
from harness_agui.core import vocabulary
from harness_agui.core.errors import CheckpointError
from harness_agui.core.reduce import DEFAULT
from harness_agui.core.state import ProjectionOptions
from harness_agui.testing import SourceBuilder

NAME = "a13n-stream-protocol/0.5"
# This library's rules under another known name, never registered: a vocabulary the process has not made.
UNMADE = attrs.evolve(DEFAULT, name=NAME)


def test_options_hold_the_vocabulary_value_they_are_given_and_keep_its_name() -> None:
    options = ProjectionOptions(vocabulary=UNMADE, order="unchecked")
    assert options.rules is UNMADE and options.vocabulary == NAME
    assert options == ProjectionOptions.unresolved(*attrs.astuple(options, recurse=False))


def test_a_name_whose_vocabulary_was_not_made_is_refused_with_what_to_pass() -> None:
    if vocabulary.made(NAME) is not None:
        pytest.skip("this process made the a13n-stream-protocol 0.5 vocabulary")
    with pytest.raises(ValueError, match="pass its Vocabulary value"):
        ProjectionOptions(vocabulary=NAME)


def test_a_checkpoint_in_a_vocabulary_not_made_restores_only_with_the_vocabulary_passed() -> None:
    if vocabulary.made(NAME) is not None:
        pytest.skip("this process made the a13n-stream-protocol 0.5 vocabulary")
    items = SourceBuilder().user("go").request().text(0, ["a", "b"]).completed("ab").items
    observer = HarnessAguiObserver(vocabulary=UNMADE)
    for item in items[:3]:
        observer.observe(item)
    data = observer.checkpoint()
    with pytest.raises(CheckpointError, match="pass options=") as refused:
        HarnessAguiObserver.restore(data)
    assert refused.value.problem == "options"
    with pytest.raises(CheckpointError) as other:
        HarnessAguiObserver.restore(data, options=ProjectionOptions())
    assert other.value.problem == "options"
    restored = HarnessAguiObserver.restore(data, options=ProjectionOptions(vocabulary=UNMADE))
    assert restored.state.options.rules is UNMADE
    assert [restored.observe(item) for item in items[3:]] == [observer.observe(item) for item in items[3:]]
