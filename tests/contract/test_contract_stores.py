"""open_stores: one call opens a Host's two stores on either backend, from a path or a URL."""

from __future__ import annotations

from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal, is_postgres_url, open_stores
from harness_agui.host.postgres import PostgresDeliveryLog, PostgresSourceJournal
from harness_agui.testing import simulated_run


def test_open_stores_opens_the_journal_and_the_log_of_a_path_or_a_url_with_the_options_each_has(backend):
    journal, log = open_stores(backend.target, synchronous="NORMAL", poll_interval=0.01, pool_size=2, recheck=5)
    try:
        kinds = (SqliteSourceJournal, SqliteDeliveryLog) if backend.kind == "sqlite" else (
            PostgresSourceJournal, PostgresDeliveryLog)
        assert isinstance(journal, kinds[0]) and isinstance(log, kinds[1])
        assert is_postgres_url(backend.target) == (backend.kind == "postgres")
        items = simulated_run()
        assert journal.append(items[0]) and journal.cursor("run-demo") == 0
        assert log.cursor("run-demo") is None
    finally:
        journal.close()
        log.close()
    reader, reader_log = open_stores(backend.target, read_only=True)
    try:
        assert reader.read_only and reader_log.read_only and reader.cursor("run-demo") == 0
    finally:
        reader.close()
        reader_log.close()
