"""a13n-stream-protocol 0.5's messages module: the Harness's ContentMetadata and input projection (imported from
a13n-harness on first use) and the CUSTOM names of inputs a person wrote."""

from __future__ import annotations

from typing import Any

from ..a13n_stream_protocol._harness import harness
from ..a13n_stream_protocol._names import AUTHORED_INPUT_EVENT_NAMES

__all__ = ["AUTHORED_INPUT_EVENT_NAMES", "ContentMetadata", "project_input_content"]  # noqa: F822 (module __getattr__)


def __getattr__(name: str) -> Any:
    if name in ("ContentMetadata", "project_input_content"):
        return getattr(harness(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
