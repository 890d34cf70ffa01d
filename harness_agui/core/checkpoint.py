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
#     sections                    the lengths are in the header, in order: the
#                                 state, then for a retained state its records
#                                 after the last sealed block, then one per
#                                 sealed block
#     seal                        of everything before the first sealed block:
#                                 its CRC-32 (4 bytes), or its HMAC-SHA-256
#                                 under the Host's key (32)
#
# The header says what the checkpoint is without decoding anything else:
# ``format`` (FORMAT), ``library`` (the harness-agui version that wrote it),
# ``thread_id``, ``run_id``, ``last_sequence`` (the root Run's), ``position``
# (of the last item in the Run's stream, child Runs' items included: the
# Host kit's cursor; equal to ``last_sequence`` for a Run that never
# delegated), ``event_count``, ``finished``, ``retained`` (whether the events
# are in it), ``messages`` (whether a live-only log tracked the message
# list), ``processor`` (the SHA-256 of the processor identity the Host
# passed, or null for no processor: the projection depends on the processor,
# so a checkpoint only resumes under the same one), ``digest`` ("crc32" or
# "hmac-sha256"), ``sections`` (their lengths) and ``blocks`` (the digest of
# each sealed block's section, in hex: its CRC-32 beside a CRC-32 seal, its
# SHA-256 under an HMAC, which covers the header and so every block).
#
# Everything is data: JSON, decoded into the state's own types and nothing
# else. Restoring never runs code named by the checkpoint, whatever its bytes
# (no pickle, no marshal). Section 0 is the state without its events, in a
# tagged JSON form (``_encode`` / ``_decode``): a JSON scalar stands for
# itself, and every other value is an array whose first element names what it
# is: ``"t"`` a tuple, ``"v"`` a pvector, ``"m"`` a pmap (keys and values
# alternating), ``"im"`` / ``"is"`` an id map or set, or the name of one of
# the exact classes in ``_CLASSES`` followed by its fields in order. A name
# outside that table, a wrong number of fields, or anything else malformed is
# refused ("corrupt"); a class is only ever built by its own constructor.
# For a state that retains its events, the next section holds the records
# after the last sealed block, and one section per sealed block of 4096
# records follows: each a JSON array of records, a record an array of its
# type tag, its timestamp and its values (str or null), checked against the
# record kinds the library knows (``records.check``: tag, arity, and values
# that build the event: required ones present, JSON text that parses).
#
# A state that decodes must also hold together (``core.invariants``): its
# children filed under their own run ids, announcement numbers unique, no
# parent chain that loops, the owners of published ids runs of the stream,
# open parts in index order, held records ones the library makes, and a
# live-only log's conversation consistent with itself. Anyone can write a
# well-formed checkpoint whose parts disagree, which the observer would take
# and then fail on in observe(), messages() or catch_up(); it is refused
# ("corrupt") instead, so every checkpoint restored is one the observer can use.
#
# Verification order: the seal first (over the magic, the header, the state
# and the unsealed records), then the header, then the state and the
# unsealed records, decoded and checked. The sealed blocks, which hold all
# but the last BLOCK - 1 events, are not read at restore (only their first
# and last bytes, as a cheap check of their framing): each is checked
# against its digest, decoded and its records checked when it is first read
# (``_LazyBlocks``), and one that fails raises CheckpointError ("corrupt")
# then, and on every read after. So restoring costs the state, not the
# events: resuming the live tail of a Run of 10^5 items from a checkpoint
# never reads the old blocks (bench/checkpoint.py). A restored log is sealed
# again (``checkpoint()``) only once every block has been read and checked.
# ``verify_seal`` (what the Host kit's store checks before it keeps one)
# reads every byte, the blocks' digests included.
#
# The CRC-32 detects damage only (as the Host kit's row checksums do): anyone
# can write a well-formed checkpoint with valid CRCs, which is why every
# block's records are checked when decoded, keyed or not. A keyed HMAC also
# detects any change by someone without the key. The Host kit's checkpoint
# store seals with a key by default.

from __future__ import annotations

import hashlib
import hmac
import json
import struct
import types
import typing
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, NamedTuple

import attrs
from pyrsistent import PMap, PVector, pmap, pvector

from . import conversation, state
from .errors import CheckpointError
from .history import HistoryCursor
from .idmap import IdMap, IdSet
from .invariants import InconsistentState, check_state
from .livelog import LiveLog
from .records import RecordLog, check_rows
from .state import ProjectionState
from .vector import Vector

__all__ = ["FORMAT", "MAGIC", "CheckpointInfo", "encode", "decode", "inspect", "verify_seal", "processor_digest",
           "library_version", "stream_position"]

MAGIC = b"harness-agui checkpoint\n"
FORMAT = 5  # 5: each sealed block has its own digest, checked when the block is first read; the
           # conversation's open entries are maps by id (a live-only log that tracks messages)
_TRAILER = {"crc32": 4, "hmac-sha256": 32}  # the digest's length, by name
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


# -- the classes a state is made of ----------------------------------------------------------------
# Each entry: the exact class, its fields as a list, how to build it from them, and the types of
# those fields (the class's own annotations). Only these classes are ever built from a checkpoint,
# only by their own constructors, and only from fields of the declared types.

class _Codec(NamedTuple):
    cls: type
    fields: Callable[[Any], list[Any]]
    build: Callable[..., Any]
    types: Callable[[], tuple[Any, ...]]


def _attrs_codec(cls: type) -> _Codec:
    names = tuple(a.name for a in attrs.fields(cls))
    return _Codec(cls, lambda v: [getattr(v, n) for n in names], cls, lambda: _hints(cls, names))


def _tuple_codec(cls: Any) -> _Codec:
    return _Codec(cls, list, cls, lambda: _hints(cls, cls._fields))


def _hints(cls: type, names: tuple[str, ...]) -> tuple[Any, ...]:
    hints = typing.get_type_hints(cls)
    return tuple(hints[n] for n in names)


def _live_log_fields(log: LiveLog) -> list[Any]:
    return list(log.__reduce__()[1])


def _empty_log_fields(log: RecordLog) -> list[Any]:
    if len(log):  # the events of a retained state travel in sections of their own
        raise TypeError("a checkpoint holds a state's records in their own sections")
    return []


_CLASSES: dict[str, _Codec] = {
    "ProjectionState": _tuple_codec(ProjectionState),
    "HistoryCursor": _tuple_codec(HistoryCursor),
    "OpenPart": _tuple_codec(state.OpenPart),
    "RunState": _tuple_codec(state.RunState),
    "RunLedger": _tuple_codec(state.RunLedger),
    "ProjectionOptions": _attrs_codec(state.ProjectionOptions)._replace(build=state.ProjectionOptions.unresolved),
    "SubagentState": _attrs_codec(state.SubagentState),
    "LiveLog": _Codec(LiveLog, _live_log_fields, LiveLog, lambda: (int, conversation.Conversation | None)),
    "RecordLog": _Codec(RecordLog, _empty_log_fields, RecordLog, tuple),
    "Vector": _Codec(Vector, lambda v: [tuple(v)], Vector, lambda: (tuple[Any, ...],)),
    **{cls.__name__.lstrip("_"): _attrs_codec(cls) for cls in conversation.STATE_CLASSES},
}
_NAMES = {codec.cls: name for name, codec in _CLASSES.items()}
_PVECTOR: Any = type(pvector())
_PMAP: Any = type(pmap())


def _encode(value: Any) -> Any:
    """``value`` (a state without its events, or any part of one) in the
    tagged JSON form of the module comment. Raises TypeError for a value of a
    type a state is not made of."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool or kind is float:
        return value
    if kind is tuple:
        return ["t", *map(_encode, value)]
    if kind is _PVECTOR:
        return ["v", *map(_encode, value)]
    if kind is _PMAP:
        out: list[Any] = ["m"]
        for k, v in value.items():
            out.append(_encode(k))
            out.append(_encode(v))
        return out
    if kind is IdMap:
        out = ["im"]
        for k, v in value.items():
            out.append(k)
            out.append(_encode(v))
        return out
    if kind is IdSet:
        return ["is", *value]
    name = _NAMES.get(kind)
    if name is None:
        raise TypeError(f"a checkpoint cannot hold a {kind.__module__}.{kind.__qualname__}")
    return [name, *map(_encode, _CLASSES[name].fields(value))]


class _Malformed(Exception):
    """A section that is not what this release writes (becomes CheckpointError "corrupt")."""


_NESTED = frozenset((list, dict))  # what ``_decode`` has to look into (or refuse); any other JSON value is itself


def _decode(value: Any) -> Any:
    """The value the tagged JSON ``value`` stands for; _Malformed if it is not one."""
    if type(value) is not list:
        if isinstance(value, dict):
            raise _Malformed("a JSON object where a value was expected")
        return value
    if not value or type(value[0]) is not str:
        raise _Malformed("an array without a tag")
    tag, rest = value[0], value[1:]
    if tag == "t":
        return tuple([_decode(v) if type(v) in _NESTED else v for v in rest])
    if tag == "v":
        return pvector([_decode(v) if type(v) in _NESTED else v for v in rest])
    if tag == "im":  # ids (str) to values, most of them scalars: the bulk of a long Run's state
        if len(rest) % 2:
            raise _Malformed(f"a map of an odd number of keys and values ({len(rest)})")
        keys = rest[0::2]
        if not all(type(k) is str for k in keys):
            raise _Malformed("an id map holding a key that is not a string")
        return IdMap(zip(keys, [_decode(v) if type(v) in _NESTED else v for v in rest[1::2]], strict=True))
    if tag == "m":
        if len(rest) % 2:
            raise _Malformed(f"a map of an odd number of keys and values ({len(rest)})")
        pairs = [(_decode(rest[i]), _decode(rest[i + 1])) for i in range(0, len(rest), 2)]
        try:
            return pmap(dict(pairs))
        except TypeError as e:  # an unhashable key
            raise _Malformed(str(e)) from None
    if tag == "is":
        if not all(type(k) is str for k in rest):
            raise _Malformed("an id set holding a value that is not a string")
        return IdSet(rest)
    codec = _CLASSES.get(tag)
    if codec is None:
        raise _Malformed(f"an unknown tag {tag[:80]!r}")
    fields = [_decode(v) if type(v) in _NESTED else v for v in rest]  # a scalar stands for itself
    expected = _field_types(tag)
    if len(fields) != len(expected):
        raise _Malformed(f"a {tag} of {len(fields)} fields, not {len(expected)}")
    for value, tp, is_ in zip(fields, expected, _field_checkers(tag), strict=True):
        if not is_(value):
            raise _Malformed(f"a {tag} holding a {type(value).__name__} where a {tp} belongs")
    try:
        return codec.build(*fields)
    except (TypeError, ValueError) as e:
        raise _Malformed(f"a {tag} that does not build ({e})") from None


_FIELD_TYPES: dict[str, tuple[Any, ...]] = {}
_FIELD_CHECKERS: dict[str, tuple[Callable[[Any], bool], ...]] = {}


def _field_checkers(tag: str) -> tuple[Callable[[Any], bool], ...]:
    found = _FIELD_CHECKERS.get(tag)
    if found is None:
        found = _FIELD_CHECKERS[tag] = tuple(map(_checker, _field_types(tag)))
    return found


def _field_types(tag: str) -> tuple[Any, ...]:
    found = _FIELD_TYPES.get(tag)
    if found is None:
        found = _FIELD_TYPES[tag] = _CLASSES[tag].types()
    return found


_CHECKERS: dict[Any, Callable[[Any], bool]] = {}


def _checker(tp: Any) -> Callable[[Any], bool]:
    """The test whether a decoded value (its parts already built and
    checked) is of the annotated type ``tp``, worked out once per type: a
    restore checks thousands of fields against the same few annotations."""
    try:
        return _CHECKERS[tp]
    except KeyError:
        pass
    except TypeError:  # pragma: no cover - an unhashable annotation
        return _make_checker(tp)
    found = _CHECKERS[tp] = _make_checker(tp)
    return found


def _make_checker(tp: Any) -> Callable[[Any], bool]:
    if tp is Any:
        return lambda value: True
    if tp is None or tp is type(None):
        return lambda value: value is None
    origin = typing.get_origin(tp)
    if origin is None:
        return lambda value: type(value) is tp
    args = typing.get_args(tp)
    if origin is Literal:
        return lambda value: type(value) is str and value in args
    if origin is typing.Union or origin is types.UnionType:  # plain classes (and None) by one set lookup
        plain = frozenset(type(None) if a is None else a for a in args
                          if a is None or (a is not Any and typing.get_origin(a) is None))
        others = tuple(_checker(a) for a in args if not (a is None or (a is not Any and typing.get_origin(a) is None)))
        if not others:
            return lambda value: type(value) in plain
        return lambda value: type(value) in plain or any(is_(value) for is_ in others)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _checker(args[0])
            return lambda value: type(value) is tuple and all(map(item, value))
        items = tuple(_checker(a) for a in args)
        return lambda value: (type(value) is tuple and len(value) == len(items)
                              and all(is_(v) for v, is_ in zip(value, items, strict=True)))
    if origin is PVector:
        item = _checker(args[0])
        return lambda value: type(value) is _PVECTOR and all(map(item, value))
    if origin is PMap:
        k_is, v_is = _checker(args[0]), _checker(args[1])
        return lambda value: type(value) is _PMAP and all(k_is(k) and v_is(v) for k, v in value.items())
    if origin is IdMap:
        v_is = _checker(args[0])
        return lambda value: type(value) is IdMap and all(map(v_is, value.values()))
    if origin is Vector:
        item = _checker(args[0])
        return lambda value: type(value) is Vector and all(map(item, value))
    raise TypeError(f"a checkpoint cannot check a field of type {tp}")  # pragma: no cover - a new field type


def _records_json(records: Sequence[Any]) -> bytes:
    return json.dumps(records, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def _records(data: bytes | memoryview) -> tuple[Any, ...]:
    """The records of a section: a JSON array of records, each checked
    against the kinds the library knows (``records.check``: tag, arity and
    values that build the event). _Malformed for anything else."""
    try:
        rows = json.loads(bytes(data).decode("utf-8", "surrogatepass"))
    except ValueError as e:
        raise _Malformed(f"a section of records that is not JSON ({e})") from None
    if type(rows) is not list:
        raise _Malformed("a section of records that is not an array")
    try:
        return check_rows(rows)
    except ValueError as e:
        raise _Malformed(str(e)) from None


def _block(data: bytes | memoryview) -> tuple[tuple[Any, ...], ...]:
    """One sealed block of a RecordLog from its section: BLOCK records in
    chunks of CHUNK. _Malformed for another number of records."""
    rows = _records(data)
    if len(rows) != RecordLog.BLOCK:
        raise _Malformed(f"a sealed block of {len(rows)} records, not {RecordLog.BLOCK}")
    n = RecordLog.CHUNK
    return tuple(rows[i:i + n] for i in range(0, len(rows), n))


# -- encoding -----------------------------------------------------------------------------------

def encode(state: ProjectionState, *, processor_identity: str | None, key: bytes | None = None) -> bytes:
    """The checkpoint of ``state``. Raises ValueError for a state that has
    not bound a Run yet (there is nothing to resume from)."""
    if state.run_id is None or state.thread_id is None:
        raise ValueError("a checkpoint needs a state that has observed at least one item")
    if key is not None and not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"key must be bytes, not {type(key).__name__}")
    events = state.events
    sections: list[bytes | memoryview] = []
    block_digests: list[str] = []
    if isinstance(events, LiveLog):
        sections.append(_state_json(state))
        retained, messages = False, events.messages is not None
    else:
        sections.append(_state_json(state._replace(events=RecordLog())))
        sections.append(_records_json(events.unsealed()))
        blocks = events.sealed_blocks()
        kind = _BLOCK_DIGEST["crc32" if key is None else "hmac-sha256"]
        encoded = blocks.encoded(kind) if isinstance(blocks, _LazyBlocks) else (
            (section, kind(section)) for section in (
                _records_json([r for chunk in block for r in chunk]) for block in blocks))
        for section, digest in encoded:
            sections.append(section)
            block_digests.append(digest)
        retained, messages = True, False
    header = {
        "format": FORMAT, "library": library_version(),
        "thread_id": state.thread_id, "run_id": state.run_id, "last_sequence": state.last_sequence,
        "position": stream_position(state), "event_count": len(events), "finished": state.finished,
        "retained": retained, "messages": messages,
        "processor": processor_digest(processor_identity), "digest": "crc32" if key is None else "hmac-sha256",
        "sections": [len(s) for s in sections], "blocks": block_digests,
    }
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    sealed = b"".join([MAGIC, _U32.pack(len(head)), head, *sections[:2]])
    return b"".join([sealed, *sections[2:], _digest(sealed, key)])


def _state_json(state: ProjectionState) -> bytes:
    return json.dumps(_encode(state), separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def stream_position(state: ProjectionState) -> int:
    """The position of the last item ``state`` has taken in its Run's stream
    (counted as the Host kit's journal counts it: from the root Run's first
    sequence, child Runs' items included)."""
    return state.position


def _digest(data: bytes | memoryview, key: bytes | None) -> bytes:
    if key is None:
        return zlib.crc32(data).to_bytes(4, "big")
    return hmac.new(key, data, hashlib.sha256).digest()


def _crc32_hex(data: bytes | memoryview) -> str:
    return zlib.crc32(data).to_bytes(4, "big").hex()


def _sha256_hex(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


# The digest of a sealed block, by the checkpoint's seal: a CRC-32 beside a CRC-32 (damage only), a
# SHA-256 under an HMAC (which covers the header, and so every block's SHA-256).
_BLOCK_DIGEST: dict[str, Callable[[bytes | memoryview], str]] = {"crc32": _crc32_hex, "hmac-sha256": _sha256_hex}
_HEX_WIDTH = {"crc32": 8, "hmac-sha256": 64}
_HEX = frozenset("0123456789abcdef")


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
            FORMAT, str(header["library"]), str(header["thread_id"]),
            str(header["run_id"]), int(header["last_sequence"]), int(header["position"]), int(header["event_count"]),
            bool(header["finished"]), bool(header["retained"]), bool(header["messages"]),
            None if header["processor"] is None else str(header["processor"]), str(header["digest"]), len(data))
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"a checkpoint header without a valid {e}", problem="corrupt") from None


def decode(data: bytes | memoryview, *, processor_identity: str | None, run_id: str | None = None,
           key: bytes | None = None) -> ProjectionState:
    """The state checkpoint ``data`` holds, once everything checks out.

    Never runs code named by the checkpoint: it is JSON, decoded into the
    state's own types only (see the module comment). Raises TypeError for
    data that is not bytes, and CheckpointError: for bytes that are not a
    checkpoint ("format"), of another format or library version
    ("version"), whose digest or contents do not match, or that were
    written with a key when none is given or the other way round
    ("corrupt"), of another Run than ``run_id`` ("foreign"), or written
    under another processor identity ("processor"). Pure: returns a new
    value.
    """
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)  # the restored log keeps views of it: they must not change
    info = inspect(data)
    if info.library != library_version():
        raise CheckpointError(f"a checkpoint written by harness-agui {info.library}; this is "
                              f"{library_version()}", problem="version")
    sealed = _layout(data, key, info)
    if info.processor != processor_digest(processor_identity):
        raise CheckpointError("a checkpoint written under another processor (its processor identity differs)",
                              problem="processor")
    if run_id is not None and info.run_id != run_id:
        raise CheckpointError(f"a checkpoint of run {info.run_id!r}, not of run {run_id!r}", problem="foreign")
    try:
        state = _decode(json.loads(bytes(sealed.state).decode("utf-8", "surrogatepass")))
        if type(state) is not ProjectionState:
            raise _Malformed(f"it holds a {type(state).__name__}, not a projection state")
        if info.retained:
            if type(state.events) is not RecordLog or len(state.events):
                raise _Malformed("the events of a retained checkpoint are not in their sections")
            # Each sealed block is checked against its digest, decoded and its records checked when it is
            # first read (_LazyBlocks): restoring costs the state, not the events.
            blocks: Any = _LazyBlocks(sealed.blocks, sealed.digests, _BLOCK_DIGEST[info.digest])
            events = RecordLog.from_blocks(blocks, _records(sealed.unsealed))
            state = state._replace(events=events)
        elif type(state.events) is not LiveLog:
            raise _Malformed("a live-only checkpoint whose state keeps no live-only log")
    except _Malformed as e:
        raise CheckpointError(f"a checkpoint whose state does not decode: {e}", problem="corrupt") from None
    except (ValueError, RecursionError) as e:  # JSON that does not parse, or nests beyond any state
        raise CheckpointError(f"a checkpoint whose state does not decode ({type(e).__name__}: {e})",
                              problem="corrupt") from None
    if (state.run_id != info.run_id or state.thread_id != info.thread_id
            or state.last_sequence != info.last_sequence or stream_position(state) != info.position
            or state.finished != info.finished or len(state.events) != info.event_count):
        raise CheckpointError("a checkpoint whose state does not match its header", problem="corrupt")
    try:
        check_state(state)
    except InconsistentState as e:
        raise CheckpointError(f"a checkpoint whose state does not hold together: {e}", problem="corrupt") from None
    return state


class _Sealed(NamedTuple):
    """A checkpoint's sections, its seal checked (``_layout``)."""

    state: memoryview
    unsealed: memoryview  # empty for a live-only checkpoint
    blocks: tuple[memoryview, ...]  # the sealed blocks, each to check against its digest when read
    digests: tuple[str, ...]


def _layout(data: bytes | memoryview, key: bytes | None, info: CheckpointInfo) -> _Sealed:
    """The sections of checkpoint ``data`` once its seal matches: the seal
    covers the magic, the header (and so the lengths and each block's
    digest) and the sections before the first sealed block. Reads nothing
    of the blocks but their first and last bytes. CheckpointError
    ("corrupt") for a seal that does not match or sections that do not add
    up."""
    expected_digest = "crc32" if key is None else "hmac-sha256"
    if info.digest != expected_digest:
        raise CheckpointError(f"a checkpoint sealed with {info.digest}, read as {expected_digest} (a key is "
                              f"needed exactly when it was written with one)", problem="corrupt")
    header, at = _header(data)
    view = memoryview(data)
    end = len(view) - _TRAILER[expected_digest]
    lengths, digests = header.get("sections"), header.get("blocks")
    eager = 2 if info.retained else 1
    width = _HEX_WIDTH[expected_digest]
    if (not isinstance(lengths, list) or not all(type(n) is int and n >= 0 for n in lengths)
            or len(lengths) < eager or (not info.retained and len(lengths) != 1) or at + sum(lengths) != end
            or not isinstance(digests, list) or len(digests) != len(lengths) - eager
            or not all(type(d) is str and len(d) == width and _HEX.issuperset(d) for d in digests)):
        raise CheckpointError("a checkpoint whose sections do not add up", problem="corrupt")
    covered = at + sum(lengths[:eager])
    if end < len(MAGIC) or not hmac.compare_digest(_digest(view[:covered], key), bytes(view[end:])):
        what = "its checksum does not match its contents" if key is None else "its HMAC does not match (damaged, " \
            "or sealed with another key)"
        raise CheckpointError(f"a damaged checkpoint: {what}", problem="corrupt")
    sections = []
    for n in lengths:
        sections.append(view[at:at + n])
        at += n
    blocks = tuple(sections[eager:])
    for i, block in enumerate(blocks):  # a cheap look at the framing: a block is an array of arrays
        if bytes(block[:2]) != b"[[" or bytes(block[-2:]) != b"]]":
            raise CheckpointError(f"a checkpoint whose block {i} is not an array of records", problem="corrupt")
    return _Sealed(sections[0], sections[1] if info.retained else view[:0], blocks, tuple(digests))


def verify_seal(data: bytes | memoryview, key: bytes | None) -> memoryview:
    """Check that checkpoint ``data`` is sealed as ``key`` says (its HMAC
    under ``key``, or its CRC-32 for None), its sealed blocks included
    (each against the digest its header gives), and return everything
    before the seal. Reads every byte (a restore does not: it checks each
    block when the block is first read). Raises TypeError for data that is
    not bytes and CheckpointError for bytes that are not a checkpoint
    ("format", "version") or whose seal or a block's digest does not match
    ("corrupt")."""
    info = inspect(data)
    sealed = _layout(data, key, info)
    digest = _BLOCK_DIGEST[info.digest]
    for i, (block, expected) in enumerate(zip(sealed.blocks, sealed.digests, strict=True)):
        if not hmac.compare_digest(digest(block), expected):
            raise _damaged_block(i)
    view = memoryview(data)
    return view[:len(view) - _TRAILER[info.digest]]


def _damaged_block(index: int) -> CheckpointError:
    return CheckpointError(f"a damaged checkpoint: block {index} does not match its digest", problem="corrupt")


# -- the lazily decoded blocks of a restored RecordLog -----------------------------------------------

class _LazyBlocks:
    """The sealed blocks of a RecordLog restored from a checkpoint, in the
    place of its persistent vector (the same operations: len, index,
    iterate, extend, compare): each block is checked against its digest,
    decoded and its records checked (``_block``) on first read, and then
    kept; one that fails raises CheckpointError ("corrupt") on every read.
    The cache is filled, never changed, with values equal to what a decode
    gives, so the object behaves as the immutable value it stands for."""

    __slots__ = ("_sealed", "_digests", "_digest", "_cache", "_more")

    def __init__(self, sealed: tuple[bytes | memoryview, ...], digests: tuple[str, ...],
                 digest: Callable[[bytes | memoryview], str], cache: list[Any] | None = None,
                 more: PVector[Any] | None = None) -> None:
        self._sealed = sealed
        self._digests = digests
        self._digest = digest
        self._cache = cache if cache is not None else [None] * len(sealed)
        self._more: PVector[Any] = more if more is not None else pvector()

    def encoded(self, digest: Callable[[bytes | memoryview], str]) -> Iterator[tuple[bytes | memoryview, str]]:
        """Every block as its section's bytes and their ``digest``: the
        sealed ones as they came, once read and checked (a checkpoint never
        seals again what it could not vouch for; CheckpointError for one
        that fails)."""
        for i, section in enumerate(self._sealed):
            self[i]
            yield section, self._digests[i] if digest is self._digest else digest(section)
        for block in self._more:
            section = _records_json([r for chunk in block for r in chunk])
            yield section, digest(section)

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
                section = self._sealed[index]
                if not hmac.compare_digest(self._digest(section), self._digests[index]):
                    raise _damaged_block(index)
                try:
                    block = self._cache[index] = _block(section)
                except _Malformed as e:
                    raise CheckpointError(f"a checkpoint whose block {index} does not decode: {e}",
                                          problem="corrupt") from None
            return block
        return self._more[index - sealed]

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def extend(self, blocks: Sequence[Any]) -> _LazyBlocks:
        return _LazyBlocks(self._sealed, self._digests, self._digest, self._cache, self._more.extend(blocks))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (_LazyBlocks, PVector)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return pvector, (list(self),)

    def __repr__(self) -> str:
        return f"<{len(self)} blocks, {sum(b is not None for b in self._cache)} of {len(self._sealed)} decoded>"
