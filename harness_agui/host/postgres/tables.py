# The table of Run bindings (``host.postgres.bindings``), declared apart from the store so that the delivery
# log can create it with its own tables (every database the kit writes has it, so a Worker's query may name
# it) without importing the store, which reads the delivery log's tables.

from __future__ import annotations

__all__ = ["BINDINGS", "BINDINGS_SCHEMA", "BINDINGS_COLUMNS"]

BINDINGS = "harness_wire_runs"
BINDINGS_SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {BINDINGS} (
        wire_run_id text PRIMARY KEY, wire_thread_id text NOT NULL, source_run_id text NOT NULL UNIQUE,
        source_thread_id text NOT NULL, ord bigint GENERATED ALWAYS AS IDENTITY)""",
    f"CREATE INDEX IF NOT EXISTS {BINDINGS}_wire_thread ON {BINDINGS} (wire_thread_id, ord)",
    f"CREATE INDEX IF NOT EXISTS {BINDINGS}_source_thread ON {BINDINGS} (source_thread_id)",
)
BINDINGS_COLUMNS = {BINDINGS: ("wire_run_id", "wire_thread_id", "source_run_id", "source_thread_id", "ord")}
