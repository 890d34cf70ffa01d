"""Drop-in replacements for the packages a Host already projects its Runs with.

``a13n_stream_protocol``: a13n-stream-protocol 0.21's modules and names, built
on harness-agui (``harness_agui.compat.a13n_stream_protocol``), and 0.5's
(``harness_agui.compat.a13n_stream_protocol_05``, for a13n-harness 0.5, which
a13n-service 0.0.94 pins). A Host that cannot change its imports calls
``install()`` once, before it (or anything it imports) imports
``a13n_stream_protocol``; a pytest run can do the same with
``-p harness_agui.compat.pytest_plugin``. ``install()`` puts the release that
matches the installed a13n-harness behind the name.
"""

from __future__ import annotations

import sys

__all__ = ["UPSTREAM_MODULES", "install", "installed"]

UPSTREAM_NAME = "a13n_stream_protocol"
_PACKAGE = f"{__name__}.a13n_stream_protocol"
_PACKAGE_05 = f"{__name__}.a13n_stream_protocol_05"
UPSTREAM_MODULES: tuple[str, ...] = ("fragments", "memory", "observer", "messages", "content", "display")
"""The submodules of a13n-stream-protocol 0.21 that ``install()`` puts behind its name."""
UPSTREAM_MODULES_05: tuple[str, ...] = ("fragments", "observer", "messages", "content")
"""The submodules of a13n-stream-protocol 0.5 that ``install()`` puts behind its name (with a13n-harness 0.5)."""


def install() -> None:
    """Make ``import a13n_stream_protocol`` (and each of its submodules) give this
    library's compat package, for the rest of the process.

    With a13n-harness 0.5 installed that is a13n-stream-protocol 0.5's
    package (``a13n_stream_protocol_05``), else 0.21's.

    Raises RuntimeError when the real a13n_stream_protocol was imported already
    (installing then would leave the Host with two vocabularies), ImportError
    naming the installed and the supported releases when a13n-harness is of a
    release neither package reads; nothing is registered then. Calling it
    again is a no-op. What needs a13n-harness (the observers, tool result
    content, ContentMetadata) raises ImportError on use where it is not
    installed.
    """
    present = sys.modules.get(UPSTREAM_NAME)
    if present is not None:
        if getattr(present, "__name__", None) in (_PACKAGE, _PACKAGE_05):
            return
        raise RuntimeError(
            "a13n_stream_protocol was imported before harness_agui.compat.install(): call install() before "
            "the Host imports it"
        )
    from .._a13n_release import installed_release, require_release

    found = installed_release()
    if found is not None and found[1] == (0, 5):
        from . import a13n_stream_protocol_05 as root_05
        from .a13n_stream_protocol_05 import content as content_05
        from .a13n_stream_protocol_05 import fragments as fragments_05
        from .a13n_stream_protocol_05 import messages as messages_05
        from .a13n_stream_protocol_05 import observer as observer_05

        modules_05 = {"fragments": fragments_05, "observer": observer_05, "messages": messages_05,
                      "content": content_05}
        for name in UPSTREAM_MODULES_05:
            sys.modules[f"{UPSTREAM_NAME}.{name}"] = modules_05[name]
        sys.modules[UPSTREAM_NAME] = root_05
        return
    require_release("harness_agui.compat.install()", ((0, 5), (0, 20), (0, 21)))
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
    return present is not None and getattr(present, "__name__", None) in (_PACKAGE, _PACKAGE_05)
