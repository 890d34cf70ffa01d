# Which of the Harness's own notices a served stream carries.
#
# The projection sends what AG-UI has no event for as CUSTOM events named
# ``harness.*`` (inputs the model alone sees, observations, extension and
# capability events, native event kinds, late part input; README, "What the
# projection looks like"). A stock client ignores them, but they are half the
# events of a plain turn; a Host that wants fewer bytes, or keeps them to
# itself, names the ones its clients get (``AguiServer(notices=...)``). The
# delivery log keeps them all, so a replay or the debug views still have
# them. ``CustomFilter(names)`` drops from a chunk of SSE frames every CUSTOM
# event whose name is not listed (an entry ending in ``.`` lists every name it
# begins); other frames pass, and a chunk without a CUSTOM event is returned
# as it is.

from __future__ import annotations

import json
import re
from collections.abc import Iterable

__all__ = ["CustomFilter"]

_CUSTOM = b'"type":"CUSTOM"'
_NAME = re.compile(rb'"name":"((?:[^"\\]|\\.)*)"')


class CustomFilter:
    """Keeps the CUSTOM events named in ``names`` (an entry ending in ``.`` is a prefix) and drops the rest.
    TypeError for ``names`` that is a str or holds something other than strs."""

    def __init__(self, names: Iterable[str]) -> None:
        if isinstance(names, (str, bytes)):
            raise TypeError("notices must be a collection of CUSTOM event names, not one string")
        listed = tuple(names)
        if not all(isinstance(n, str) for n in listed):
            raise TypeError(f"notices must be CUSTOM event names (str), not {listed!r:.200}")
        self.names = frozenset(n for n in listed if not n.endswith("."))
        self.prefixes = tuple(n for n in listed if n.endswith("."))

    def carries(self, name: str) -> bool:
        """Whether a CUSTOM event of this name is sent."""
        return name in self.names or name.startswith(self.prefixes)

    def __call__(self, chunk: bytes) -> bytes:
        """``chunk`` (whole SSE frames) without the CUSTOM events it does not carry."""
        if _CUSTOM not in chunk:
            return chunk
        frames = chunk.split(b"\n\n")
        kept = [frame for frame in frames[:-1] if self._kept(frame)]
        return b"".join(frame + b"\n\n" for frame in kept) + frames[-1]

    def _kept(self, frame: bytes) -> bool:
        if _CUSTOM not in frame:
            return True
        named = _NAME.search(frame)
        if named is None:
            return True
        raw = named.group(1)
        name = json.loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode("utf-8", "surrogatepass")
        return self.carries(name)
