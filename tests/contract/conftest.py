"""The two backends every contract test runs on: SQLite (a file) and PostgreSQL (a throwaway server).

A test asks for ``backend`` and opens its stores through it; the same test then runs once per
backend, with the same expectations. ``backend.target`` is what ``open_stores`` takes (a path or a
URL), so a test can open a second store on the same data, or hand it to another process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_server import fresh_url

from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal
from harness_agui.host.postgres import PostgresDeliveryLog, PostgresSourceJournal


class Backend:
    """Opens stores of one kind on one database, and closes them all at the end of the test."""

    def __init__(self, kind: str, target: str) -> None:
        self.kind = kind
        self.target = target
        self._opened: list[Any] = []

    def journal(self, **options: Any) -> Any:
        if self.kind == "sqlite":
            store: Any = SqliteSourceJournal(self.target, **{"poll_interval": 0.005, "synchronous": "NORMAL",
                                                             **options})
        else:
            options.pop("poll_interval", None)
            options.pop("synchronous", None)
            store = PostgresSourceJournal(self.target, **{"pool_size": 3, **options})
        self._opened.append(store)
        return store

    def deliveries(self, **options: Any) -> Any:
        if self.kind == "sqlite":
            store: Any = SqliteDeliveryLog(self.target, **{"poll_interval": 0.005, "synchronous": "NORMAL",
                                                           **options})
        else:
            options.pop("poll_interval", None)
            options.pop("synchronous", None)
            store = PostgresDeliveryLog(self.target, **{"pool_size": 3, **options})
        self._opened.append(store)
        return store

    def close(self) -> None:
        for store in reversed(self._opened):
            store.close()

    def __repr__(self) -> str:
        return f"<{self.kind} backend>"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        b = Backend("sqlite", str(tmp_path / "host.db"))
    else:
        b = Backend("postgres", fresh_url(request.node.name))
    yield b
    b.close()


@pytest.fixture
def journal(backend: Backend) -> Any:
    return backend.journal()


@pytest.fixture
def log(backend: Backend) -> Any:
    return backend.deliveries()
