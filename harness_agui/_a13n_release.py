# Which a13n-harness release is installed, and the refusal of one a module
# does not support.
#
# The adapter (``harness_agui.a13n``) and the compat vocabulary
# (``harness_agui.compat.a13n_stream_protocol``) read a13n-harness's classes
# by name; a release whose classes moved or changed shape used to fail later,
# on the first item of a Run, with an ImportError or AttributeError about an
# internal name (and a message telling the user to install the extra they had
# installed). Each module now checks the installed release when it is
# imported, from the distribution's metadata alone (a13n-harness itself is
# not imported: importing it takes a second, and these modules import it only
# when a function needs it), and refuses a release outside its series with an
# ImportError naming both.
#
# A missing a13n-harness is not refused here: both modules work in part
# without it (the compat fragments, memory and display modules) and raise
# ImportError on the first use that needs it.

from __future__ import annotations

import functools
import importlib.metadata
import re

__all__ = ["A13N_EXTRAS", "installed_release", "require_release", "unsupported_message"]

A13N_EXTRAS: dict[tuple[int, int], str] = {(0, 5): "a13n05", (0, 20): "a13n", (0, 21): "a13n"}
"""The extra of harness-agui that installs each supported a13n-harness series."""


@functools.cache
def installed_release() -> tuple[str, tuple[int, int]] | None:
    """The installed a13n-harness version and its (major, minor) series; None
    when no a13n-harness distribution is installed. A version string that does
    not start with two numbers gives the series (-1, -1), which no module
    supports. Read once per process."""
    try:
        version = importlib.metadata.version("a13n-harness")
    except importlib.metadata.PackageNotFoundError:
        return None
    match = re.match(r"(\d+)\.(\d+)", version)
    return version, ((int(match[1]), int(match[2])) if match else (-1, -1))


def _series(supported: tuple[tuple[int, int], ...]) -> str:
    names = [f"{major}.{minor}.x" for major, minor in supported]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def unsupported_message(module: str, version: str, supported: tuple[tuple[int, int], ...]) -> str:
    """The message of the ImportError that refuses a13n-harness ``version`` for ``module``."""
    by_extra: dict[str, list[str]] = {}
    for s in supported:
        if s in A13N_EXTRAS:
            by_extra.setdefault(A13N_EXTRAS[s], []).append(f"{s[0]}.{s[1]}.x")
    extras = [f"'harness-agui[{extra}]' (a13n-harness {', '.join(series)})" for extra, series in by_extra.items()]
    return (f"{module} supports a13n-harness {_series(supported)}, but a13n-harness {version} is installed; "
            f"install a supported release (pip install {' or '.join(extras)})")


def require_release(module: str, supported: tuple[tuple[int, int], ...]) -> tuple[int, int] | None:
    """The installed a13n-harness series when ``module`` supports it, None
    when a13n-harness is not installed.

    Raises ImportError naming the installed version and the supported series
    when another release is installed; nothing else happens then.
    """
    found = installed_release()
    if found is None:
        return None
    version, series = found
    if series not in supported:
        raise ImportError(unsupported_message(module, version, supported))
    return series
