# The a13n-harness 0.5 suite: real Runs of a13n-harness 0.5 (the release a13n-service 0.0.94 pins), generated
# afresh for this test session by tools/make_a13n05_runs.py. `make test-a13n-05` builds its venv (a13n-service
# 0.0.94, which brings a13n-harness 0.5.4 and a13n-stream-protocol 0.5.4, with this package's a13n05 extra) and
# runs it; `make test` never collects this folder (pyproject's norecursedirs).

from __future__ import annotations

import asyncio
import importlib.util
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def generator() -> ModuleType:
    """tools/make_a13n05_runs.py, imported as a module."""
    pytest.importorskip("a13n_harness", reason="needs a13n-harness 0.5 (Python 3.13): make test-a13n-05")
    spec = importlib.util.spec_from_file_location("make_a13n05_runs", ROOT / "tools" / "make_a13n05_runs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the module's own types through it
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def scenarios(generator: ModuleType) -> list[Any]:
    """Every scenario, run afresh: real a13n-harness 0.5 items, in memory."""
    logging.getLogger("a13n_harness").setLevel(logging.ERROR)  # the failing scenarios fail on purpose
    return asyncio.run(generator.run_scenarios())
