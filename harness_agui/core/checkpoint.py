# Checkpoints: a projection state as bytes, so that a restart resumes from the
# latest checkpoint plus the items after it instead of the whole history.
#
# A checkpoint is derived data, an accelerator: the source history stays the
# record, and any checkpoint that does not verify is refused (CheckpointError,
# with ``problem`` saying why) so that the Host discards it and resumes from
# the full history. Nothing of a refused checkpoint is ever applied: decoding
# builds a new state value and the observer swaps it in only afterwards.
#
# Layout (all integers big-endian):
#
#     MAGIC                       b"harness-agui checkpoint\n"
#     u32 n, header               n bytes of UTF-8 JSON (one object, below)
#     sections                    the lengths are in the header, in order
#     digest                      of everything before it: its CRC-32 (4 bytes),
#                                 or its HMAC-SHA-256 under the Host's key (32)
#
# The header says what the checkpoint is without decoding anything else:
# ``format`` (FORMAT), ``library`` (the harness-agui version that wrote it),
# ``python`` (its major.minor: the sections use marshal, whose format is the
# interpreter's), ``thread_id``, ``run_id``, ``last_sequence`` (the root
# Run's), ``position`` (of the last item in the Run's stream, child Runs'
# items included: the Host kit's cursor; equal to ``last_sequence`` for a Run
# that never delegated), ``event_count``, ``finished``, ``retained`` (whether the events are in
# it), ``messages`` (whether a live-only log tracked the message list),
# ``processor`` (the SHA-256 of the processor identity the Host passed, or
# null for no processor: the projection depends on the processor, so a
# checkpoint only resumes under the same one), ``digest`` ("crc32" or
# "hmac-sha256") and ``sections`` (their lengths).
#
# Sections: the state without its events, pickled (protocol 5); then, for a
# state that retains its events, the unsealed end of the RecordLog (its last
# chunks and tail) and each sealed block of 4096 records, marshalled (records
# are tuples of str, int and None: marshal is the fastest exact codec for
# them, and keeps a message id shared by its records shared).
#
# Restoring verifies the digest over the whole checkpoint first, then the
# header, then unpickles with an unpickler that only resolves this library's
# core classes and pyrsistent's. Even so, a checkpoint is trusted data: only
# restore checkpoints the Host itself wrote. The CRC-32 detects damage (as
# the Host kit's row checksums do; an unkeyed cryptographic hash would stop
# a deliberate change no better, and costs more than the rest of a restore);
# a keyed HMAC also detects a change by someone without the key.
#
# The sealed blocks of a restored RecordLog are decoded when first read
# (``_LazyBlocks``), each once: restoring a checkpoint of 10^5 events then
# takes a few milliseconds (the digest and the small pickle), and resuming
# the live tail never reads the old blocks. This reaches into RecordLog's
# private layout (``RecordLog._of``, its ``_blocks``, ``_chunks``,
# ``_tail``), the one place that does; bench/checkpoint.py measures it
# against decoding everything at once.

from __future__ import annotations

import hashlib
import hmac
import io
import json
import marshal
import pickle
import struct
import sys
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, cast

import attrs
from pyrsistent import PVector, pvector

from .errors import CheckpointError
from .livelog import LiveLog
from .records import RecordLog
from .state import ProjectionState

__all__ = ["FORMAT", "MAGIC", "CheckpointInfo", "encode", "decode", "inspect", "processor_digest",
           "library_version", "stream_position"]

MAGIC = b"harness-agui checkpoint\n"
FORMAT = 1
_TRAILER = {"crc32": 4, "hmac-sha256": 32}  # the digest's length, by name
_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
_U32 = struct.Struct(">I")


def library_version() -> str:
    """The harness-agui version a checkpoint records (the installed package's)."""
    global _VERSION
    if _VERSION is None:
        from importlib import metadata
        try:
            _VERSION = metadata.version("harness-agui")
        except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare source tree
            _VERSION = "unknown"
    return _VERSION


_VERSION: str | None = None


def processor_digest(identity: str | None) -> str | None:
    """The SHA-256 (hex) a checkpoint keeps of a processor identity; None for none."""
    if identity is None:
        return None
    if not isinstance(identity, str):
        raise TypeError(f"processor_identity must be a str, not {type(identity).__name__}")
    return hashlib.sha256(b"harness-agui processor\0" + identity.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class CheckpointInfo:
    """What a checkpoint's header says (see ``inspect``)."""

    format: int
    library: str
    python: str
    thread_id: str
    run_id: str
    last_sequence: int
    position: int
    event_count: int
    finished: bool
    retained: bool
    messages: bool
    processor: str | None
    digest: str
    size: int


# -- encoding -----------------------------------------------------------------------------------

def encode(state: ProjectionState, *, processor_identity: str | None, key: bytes | None = None) -> bytes:
    """The checkpoint of ``state``. Raises ValueError for a state that has
    not bound a Run yet (there is nothing to resume from)."""
    if state.run_id is None or state.thread_id is None:
        raise ValueError("a checkpoint needs a state that has observed at least one item")
    events = state.events
    sections: list[bytes | memoryview] = []
    if isinstance(events, LiveLog):
        sections.append(_pickle(state))
        retained, messages = False, events.messages is not None
    else:
        sections.append(_pickle(attrs.evolve(state, events=RecordLog())))
        sections.append(marshal.dumps((events._chunks, events._tail)))
        blocks = events._blocks
        if isinstance(blocks, _LazyBlocks):
            sections.extend(blocks.encoded())
        else:
            sections.extend(marshal.dumps(block) for block in blocks)
        retained, messages = True, False
    header = {
        "format": FORMAT, "library": library_version(), "python": _PYTHON,
        "thread_id": state.thread_id, "run_id": state.run_id, "last_sequence": state.last_sequence,
        "position": stream_position(state), "event_count": len(events), "finished": state.finished,
        "retained": retained, "messages": messages,
        "processor": processor_digest(processor_identity), "digest": "crc32" if key is None else "hmac-sha256",
        "sections": [len(s) for s in sections],
    }
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    body = b"".join([MAGIC, _U32.pack(len(head)), head, *sections])
    return body + _digest(body, key)


def stream_position(state: ProjectionState) -> int:
    """The position of the last item ``state`` has taken in its Run's stream
    (counted as the Host kit's journal counts it: from the root Run's first
    sequence, child Runs' items included)."""
    return state.last_sequence + sum(sub.run.history.next_sequence for sub in state.subagents.values())


def _pickle(state: ProjectionState) -> bytes:
    return pickle.dumps(state, protocol=5)


def _digest(data: bytes | memoryview, key: bytes | None) -> bytes:
    if key is None:
        return zlib.crc32(data).to_bytes(4, "big")
    return hmac.new(key, data, hashlib.sha256).digest()


# -- decoding -----------------------------------------------------------------------------------

def _header(data: bytes | memoryview) -> tuple[dict[str, Any], int]:
    """The header and the offset of the first section; CheckpointError
    ("format") for bytes that are not a checkpoint."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"a checkpoint is bytes, not {type(data).__name__}")
    view = memoryview(data)
    if bytes(view[:len(MAGIC)]) != MAGIC:
        raise CheckpointError("not a harness-agui checkpoint (its first bytes are not the checkpoint magic)",
                              problem="format")
    at = len(MAGIC)
    if len(view) < at + 4 + min(_TRAILER.values()):
        raise CheckpointError("a truncated checkpoint", problem="format")
    (n,) = _U32.unpack(view[at:at + 4])
    at += 4
    try:
        header = json.loads(bytes(view[at:at + n]).decode("utf-8"))
    except ValueError as e:
        raise CheckpointError(f"a checkpoint whose header is not JSON ({e})", problem="corrupt") from None
    if not isinstance(header, dict):
        raise CheckpointError("a checkpoint whose header is not a JSON object", problem="corrupt")
    return header, at + n


def inspect(data: bytes | memoryview) -> CheckpointInfo:
    """What the header of checkpoint ``data`` says, without verifying the
    rest (``decode`` does). Raises TypeError for data that is not bytes and
    CheckpointError for bytes that are not a checkpoint of a known format."""
    header, _ = _header(data)
    if header.get("format") != FORMAT:
        raise CheckpointError(f"a checkpoint of format {header.get('format')!r}; this release reads format "
                              f"{FORMAT}", problem="version")
    try:
        return CheckpointInfo(
            FORMAT, str(header["library"]), str(header["python"]), str(header["thread_id"]),
            str(header["run_id"]), int(header["last_sequence"]), int(header["position"]), int(header["event_count"]),
            bool(header["finished"]), bool(header["retained"]), bool(header["messages"]),
            None if header["processor"] is None else str(header["processor"]), str(header["digest"]), len(data))
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"a checkpoint header without a valid {e}", problem="corrupt") from None


def decode(data: bytes | memoryview, *, processor_identity: str | None, run_id: str | None = None,
           key: bytes | None = None) -> ProjectionState:
    """The state checkpoint ``data`` holds, once everything checks out.

    Raises TypeError for data that is not bytes, and CheckpointError: for
    bytes that are not a checkpoint ("format"), of another format, library or
    Python version ("version"), whose digest or contents do not match, or
    that were written with a key when none is given or the other way round
    ("corrupt"), of another Run than ``run_id`` ("foreign"), or written under
    another processor identity ("processor"). Pure: returns a new value.
    """
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)  # the restored log keeps views of it: they must not change
    info = inspect(data)
    if info.library != library_version():
        raise CheckpointError(f"a checkpoint written by harness-agui {info.library}; this is "
                              f"{library_version()}", problem="version")
    if info.python != _PYTHON:
        raise CheckpointError(f"a checkpoint written under Python {info.python}; this is Python {_PYTHON}",
                              problem="version")
    expected_digest = "crc32" if key is None else "hmac-sha256"
    if info.digest != expected_digest:
        raise CheckpointError(f"a checkpoint sealed with {info.digest}, read as {expected_digest} (a key is "
                              f"needed exactly when it was written with one)", problem="corrupt")
    view = memoryview(data)
    trailer = _TRAILER[expected_digest]
    body = view[:len(view) - trailer]
    if len(body) <= len(MAGIC) or not hmac.compare_digest(_digest(body, key), bytes(view[len(view) - trailer:])):
        raise CheckpointError("a damaged checkpoint: its checksum does not match its contents", problem="corrupt")
    if info.processor != processor_digest(processor_identity):
        raise CheckpointError("a checkpoint written under another processor (its processor identity differs)",
                              problem="processor")
    if run_id is not None and info.run_id != run_id:
        raise CheckpointError(f"a checkpoint of run {info.run_id!r}, not of run {run_id!r}", problem="foreign")
    header, at = _header(data)
    lengths = header["sections"]
    if (not isinstance(lengths, list) or not lengths or not all(type(n) is int and n >= 0 for n in lengths)
            or at + sum(lengths) != len(body) or len(lengths) == 1 and info.retained):
        raise CheckpointError("a checkpoint whose sections do not add up", problem="corrupt")
    sections = []
    for n in lengths:
        sections.append(body[at:at + n])
        at += n
    try:
        state = _Unpickler(io.BytesIO(sections[0])).load()
        if not isinstance(state, ProjectionState):
            raise ValueError(f"it holds a {type(state).__name__}")
        if info.retained:
            chunks, tail = marshal.loads(sections[1])
            events = RecordLog._of(cast(Any, _LazyBlocks(tuple(sections[2:]))), chunks, tail)
            state = attrs.evolve(state, events=events)
    except CheckpointError:
        raise
    except Exception as e:  # anything a damaged pickle or marshal may raise
        raise CheckpointError(f"a checkpoint whose state does not decode ({type(e).__name__}: {e})",
                              problem="corrupt") from None
    if (state.run_id != info.run_id or state.thread_id != info.thread_id
            or state.last_sequence != info.last_sequence or stream_position(state) != info.position
            or state.finished != info.finished
            or len(state.events) != info.event_count or isinstance(state.events, LiveLog) == info.retained):
        raise CheckpointError("a checkpoint whose state does not match its header", problem="corrupt")
    return state


class _Unpickler(pickle.Unpickler):
    """Resolves only the classes a projection state is made of."""

    def find_class(self, module: str, name: str) -> Any:
        allowed = module.startswith(("harness_agui.core.", "pyrsistent.")) or module == "pvectorc"
        if allowed and not name.startswith("__"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a checkpoint may not refer to {module}.{name}")


# -- the lazily decoded blocks of a restored RecordLog -----------------------------------------------

class _LazyBlocks:
    """The sealed blocks of a restored RecordLog, in the place of its
    persistent vector (the same operations: len, index, iterate, extend,
    compare): each block is decoded from its marshalled bytes on first read
    and then kept. The cache is filled, never changed, with values equal to
    what a decode gives, so the object behaves as the immutable value it
    stands for."""

    __slots__ = ("_sealed", "_cache", "_more")

    def __init__(self, sealed: tuple[bytes | memoryview, ...], cache: list[Any] | None = None,
                 more: PVector[Any] | None = None) -> None:
        self._sealed = sealed
        self._cache = cache if cache is not None else [None] * len(sealed)
        self._more: PVector[Any] = more if more is not None else pvector()

    def encoded(self) -> Iterator[bytes | memoryview]:
        """Every block as marshalled bytes (the sealed ones as they came)."""
        yield from self._sealed
        for block in self._more:
            yield marshal.dumps(block)

    def __len__(self) -> int:
        return len(self._sealed) + len(self._more)

    def __getitem__(self, index: int) -> Any:
        sealed = len(self._sealed)
        if index < 0:
            index += len(self)
        if index < sealed:
            if index < 0:
                raise IndexError("block index out of range")
            block = self._cache[index]
            if block is None:
                block = self._cache[index] = marshal.loads(self._sealed[index])
            return block
        return self._more[index - sealed]

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def extend(self, blocks: Sequence[Any]) -> _LazyBlocks:
        return _LazyBlocks(self._sealed, self._cache, self._more.extend(blocks))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (_LazyBlocks, type(pvector()))):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return pvector, (list(self),)

    def __repr__(self) -> str:
        return f"<{len(self)} blocks, {sum(b is not None for b in self._cache)} of {len(self._sealed)} decoded>"
