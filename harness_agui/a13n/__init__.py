"""harness-agui's code for a13n-harness, in one folder (the drop-in for a13n-stream-protocol, which speaks
that package's vocabulary over the core, is ``harness_agui.compat``).

- ``harness_agui.a13n`` (this package): the adapter, ``from_a13n`` and ``to_a13n``, between a13n-harness's
  stream items and this library's source items, and ``a13n_equal`` / ``a13n_differences`` to compare them.
- ``harness_agui.a13n.runner``: ``A13nRunner``, which turns AG-UI requests into an a13n-harness agent's Runs
  for ``harness_agui.serve``.
- ``harness_agui.a13n.demo``: the offline demo agent ``harness-agui serve --demo`` serves.

a13n-harness needs Python 3.13 (``pip install 'harness-agui[a13n]'``, or ``'harness-agui[a13n05]'`` for
a13n-harness 0.5). Every module here imports without it, on Python 3.11 too, and imports it on first use.
Importing this package (or any module in it) with an a13n-harness release outside ``SUPPORTED`` installed
raises ImportError naming that release and the supported ones.
"""

# The release gate runs here, when the package is imported, from the distribution's metadata alone; the
# adapter (``_adapter``) is imported on first use of one of its names (``__getattr__``), so that the demo
# agent and the release check do not pay for it: the adapter imports the core (pydantic, ag_ui), which
# ``bench/startup.py`` keeps out of the demo agent's floor. The release check itself stays outside the
# package (``harness_agui._a13n_release``): the compat vocabularies read it before they import the adapter,
# and refuse a release with their own message; importing it from here would run this package's gate first.

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from .._a13n_release import require_release as _require_release

if _TYPE_CHECKING:  # at run time, imported on first use by __getattr__ (below)
    from ._adapter import a13n_differences, a13n_equal, from_a13n, to_a13n

__all__ = ["SUPPORTED", "from_a13n", "to_a13n", "a13n_equal", "a13n_differences"]

SUPPORTED: tuple[tuple[int, int], ...] = ((0, 5), (0, 20), (0, 21))
"""The a13n-harness series this adapter reads and rebuilds losslessly (the
(major, minor) of a release). Importing this module with another release
installed raises ImportError naming it and these."""

_require_release(__name__, SUPPORTED)

_ADAPTER = frozenset(("from_a13n", "to_a13n", "a13n_equal", "a13n_differences"))


def __getattr__(name: str) -> _Any:
    if name in _ADAPTER:
        from . import _adapter

        value = getattr(_adapter, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _ADAPTER)
