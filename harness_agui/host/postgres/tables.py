# The names of the kit's tables, declared apart from the stores: the one write path (``writes``) writes the
# journal's and the delivery log's tables and is used by both stores, and the delivery log creates the table
# of Run bindings (``host.postgres.bindings``) with its own (every database the kit writes has it, so a
# Worker's query may name it) without importing that store, which reads the delivery log's tables.

from __future__ import annotations

__all__ = ["ITEMS", "JOURNAL_RUNS", "DELIVERY_RUNS", "CHILDREN", "EVENTS", "BINDINGS", "BINDINGS_SCHEMA",
           "BINDINGS_COLUMNS"]

ITEMS = "harness_source_items"
JOURNAL_RUNS = "harness_source_runs"
DELIVERY_RUNS = "harness_agui_delivery_runs"
CHILDREN = "harness_agui_delivery_children"
EVENTS = "harness_agui_deliveries"

BINDINGS = "harness_wire_runs"
BINDINGS_SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {BINDINGS} (
        wire_run_id text PRIMARY KEY, wire_thread_id text NOT NULL, source_run_id text NOT NULL UNIQUE,
        source_thread_id text NOT NULL, ord bigint GENERATED ALWAYS AS IDENTITY)""",
    f"CREATE INDEX IF NOT EXISTS {BINDINGS}_wire_thread ON {BINDINGS} (wire_thread_id, ord)",
    f"CREATE INDEX IF NOT EXISTS {BINDINGS}_source_thread ON {BINDINGS} (source_thread_id)",
)
BINDINGS_COLUMNS = {BINDINGS: ("wire_run_id", "wire_thread_id", "source_run_id", "source_thread_id", "ord")}
