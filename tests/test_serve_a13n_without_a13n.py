"""harness_agui.a13n.runner imports without a13n-harness; using it says how to get it."""

from __future__ import annotations

import sys

import pytest

from harness_agui.a13n import runner as serve_a13n


def test_the_runner_names_the_extra_it_needs_when_a13n_harness_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "a13n_harness", None)  # an import of it now fails, installed or not
    serve_a13n._lib.cache_clear()
    try:
        agent = type("Agent", (), {"stream": lambda self: None, "definition": None})()
        with pytest.raises(ImportError, match=r"pip install 'harness-agui\[a13n\]'"):
            serve_a13n.A13nRunner(agent)
    finally:
        serve_a13n._lib.cache_clear()


def test_the_harness_thread_of_a_wire_thread_needs_no_a13n_harness() -> None:
    assert serve_a13n.source_thread_id("support_chat") == "support_chat"
    assert serve_a13n.source_thread_id("6f1c6a40-5a43-4c58-9a3c-0d1b2f3e4a5b") == (
        "thread-c4f7a25b62ae0423afc2b6ca96c5e00a")
