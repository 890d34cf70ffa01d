"""Drop-in replacements for the packages a Host already projects its Runs with.

``a13n_stream_protocol``: a13n-stream-protocol 0.21's modules and names, built
on harness-agui (``harness_agui.compat.a13n_stream_protocol``). A Host that
cannot change its imports calls ``install()`` once, before it (or anything it
imports) imports ``a13n_stream_protocol``; a pytest run can do the same with
``-p harness_agui.compat.pytest_plugin``.
"""

from __future__ import annotations

import sys

__all__ = ["UPSTREAM_MODULES", "install", "installed"]

UPSTREAM_NAME = "a13n_stream_protocol"
_PACKAGE = f"{__name__}.a13n_stream_protocol"
UPSTREAM_MODULES: tuple[str, ...] = ("fragments", "memory", "observer", "messages", "content", "display")
"""The submodules of a13n-stream-protocol 0.21 that ``install()`` puts behind its name."""


def install() -> None:
    """Make ``import a13n_stream_protocol`` (and each of its submodules) give this
    library's compat package, for the rest of the process.

    Raises RuntimeError when the real a13n_stream_protocol was imported already
    (installing then would leave the Host with two vocabularies); nothing is
    registered then. Calling it again is a no-op. What needs a13n-harness (the
    observers, tool result content, ContentMetadata) raises ImportError on use
    where it is not installed.
    """
    present = sys.modules.get(UPSTREAM_NAME)
    if present is not None:
        if getattr(present, "__name__", None) == _PACKAGE:
            return
        raise RuntimeError(
            "a13n_stream_protocol was imported before harness_agui.compat.install(): call install() before "
            "the Host imports it"
        )
    from . import a13n_stream_protocol as root
    from .a13n_stream_protocol import content, display, fragments, memory, messages, observer

    modules = {"fragments": fragments, "memory": memory, "observer": observer, "messages": messages,
               "content": content, "display": display}
    for name in UPSTREAM_MODULES:
        sys.modules[f"{UPSTREAM_NAME}.{name}"] = modules[name]
    sys.modules[UPSTREAM_NAME] = root


def installed() -> bool:
    """Whether ``a13n_stream_protocol`` is this library's compat package in this process."""
    present = sys.modules.get(UPSTREAM_NAME)
    return present is not None and getattr(present, "__name__", None) == _PACKAGE
