"""Memory sources read from a13n context extensions by the compat package."""

from __future__ import annotations

import pytest

from harness_agui.compat.a13n_stream_protocol.memory import MemorySource, memory_sources


def test_a_memory_recall_gives_one_record_source_per_memory() -> None:
    payload = {"type": "memory_recall", "memories": [
        {"memory": "notes", "recall": "recalled", "records": [{"id": "r1", "sha256": "ab"}], "cursor": "c9"},
        {"memory": "other", "recall": "timeout"},
    ]}
    sources = memory_sources(payload)
    assert sources is not None and [s.kind for s in sources] == ["record", "record"]
    assert sources[0].records[0].id == "r1" and sources[0].cursor == "c9" and sources[1].status == "timeout"


def test_a_memory_context_gives_file_sources() -> None:
    payload = {"type": "memory_context", "memories": [
        {"memory": "m", "context": "full", "files": [{"path": "a.md", "sha256": "x", "bytes": 3}]}]}
    (source,) = memory_sources(payload) or ()
    assert source == MemorySource(kind="file", memory="m", status="full",
                                  files=({"path": "a.md", "sha256": "x", "bytes": 3},))  # type: ignore[arg-type]


@pytest.mark.parametrize("payload", [
    {"type": "memory_recall", "memories": [{"memory": "m", "recall": "recalled"}]},     # evidence missing
    {"type": "memory_recall", "memories": [{"memory": "m", "recall": "future-status", "records": []}]},
    {"type": "memory_recall", "memories": ["not an object"]},
    {"type": "memory_recall"},
    {"type": "environment_changed", "memories": []},
])
def test_a_payload_without_evidence_gives_none_never_an_empty_result(payload: dict) -> None:
    assert memory_sources(payload) is None


def test_a_memory_that_delivered_nothing_reports_its_status_without_sources() -> None:
    (source,) = memory_sources({"type": "memory_recall", "memories": [{"memory": "m", "recall": "failed"}]}) or ()
    assert source.status == "failed" and source.records == ()
