"""The harness-agui benchmark: ``python -m bench.run`` (see bench/run.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def save(name: str, text: str, result: Any) -> None:
    """Write a bench's report ``text`` and its raw ``result`` to bench/results/NAME.md and NAME.json."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.md").write_text(text, encoding="utf-8")
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
