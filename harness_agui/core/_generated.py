# The one place generated code is defined.
#
# Four hot paths run functions written at import from the declarations (the
# frame encoders of ``core.encode``, the source builders of ``core._fast_source``,
# the wire writers of ``wire.codec`` and the converters of ``a13n``). Each
# hands its source text here. The text is compiled under a file name of its own
# (``<harness_agui generated: what>``) and put in ``linecache``, so a traceback
# through a generated function shows its lines as it shows any module's, and
# ``inspect.getsource`` finds them. The texts are made from the library's own
# declarations alone, never from input.
#
# Each generator stays only while it pays: ``bench/generated.py`` times every
# family against a plain loop over the same declarations (equal output first)
# and writes ``bench/results/generated.md``.

from __future__ import annotations

import linecache
from typing import Any

__all__ = ["define"]


def define(source: str, name: str, what: str, namespace: dict[str, Any]) -> Any:
    """Run ``source`` in ``namespace`` and return the function it defines as
    ``name``; ``what`` names the source in tracebacks."""
    filename = f"<harness_agui generated: {what}>"
    lines = [line + "\n" for line in source.splitlines()]
    linecache.cache[filename] = (len(source), None, lines, filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - made from the library's declarations
    return namespace[name]
