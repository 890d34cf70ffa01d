# What automatic memory delivered to a Run, as evidence without the content.
#
# A Harness context extension of type ``memory_recall`` (records) or
# ``memory_context`` (files) lists, per memory, what was delivered and its
# status. ``memory_sources`` reads that list into MemorySource values, or
# returns None whenever the payload is not such an observation or does not
# carry the evidence (an older Harness, an unknown producer): missing evidence
# must never read as "nothing was delivered".

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

__all__ = ["FileSource", "MemorySource", "RecordSource", "memory_sources"]

MemoryStatus = Literal["recalled", "failed", "timeout", "full", "changes", "unchanged", "omitted", "unavailable"]

# The statuses under which a memory must list what it delivered.
_DELIVERING: frozenset[str] = frozenset({"recalled", "full", "changes", "unchanged", "omitted"})

# payload type -> (source kind, the memory's status field, its list field)
_KINDS: dict[str, tuple[Literal["record", "file"], str, str]] = {
    "memory_recall": ("record", "recall", "records"),
    "memory_context": ("file", "context", "files"),
}
# A memory's fields a source keeps, with their defaults.
_FIELDS: dict[str, JsonValue] = {
    "memory": None, "memory_id": None, "records": [], "files": [], "cursor": None, "sources_truncated": False,
}


class RecordSource(BaseModel):
    """One recalled record: its id and content hash."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    sha256: str


class FileSource(BaseModel):
    """One loaded memory file: its path, content hash and size."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    sha256: str
    bytes: int = Field(ge=0)
    truncated: bool = False


class MemorySource(BaseModel):
    """One automatic delivery of one memory in a Run. ``memory_id`` is set by a
    managed Host from its mounts (never by a model); ``cursor`` is a change-feed
    position, not a version of the files."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["record", "file"]
    memory: str
    memory_id: str | None = None
    status: MemoryStatus
    records: tuple[RecordSource, ...] = ()
    files: tuple[FileSource, ...] = ()
    cursor: str | None = None
    sources_truncated: bool = False


def memory_sources(payload: dict[str, JsonValue]) -> tuple[MemorySource, ...] | None:
    """The sources a context extension's payload reports, or None when it is not
    a memory observation or lacks the evidence. Raises nothing."""
    kind = _KINDS.get(str(payload.get("type")))
    memories = payload.get("memories")
    if kind is None or not isinstance(memories, list):
        return None
    source_kind, status_field, list_field = kind
    sources = []
    for memory in memories:
        if not isinstance(memory, dict):
            return None
        status = memory.get(status_field)
        if not isinstance(status, str) or (status in _DELIVERING and list_field not in memory):
            return None
        fields = {name: memory.get(name, default) for name, default in _FIELDS.items()}
        try:
            source = MemorySource.model_validate({"kind": source_kind, "status": status, **fields})
        except ValidationError:
            return None  # an open vocabulary: an unknown payload stays an ordinary observation
        sources.append(source)
    return tuple(sources)
