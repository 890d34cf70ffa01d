"""The throwaway PostgreSQL server of the test session, shared by every test that needs one.

``server()`` starts it on first use (``initdb`` into a temporary directory, a Unix socket in it,
no TCP port) and it is stopped when the session's process exits. ``fresh_url(name)`` gives the URL
of a new, empty schema on it, so each test starts from nothing without the cost of a database.
Nothing is skipped: when the PostgreSQL binaries are missing, ``server()`` raises
``PostgresNotFoundError`` saying where it looked, and every test that needs the server fails with it.
"""

from __future__ import annotations

import itertools
import re
import urllib.parse

import psycopg

from harness_agui.testing.postgres import TemporaryPostgres

_server: TemporaryPostgres | None = None
_names = itertools.count(1)


def server() -> TemporaryPostgres:
    global _server
    if _server is None:
        started = TemporaryPostgres()
        started.start()  # PostgresNotFoundError (a clear message) when the binaries are missing
        _server = started
    return _server


def fresh_url(label: str = "t") -> str:
    """The URL of a new empty schema (the search path of every connection made with it)."""
    pg = server()
    schema = f"s_{re.sub(r'[^a-z0-9_]', '_', label.lower())[:40]}_{next(_names)}"
    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return f"{pg.url}&options={urllib.parse.quote(f'-csearch_path={schema}')}"


def fresh_database(label: str = "db") -> str:
    """The URL of a new empty database (for tests whose processes share advisory locks and channels)."""
    name = f"d_{re.sub(r'[^a-z0-9_]', '_', label.lower())[:40]}_{next(_names)}"
    return server().create_database(name)
