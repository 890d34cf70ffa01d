# The a13n-harness suite: real Runs of a13n-harness (Python 3.13, the `a13n`
# extra), generated afresh for this test session by tools/make_a13n_fixtures.py.
# `make test-a13n` runs it (`pytest tests/a13n`); `make test` never collects this
# folder (pyproject's norecursedirs), so the Python 3.11 suite reports nothing
# skipped for it. Without a13n-harness each module here skips itself.

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
    """tools/make_a13n_fixtures.py, imported as a module."""
    spec = importlib.util.spec_from_file_location("make_a13n_fixtures", ROOT / "tools" / "make_a13n_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the module's own types through it
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def scenarios(generator: ModuleType) -> list[Any]:
    """Every scenario, run afresh: real a13n-harness items, in memory."""
    logging.getLogger("a13n_harness").setLevel(logging.ERROR)  # the failing scenarios fail on purpose
    return asyncio.run(generator.run_scenarios())


@pytest.fixture(scope="session")
def fresh_journals(generator: ModuleType, scenarios: list[Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fresh scenarios written by the generator into a temporary folder."""
    out = tmp_path_factory.mktemp("a13n")
    for scenario in scenarios:
        generator.write(scenario, out)
    return out
