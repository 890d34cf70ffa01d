"""Generated functions (frame encoders, source builders, wire writers) show their lines in tracebacks and to
``inspect``, as any module's do (``core._generated``)."""

from __future__ import annotations

import inspect
import traceback
from types import SimpleNamespace

import pytest

from harness_agui.core import encode
from harness_agui.core._fast_source import builder
from harness_agui.core.source import TextPart
from harness_agui.wire import codec


def generated() -> list[object]:
    functions = [f for f in encode._ENCODERS.values() if f is not encode._no_frame]
    functions += list(codec._WRITERS.values()) + list(codec._LINES.values()) + [builder(TextPart)]
    assert len(functions) > 10
    return functions


@pytest.mark.parametrize("function", generated(), ids=lambda f: f.__code__.co_filename)  # type: ignore[attr-defined]
def test_a_generated_function_has_its_source_and_a_name_of_its_own(function: object) -> None:
    filename = function.__code__.co_filename  # type: ignore[attr-defined]
    assert filename.startswith("<harness_agui generated: ")
    assert inspect.getsource(function).startswith("def ")  # type: ignore[arg-type]


def test_a_traceback_through_a_generated_writer_shows_the_line_that_failed() -> None:
    write = next(iter(codec._WRITERS.values()))
    with pytest.raises(AttributeError) as caught:
        write(SimpleNamespace())  # no fields at all: the first read fails
    text = "".join(traceback.format_exception(caught.value))
    assert "<harness_agui generated: writer " in text
    assert "= value." in text  # the generated line itself, not only its file name
