# Jupyter support: ``show`` and the HTML display of the core's values.
#
# The core classes carry no ``_repr_html_``, because the core never imports
# the debug layer. Importing ``harness_agui.debug`` calls
# ``register_formatters``, which tells a running IPython shell (if there is
# one: IPython already imported and ``get_ipython()`` not None) to draw a
# ProjectionState or a HarnessAguiObserver with ``views.state_html`` and
# ``views.observer_html``. ``%load_ext harness_agui.debug`` does the same in
# a shell started after the import. Outside IPython nothing happens and
# IPython is never imported. Steps and diagnoses (``replay``) have their own
# ``_repr_html_``: ``replay`` sits above ``views`` and may import it.

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from ag_ui.core import BaseEvent

from ..core.observer import HarnessAguiObserver
from ..core.state import ProjectionState
from .replay import Diagnosis, Step
from .views import (
    View,
    conversation_html,
    conversation_text,
    diagnosis_html,
    diagnosis_text,
    observer_html,
    observer_text,
    state_html,
    state_text,
    step_html,
    step_text,
)

__all__ = ["show", "register_formatters", "load_ipython_extension"]


def show(obj: Any) -> View:
    """A View of a ProjectionState, an observer, a Step, a Diagnosis, or
    an iterable of AG-UI events (shown as a conversation). Raises TypeError
    for anything else."""
    if isinstance(obj, ProjectionState):
        return View(state_text(obj), state_html(obj))
    if isinstance(obj, HarnessAguiObserver):
        return View(observer_text(obj), observer_html(obj))
    if isinstance(obj, Step):
        return View(step_text(obj), step_html(obj))
    if isinstance(obj, Diagnosis):
        return View(diagnosis_text(obj), diagnosis_html(obj))
    if isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        events = list(obj)
        if all(isinstance(e, BaseEvent) for e in events):
            return View(conversation_text(events), conversation_html(events))
    raise TypeError(f"show() takes a state, an observer, a step, a diagnosis or AG-UI events, "
                    f"not {type(obj).__name__}")


def register_formatters(ipython: Any = None) -> bool:
    """Draw ProjectionState and HarnessAguiObserver values as HTML in
    ``ipython`` (default: the running IPython shell, if any).

    Returns True when the formatters were registered, False when there is
    no shell (IPython not imported, or not running a shell). Raises what
    IPython raises for a shell without an HTML formatter. Registering twice
    replaces the first registration.
    """
    if ipython is None:
        module = sys.modules.get("IPython")
        ipython = module.get_ipython() if module is not None else None
        if ipython is None:
            return False
    formatter = ipython.display_formatter.formatters["text/html"]
    formatter.for_type(ProjectionState, state_html)
    formatter.for_type(HarnessAguiObserver, observer_html)
    return True


def load_ipython_extension(ipython: Any) -> None:
    """The hook of ``%load_ext harness_agui.debug``: ``register_formatters(ipython)``."""
    register_formatters(ipython)
