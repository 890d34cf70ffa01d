# The a13n-harness adapter: its stream items to source items and back.
#
# ``from_a13n`` turns an item that an a13n-harness Run yields (0.21, 0.20 or
# 0.5, ``SUPPORTED``: a ``HarnessEvent`` or the terminal
# ``HarnessRunResultEvent``, forwarded child items included) into the source
# item of this library; ``to_a13n`` rebuilds
# the a13n-harness object. The pair is lossless for every item of a real Run:
# ``to_a13n(decode(encode(from_a13n(x))))`` equals ``x`` (``a13n_equal``,
# since a ``HarnessRunResult`` compares by identity).
#
# How each value crosses:
#   - the classes the projection reads (parts, deltas, tool calls and results,
#     inputs, extensions, the result's status, usage, failure and deferred
#     calls) map field by field onto the typed source model. The field lists
#     are not written here: a source class's declared fields are read from
#     the native object's attributes of the same names, each converted by its
#     declared kind (JSON checked and copied, a nested value converted in
#     turn, tool content typed), and only where a13n-harness names or holds a
#     field differently does ``_FROM`` say so;
#   - nested values the projection never reads are kept as the JSON that
#     pydantic itself writes for their exact type and rebuilt by the same
#     type's validator: provider details, citations, metadata, enqueued
#     messages, the HarnessState, usage records, the message history;
#   - binary data stays bytes (``BinaryContent``), raw ``bytes`` a tool
#     returned included (as ``application/octet-stream``); other multimodal
#     items become ``MediaContent`` with pydantic's JSON;
#   - a part, delta or event of a class this release does not model (or a
#     subclass of one it does: a typed tool part) becomes ``UnknownPart`` /
#     ``UnknownDelta`` / ``UnknownEvent``, a capability event other than an
#     input a ``CapabilityEvent``: its kind and pydantic's JSON (by its
#     union's adapter, or by its own class's where the union cannot write it,
#     an extension's event: the union would warn and guess), rebuilt by
#     pydantic-ai's own discriminated unions;
#   - a completed Run's output is ``output_json()`` (the output type's own
#     JSON form); ``to_a13n(..., output_type=T)`` validates it back into a T
#     and gives the result T's adapter, without it the output stays JSON;
#     likewise a tool's result that is a Python object (a pydantic model) is
#     kept as its JSON form, and ``to_a13n(..., tool_types={"tool": T})``
#     validates the results of that tool back into a T;
#   - ``all_messages()`` / ``new_messages()`` of a result need its message
#     history: it is kept in ``RunResult.history`` and handed back to
#     ``HarnessRunResult``'s own (private) constructor arguments, the only way
#     a rebuilt result can answer them.
#
# What cannot cross unchanged: a tool result of raw ``bytes`` comes back as
# pydantic-ai ``BinaryContent`` (pydantic-ai's own JSON of a message history
# turns it into a base64 string); metadata that is a Python object rather
# than JSON is kept as its JSON form; ``Usage.reasoning_tokens`` (from older
# journals) has no place in a13n's ``RunUsageSummary``. A value that pydantic
# cannot write as JSON either (an arbitrary object) is a ValueError naming
# the field. The real Runs in tests/fixtures/a13n hold none of these.
#
# ``from_a13n`` sits on a Host's live path, once per item, so its converters
# are generated from the declarations (one function per native class, built
# on first use), and each builds its source value with the statements of
# ``core._fast_source.construction``: the constructors' checks without
# attrs' __init__. ``bench/a13n.py`` measures it against the public
# constructors. ``to_a13n`` runs once per item read back,
# and takes the plain path.
#
# a13n-harness needs Python 3.13; this module imports it (and pydantic-ai)
# only when one of its functions is called, so ``harness_agui`` keeps working
# on 3.11 without it. Install it with ``pip install 'harness-agui[a13n]'``
# (0.20, 0.21) or ``'harness-agui[a13n05]'`` (0.5). What differs in 0.5: a
# suspended Run's deferred calls are pydantic-ai's own ``ToolCallPart`` values
# (a ``DeferredToolCall`` without target identity or model call; one with
# either is a ValueError there), and a result has no ``output_json()`` nor
# output adapter (the output's JSON is pydantic's). The installed release is
# checked from its metadata when the package (``harness_agui.a13n``, which
# this module's names are imported from) is imported: another one is refused
# there, before this module can be.

from __future__ import annotations

import copy
import dataclasses
import functools
import typing
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import attrs
from pydantic.errors import PydanticUserError

from .._a13n_release import installed_release
from ..core._fast_source import builder, construction
from ..core._generated import define
from ..core._json import check_json, copy_json
from ..core.fields import field_spec
from ..core.source import (
    BinaryContent,
    BuiltinToolReturnPart,
    CapabilityEvent,
    ContentList,
    Deferred,
    DeferredToolCall,
    DeferredToolRequestsEvent,
    EnqueuedMessagesEvent,
    ExtensionEvent,
    Failure,
    FilePart,
    FinalResultEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    MediaContent,
    MessageHistory,
    ObservationEvent,
    Part,
    PartDelta,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    Payload,
    RetryInfo,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallEvent,
    ToolCallPart,
    ToolCallPartDelta,
    ToolContent,
    ToolResultEvent,
    UnknownDelta,
    UnknownEvent,
    UnknownPart,
    Usage,
)

__all__ = ["from_a13n", "to_a13n", "a13n_equal", "a13n_differences"]

_OCTETS = "application/octet-stream"
"""The media type of raw ``bytes`` a tool returned."""


@functools.cache
def _lib() -> SimpleNamespace:
    """a13n-harness and pydantic-ai, imported on first use, and the pydantic
    adapters built from them (after a13n-harness registered its events).

    a13n-harness 0.5 holds a suspended Run's deferred calls as pydantic-ai's
    own ``DeferredToolRequests`` (plain ``ToolCallPart`` values) and gives a
    result no output adapter; 0.20 and later wrap each call in its own
    ``DeferredToolCall`` (the model's call, the target call and the target's
    identity). ``release`` says which."""
    found = installed_release()  # a supported one: the package refused any other when it was imported
    series = None if found is None else found[1]
    try:
        if series is None:
            raise ImportError("No distribution named a13n-harness is installed")
        import a13n_harness as a13n  # type: ignore[import-not-found, unused-ignore]
        import pydantic_ai.messages as pai  # type: ignore[import-not-found, unused-ignore]
        from a13n_harness.usage import (  # type: ignore[import-not-found, unused-ignore]
            ModelUsageRecord,
            ProviderUsageRecord,
            RunUsageSummary,
        )
        from pydantic import TypeAdapter
        from pydantic_ai._deferred import (  # type: ignore[import-not-found, unused-ignore]
            DeferredToolRequests as PaiDeferredToolRequests,
        )

        if series >= (0, 20):
            from a13n_harness.tools.deferred import (  # type: ignore[import-not-found, unused-ignore]
                DeferredToolCall as A13nDeferredToolCall,
            )
            from a13n_harness.tools.deferred import (  # type: ignore[import-not-found, unused-ignore]
                DeferredToolRequests as A13nDeferredToolRequests,
            )
        else:
            A13nDeferredToolCall, A13nDeferredToolRequests = None, PaiDeferredToolRequests
    except ImportError as e:
        if series is None:
            raise ImportError(
                "harness_agui.a13n needs a13n-harness (Python 3.13+): pip install 'harness-agui[a13n]' "
                "(a13n-harness 0.20 or 0.21) or 'harness-agui[a13n05]' (a13n-harness 0.5)") from e
        raise ImportError(f"harness_agui.a13n: a13n-harness {series[0]}.{series[1]} is installed but a name "
                          f"this adapter reads from it (or from pydantic-ai) cannot be imported: {e}") from e
    return SimpleNamespace(
        release=series,
        a13n=a13n,
        pai=pai,
        TypeAdapter=TypeAdapter,
        A13nDeferredToolCall=A13nDeferredToolCall,
        A13nDeferredToolRequests=A13nDeferredToolRequests,
        PaiDeferredToolRequests=PaiDeferredToolRequests,
        ModelUsageRecord=ModelUsageRecord,
        ProviderUsageRecord=ProviderUsageRecord,
        RunUsageSummary=RunUsageSummary,
        events=TypeAdapter(pai.AgentStreamEvent),
        parts=TypeAdapter(pai.ModelResponsePart),
        deltas=TypeAdapter(pai.ModelResponsePartDelta),
        messages=TypeAdapter(tuple[pai.ModelMessage, ...]),
        request_parts=TypeAdapter(tuple[pai.ModelRequestPart, ...]),
        citations=TypeAdapter(list[pai.Citation]),
        user_content=TypeAdapter(pai.UserContent),
        rich=(*pai.MULTI_MODAL_CONTENT_TYPES, pai.TextContent, pai.CachePoint),
    )


# -- a13n-harness to source items --------------------------------------------------------------

def from_a13n(item: Any) -> HarnessStreamEvent:
    """The source item of an a13n-harness stream item.

    Raises TypeError for anything that is not an a13n ``HarnessEvent`` or
    ``HarnessRunResultEvent``, ValueError for a value the source model
    refuses or one pydantic cannot write as JSON (it names the field),
    ImportError without a13n-harness.
    """
    convert = (_CONVERTERS or _converters()).items.get(type(item))
    if convert is None:
        raise TypeError(f"from_a13n() takes an a13n-harness HarnessEvent or HarnessRunResultEvent, "
                        f"not {type(item).__module__}.{type(item).__qualname__}")
    result: HarnessStreamEvent = convert(item)
    return result


def _detached(value: Any, what: str) -> Any:
    """A detached JSON copy of ``value``; a Python value that is not JSON
    becomes pydantic's JSON form of it. ValueError naming ``what`` for a
    value that is neither."""
    try:
        check_json(value, what)
    except TypeError:
        import pydantic_core

        try:
            value = pydantic_core.to_jsonable_python(value)
        except (ValueError, TypeError) as e:  # PydanticSerializationError, UnicodeDecodeError
            raise ValueError(f"{what} holds a {type(value).__name__}, which is neither JSON nor content that "
                             f"pydantic can write as JSON ({type(e).__name__}: {e})") from None
        check_json(value, what)
        return value
    return copy_json(value)


def _dumped(adapter: Any, value: Any, what: str) -> Any:
    """pydantic's JSON form of ``value`` by ``adapter``, as plain JSON;
    ValueError naming ``what`` if pydantic cannot write it."""
    try:
        return adapter.dump_python(value, mode="json")
    except (ValueError, TypeError, AttributeError) as e:
        # AttributeError: a union's serializer reading a field the value's class lacks (a13n-harness 0.5's
        # FunctionToolResultEvent holding a RetryPromptPart, which has no ``tool_kind``)
        raise ValueError(f"{what}: pydantic cannot write it as JSON ({type(e).__name__}: {e})") from None


def _dumped_unknown(adapter: Any, value: Any, what: str) -> Any:
    """pydantic's JSON form of ``value`` by its union's ``adapter`` when the
    union serializes it (a subclass of a member included), else by its own
    class's adapter: a class outside the union (an extension's event) would
    make the union warn and fall back to inferring its fields. ValueError
    naming ``what`` if pydantic cannot write it either way."""
    try:
        return adapter.dump_python(value, mode="json", warnings="error")
    except (ValueError, TypeError, AttributeError):
        pass
    try:
        own = _adapter_of(value.__class__)
    except (TypeError, PydanticUserError) as e:  # PydanticSchemaGenerationError: not a class pydantic knows
        raise ValueError(f"{what}: pydantic cannot write it as JSON ({type(e).__name__}: {e})") from None
    return _dumped(own, value, what)


@functools.lru_cache(maxsize=128)
def _adapter_of(cls: type) -> Any:
    return _lib().TypeAdapter(cls)


def _without(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys}


_build_binary = builder(BinaryContent)


def _binary_from(value: Any) -> BinaryContent:
    metadata = value.vendor_metadata
    return _build_binary(bytes(value.data), value.media_type, value.identifier,
                         None if metadata is None else _detached(metadata, "BinaryContent.vendor_metadata"))


def _item_from(lib: SimpleNamespace, value: Any, what: str) -> Any:
    if isinstance(value, lib.pai.BinaryContent):
        return _binary_from(value)
    if isinstance(value, (bytes, bytearray)):
        return BinaryContent(data=bytes(value), media_type=_OCTETS)
    if isinstance(value, lib.rich):
        data = _dumped(lib.user_content, value, what)
        return MediaContent(kind=data["kind"], data=_without(data, "kind"))
    return _detached(value, what)


def _content_from(lib: SimpleNamespace, value: Any, what: str) -> ToolContent:
    """Tool or user content: JSON stays JSON; raw bytes, a binary or media
    item, or a list holding one, becomes the typed form."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(x, (*lib.rich, bytes, bytearray)) for x in value):
        return ContentList(items=tuple(_item_from(lib, x, what) for x in value))
    return _item_from(lib, value, what)  # type: ignore[no-any-return]


def _result_from(lib: SimpleNamespace, r: Any) -> RunResult:
    try:
        messages = r.all_messages()
        new = len(messages) - len(r.new_messages())
    except (ValueError, TypeError) as e:
        raise ValueError(f"RunResult.history: a13n-harness could not give the Run's messages "
                         f"({type(e).__name__}: {e})") from None
    d = r.deferred
    deferred = None if d is None else Deferred(
        calls=tuple(_deferred_call_from(lib, c) for c in d.calls),
        approvals=tuple(_deferred_call_from(lib, c) for c in d.approvals),
        metadata=_detached(d.metadata, "Deferred.metadata"))
    try:
        state = None if r.state is None else r.state.model_dump(mode="json", by_alias=True)
    except (ValueError, TypeError) as e:
        raise ValueError(f"RunResult.state: pydantic cannot write it as JSON ({type(e).__name__}: {e})") from None
    return RunResult(
        status=r.status,
        output=_output_json(r) if r.status == "completed" else None,
        usage=_convert(r.usage),
        failure=None if r.failure is None else _convert(r.failure),
        deferred=deferred,
        suspend_reason=r.suspend_reason,
        state=state,
        usage_records=[_dumped(lib.TypeAdapter(type(record)), record, "RunResult.usage_records")
                       for record in r.usage_records],
        history=MessageHistory(messages=_dumped(lib.messages, messages, "RunResult.history"), new_message_index=new),
    )


def _output_json(r: Any) -> Any:
    """A completed Run's output as JSON: a13n-harness 0.20 and later give it
    themselves (``output_json()``, by the output type's adapter); 0.5 has no
    such method, and its output is written as pydantic writes any value (what
    a13n-stream-protocol 0.5 publishes)."""
    own = getattr(r, "output_json", None)
    return own() if own is not None else _detached(r.output, "RunResult.output")


def _deferred_call_from(lib: SimpleNamespace, call: Any) -> DeferredToolCall:
    if lib.A13nDeferredToolCall is None:  # a13n-harness 0.5: the model's ToolCallPart itself
        part = _convert(call)
        plain = ToolCallPart(tool_name=part.tool_name, args=part.args, tool_call_id=part.tool_call_id)
        return DeferredToolCall(tool_call_id=part.tool_call_id, tool_name=part.tool_name, args=part.args,
                                target_call=None if part == plain else part)
    target = _convert(call.target_call)
    model = _convert(call.model_call)
    plain = ToolCallPart(tool_name=target.tool_name, args=target.args, tool_call_id=target.tool_call_id)
    return DeferredToolCall(tool_call_id=target.tool_call_id, tool_name=target.tool_name, args=target.args,
                            target_identity=call.target_identity, target_call=None if target == plain else target,
                            model_call=None if model == target else model)


# How a13n-harness holds what a source class declares, where it differs from
# "the native attribute of the same name": per native class (by its name in
# pydantic_ai.messages, ``a13n.`` for a13n_harness), the source class, where
# the fields are read from (``base``, an expression of the native value ``n``;
# ``lib.`` names a class the adapter imports from elsewhere in a13n_harness),
# expressions for fields held differently (already converted), and a
# ``guard`` without which the value is one this release does not model (it
# becomes an Unknown value of its union). Every other field is read by name
# and converted by its declared kind.
@attrs.frozen
class _From:
    source: type
    base: str = "n"
    fields: Mapping[str, str] = attrs.field(factory=dict)
    guard: str | None = None


_FROM: dict[str, _From] = {
    "TextPart": _From(TextPart, fields={
        "citations": "None if n.citations is None else _citations(n.citations, 'TextPart.citations')"}),
    "ThinkingPart": _From(ThinkingPart),
    "ToolCallPart": _From(ToolCallPart, fields={"builtin": "False"}),
    "NativeToolCallPart": _From(ToolCallPart, fields={"builtin": "True"}),
    "NativeToolReturnPart": _From(BuiltinToolReturnPart),
    "FilePart": _From(FilePart, guard="isinstance(n.content, _lib.pai.BinaryContent)"),
    "TextPartDelta": _From(TextPartDelta, fields={"citations_delta": (
        "None if n.citations_delta is None else _citations(n.citations_delta, 'TextPartDelta.citations_delta')")}),
    "ThinkingPartDelta": _From(ThinkingPartDelta, guard="not callable(n.provider_details)"),
    "ToolCallPartDelta": _From(ToolCallPartDelta),
    "PartStartEvent": _From(PartStartEvent),
    "PartDeltaEvent": _From(PartDeltaEvent),
    "PartEndEvent": _From(PartEndEvent),
    "FinalResultEvent": _From(FinalResultEvent),
    "FunctionToolCallEvent": _From(ToolCallEvent, fields={"output": "False"},
                                   guard="type(n.part) is _lib.pai.ToolCallPart"),
    "OutputToolCallEvent": _From(ToolCallEvent, fields={"output": "True"},
                                 guard="type(n.part) is _lib.pai.ToolCallPart"),
    "FunctionToolResultEvent": _From(ToolResultEvent, base="n.part", fields={
        "user_content": "_content(_lib, n.content, 'ToolResultEvent.user_content')", "output": "False"},
        guard="type(n.part) is _lib.pai.ToolReturnPart"),
    "OutputToolResultEvent": _From(ToolResultEvent, base="n.part", fields={"user_content": "None", "output": "True"},
                                   guard="type(n.part) is _lib.pai.ToolReturnPart"),
    "RetryInfo": _From(RetryInfo),
    "DeferredToolRequestsEvent": _From(DeferredToolRequestsEvent, base="n.requests", guard=(
        "type(n.requests) is _lib.PaiDeferredToolRequests and all(type(c) is _lib.pai.ToolCallPart "
        "for c in (*n.requests.calls, *n.requests.approvals))")),
    "EnqueuedMessagesEvent": _From(EnqueuedMessagesEvent, fields={
        "messages": "_dumped(_lib.messages, tuple(n.messages), 'EnqueuedMessagesEvent.messages')",
        "parts": "_dumped(_lib.request_parts, tuple(n.parts), 'EnqueuedMessagesEvent.parts')"}),
    "a13n.InputTextEvent": _From(InputEvent, fields={"metadata": "n.metadata.model_dump(mode='json')"}),
    "a13n.InputMediaEvent": _From(InputEvent, fields={"metadata": "n.metadata.model_dump(mode='json')"}),
    "a13n.HarnessExtensionEvent": _From(ExtensionEvent),
    "a13n.HarnessEvent": _From(HarnessEvent),
    "a13n.HarnessRunResultEvent": _From(HarnessRunResultEvent, fields={"result": "_result(_lib, n.result)"}),
    "a13n.SafeFailure": _From(Failure),
    "lib.RunUsageSummary": _From(Usage, fields={
        "reasoning_tokens": "None", "audio_seconds": "str(n.audio_seconds)",
        # a13n-harness 0.5 has no coverage field
        "model_usage_coverage": "getattr(n, 'model_usage_coverage', None)",
        "cost": "None if n.cost is None else str(n.cost)"}),
}

# What a native value of a class the table does not name becomes, by where it stands.
_UNKNOWN_OF = {"part": "parts", "delta": "deltas", "payload": "events"}


def _unknown(lib: SimpleNamespace, union: str, value: Any) -> Any:
    """A native value this release does not model, as its union's Unknown
    value (a capability event as a CapabilityEvent): its kind and pydantic's
    JSON of the rest."""
    where = {"part": "UnknownPart.data", "delta": "UnknownDelta.data", "payload": "UnknownEvent.data"}[union]
    data = _dumped_unknown(getattr(lib, _UNKNOWN_OF[union]), value, where)
    if union == "part":
        return UnknownPart(part_kind=data["part_kind"], data=_without(data, "part_kind"))
    if union == "delta":
        return UnknownDelta(part_delta_kind=data["part_delta_kind"], data=_without(data, "part_delta_kind"))
    if isinstance(value, lib.pai.CapabilityEvent):
        return CapabilityEvent(kind=value.kind, capability_id=value.capability_id, tool_call_id=value.tool_call_id,
                               tool_name=value.tool_name, data=_without(data, "kind", "capability_id",
                                                                        "tool_call_id", "tool_name", "event_kind"))
    return UnknownEvent(event_kind=data["event_kind"], data=_without(data, "event_kind"))


def _citations(value: Any, what: str) -> Any:
    return _dumped(_lib().citations, value, what)


@attrs.frozen
class _Converters:
    items: dict[type, Callable[[Any], Any]]  # the two envelopes
    by_class: dict[type, Callable[[Any], Any]]  # every native class of the table


_CONVERTERS: _Converters | None = None


def _converters() -> _Converters:
    """The converters ``from_a13n`` uses, generated once."""
    global _CONVERTERS
    _CONVERTERS = _converter_set(lambda cls: None)
    return _CONVERTERS


def _converter_set(construct: Callable[[type], Callable[..., Any] | None]) -> _Converters:
    """A converter of every native class in ``_FROM``, each building its
    source value with ``construct(cls)``, or when that is None with
    ``core._fast_source``'s statements in the converter itself
    (``bench/a13n.py`` compares with the class itself and its builder)."""
    lib = _lib()
    by_class: dict[type, Callable[[Any], Any]] = {}

    def nested(value: Any) -> Any:
        return by_class[type(value)](value)

    for name, spec in _FROM.items():
        where, _, attr = name.rpartition(".")
        native = getattr({"a13n": lib.a13n, "lib": lib, "": lib.pai}[where], attr)
        by_class[native] = _compile(lib, spec, by_class, nested, construct(spec.source))
    return _Converters({c: by_class[c] for c in (lib.a13n.HarnessEvent, lib.a13n.HarnessRunResultEvent)}, by_class)


def _convert(value: Any) -> Any:
    """The source value of a native value of a class in ``_FROM``."""
    return (_CONVERTERS or _converters()).by_class[type(value)](value)


# The conversion of a field read by name, by its declared kind: ``{v}`` is the
# native value (a local), ``{w}`` the field's name for errors.
_BY_KIND = {
    "json": "{v} if {v} is None else _detached({v}, {w})",
    "object": "{v} if {v} is None else _detached({v}, {w})",
    "array": "{v} if {v} is None else _detached({v}, {w})",
    "args": "{v} if {v} is None or type({v}) is str else _detached({v}, {w})",
    "text_or_object": "{v} if type({v}) is str else _detached({v}, {w})",
    "content": "_content(_lib, {v}, {w})",
    "binary": "bytes({v})",
    "nested": "{v} if {v} is None else _nested({v})",
    "part": "(_by_class.get(type({v})) or _unknown_part)({v})",
    "delta": "(_by_class.get(type({v})) or _unknown_delta)({v})",
    "payload": "(_by_class.get(type({v})) or _unknown_payload)({v})",
    "tuple": "tuple(map(_nested, {v}))",
}


def _compile(lib: SimpleNamespace, spec: _From, by_class: dict[type, Callable[[Any], Any]],
             nested: Callable[[Any], Any], build: Callable[..., Any] | None) -> Callable[[Any], Any]:
    """The converter of one native class: reads each field (from ``spec.base``,
    or as ``spec.fields`` says), converts it by its declared kind (a union
    member through ``by_class``, an unknown one into its Unknown value), and
    builds the source value: with ``build``, or when it is None with the
    statements of ``core._fast_source.construction`` in the converter itself
    (one call per value instead of two)."""
    cls = spec.source
    names = [f"v{i}" for i in range(len(attrs.fields(cls)))]
    if build is None:
        construct, namespace = construction(cls, names)
    else:
        construct, namespace = [f"o = _build({', '.join(names)})"], {"_build": build}
    namespace.update({
        "_lib": lib, "_by_class": by_class, "_nested": nested, "_detached": _detached,
        **{f"_unknown_{family}": functools.partial(_unknown, lib, family) for family in _UNKNOWN_OF},
        "_content": _content_from, "_dumped": _dumped, "_citations": _citations, "_result": _result_from,
        "_binary": _binary_from,
    })
    lines = ["def convert(n):"]
    if spec.guard is not None:
        union = next(f for f, members in _UNIONS.items() if cls in members)
        namespace["_otherwise"] = functools.partial(_unknown, lib, union)
        lines.append(f"    if not ({spec.guard}): return _otherwise(n)")
    if spec.base != "n":
        lines.append(f"    b = {spec.base}")
    for a, v in zip(attrs.fields(cls), names, strict=True):
        if a.name in spec.fields:
            lines.append(f"    {v} = {spec.fields[a.name]}")
            continue
        lines.append(f"    {v} = {'n' if spec.base == 'n' else 'b'}.{a.name}")
        kind = field_spec(a).kind
        conversion = "_binary({v})" if kind.cls is BinaryContent else _BY_KIND.get(kind.wire)
        if conversion is not None:
            lines.append(f"    {v} = " + conversion.format(v=v, w=repr(f"{cls.__name__}.{a.name}")))
    lines.extend("    " + line for line in construct)
    lines.append("    return o")
    convert: Callable[[Any], Any] = define("\n".join(lines), "convert", f"converter {cls.__name__}", namespace)
    return convert


_UNIONS: dict[str, tuple[type, ...]] = {"part": typing.get_args(Part), "delta": typing.get_args(PartDelta),
                                        "payload": typing.get_args(Payload)}


# -- source items to a13n-harness --------------------------------------------------------------

def to_a13n(item: HarnessStreamEvent, *, output_type: Any = None, tool_types: Mapping[str, Any] | None = None) -> Any:
    """The a13n-harness stream item a source item describes.

    ``output_type`` is the Run's output type (a pydantic model, say): a
    completed result's output is validated into it and the result gets its
    adapter, as the Harness built it. Without it the output stays the JSON
    value (what ``output_json()`` gives either way). ``tool_types`` maps a
    tool's name to the type its results were (a pydantic model a tool
    returned): the content of that tool's results is validated back into it.
    Without it such a result stays its JSON form.

    Raises TypeError for anything but a source item, ValueError (pydantic's
    ValidationError) for a value a13n-harness refuses, ImportError without
    a13n-harness.
    """
    lib = _lib()
    types = {} if tool_types is None else {name: lib.TypeAdapter(t) for name, t in tool_types.items()}
    if isinstance(item, HarnessEvent):
        return lib.a13n.HarnessEvent(thread_id=item.thread_id, run_id=item.run_id, sequence=item.sequence,
                                     occurred_at=item.occurred_at, event=_to(lib, item.event, types))
    if isinstance(item, HarnessRunResultEvent):
        return lib.a13n.HarnessRunResultEvent(thread_id=item.thread_id, run_id=item.run_id, sequence=item.sequence,
                                              occurred_at=item.occurred_at,
                                              result=_result_to(lib, item, output_type))
    raise TypeError(f"to_a13n() takes a HarnessEvent or HarnessRunResultEvent, not {type(item).__name__}")


_OMIT = object()  # a keyword left out, so that the native class fills in its own default


def _fields_to(lib: SimpleNamespace, value: Any, types: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """The keyword arguments of the native class of ``value``: every declared
    field under its own name, converted back by its kind, but for
    ``overrides`` (``_OMIT`` leaves a field out)."""
    out: dict[str, Any] = {}
    for a in attrs.fields(type(value)):
        if a.name in overrides:
            if overrides[a.name] is not _OMIT:
                out[a.name] = overrides[a.name]
            continue
        v = getattr(value, a.name)
        wire = field_spec(a).kind.wire
        if v is None or wire in ("str", "int", "bool", "choice", "datetime", "binary"):
            out[a.name] = v
        elif wire == "content":
            out[a.name] = _content_to(lib, v)
        elif wire in ("nested", "part", "delta", "payload"):
            out[a.name] = _to(lib, v, types)
        elif wire == "tuple":
            out[a.name] = [_to(lib, x, types) for x in v]
        else:
            out[a.name] = copy_json(v)
    return out


def _to(lib: SimpleNamespace, value: Any, types: Mapping[str, Any]) -> Any:
    """The native value of a source part, delta, payload or nested value."""
    pai, a13n = lib.pai, lib.a13n
    match value:
        case TextPart() | TextPartDelta():
            name = "citations" if isinstance(value, TextPart) else "citations_delta"
            citations = getattr(value, name)
            return getattr(pai, type(value).__name__)(**_fields_to(lib, value, types, **{
                name: None if citations is None else lib.citations.validate_python(citations)}))
        case ThinkingPart() | ThinkingPartDelta() | ToolCallPartDelta() | FilePart() | PartStartEvent() \
                | PartDeltaEvent() | PartEndEvent() | FinalResultEvent() | RetryInfo():
            return getattr(pai, type(value).__name__)(**_fields_to(lib, value, types))
        case ToolCallPart():
            cls = pai.NativeToolCallPart if value.builtin else pai.ToolCallPart
            return cls(**_fields_to(lib, value, types, builtin=_OMIT))
        case BuiltinToolReturnPart():
            return pai.NativeToolReturnPart(**_fields_to(lib, value, types, timestamp=value.timestamp or _OMIT))
        case BinaryContent():
            return _binary_to(lib, value)
        case ToolCallEvent():
            cls = pai.OutputToolCallEvent if value.output else pai.FunctionToolCallEvent
            return cls(**_fields_to(lib, value, types, output=_OMIT))
        case ToolResultEvent():
            content = _content_to(lib, value.content)
            rebuild = types.get(value.tool_name)
            if rebuild is not None and not value.output:
                content = rebuild.validate_python(content)
            part = pai.ToolReturnPart(**_fields_to(lib, value, types, content=content, user_content=_OMIT,
                                                   output=_OMIT, timestamp=value.timestamp or _OMIT))
            if value.output:
                return pai.OutputToolResultEvent(part)
            user = None if value.user_content is None else _content_to(lib, value.user_content)
            return pai.FunctionToolResultEvent(part, content=user)
        case DeferredToolRequestsEvent():
            return pai.DeferredToolRequestsEvent(lib.PaiDeferredToolRequests(**_fields_to(lib, value, types)))
        case EnqueuedMessagesEvent():
            return pai.EnqueuedMessagesEvent(enqueue_id=value.enqueue_id,
                                             messages=lib.messages.validate_python(value.messages),
                                             parts=lib.request_parts.validate_python(value.parts))
        case InputEvent():
            cls = a13n.InputTextEvent if isinstance(value.content, str) else a13n.InputMediaEvent
            metadata = _OMIT if value.metadata is None else a13n.ContentMetadata.model_validate(value.metadata)
            return cls(**_fields_to(lib, value, types, metadata=metadata))
        case ExtensionEvent():
            return a13n.HarnessExtensionEvent(**_fields_to(lib, value, types))
        case CapabilityEvent():
            return lib.events.validate_python({**value.data, "kind": value.kind, "capability_id": value.capability_id,
                                               "tool_call_id": value.tool_call_id, "tool_name": value.tool_name,
                                               "event_kind": "capability"})
        case UnknownEvent(event_kind=kind, data=data):
            return lib.events.validate_python({**data, "event_kind": kind})
        case UnknownPart(part_kind=kind, data=data):
            return lib.parts.validate_python({**data, "part_kind": kind})
        case UnknownDelta(part_delta_kind=kind, data=data):
            return lib.deltas.validate_python({**data, "part_delta_kind": kind})
        case ObservationEvent():
            raise ValueError("an ObservationEvent has no a13n-harness counterpart (a13n-harness never emits one)")
    raise TypeError(f"not a source value a13n-harness has: {type(value).__name__}")  # pragma: no cover


def _binary_to(lib: SimpleNamespace, value: BinaryContent) -> Any:
    content = lib.pai.BinaryContent(value.data, media_type=value.media_type, identifier=value.identifier,
                                    vendor_metadata=copy_json(value.vendor_metadata))
    return lib.pai.BinaryContent.narrow_type(content)  # an image comes back a BinaryImage, as pydantic-ai reads it


def _content_to(lib: SimpleNamespace, content: ToolContent) -> Any:
    if isinstance(content, ContentList):
        return [_content_to(lib, x) for x in content.items]
    if isinstance(content, BinaryContent):
        return _binary_to(lib, content)
    if isinstance(content, MediaContent):
        return lib.user_content.validate_python({**content.data, "kind": content.kind})
    return copy_json(content)


def _result_to(lib: SimpleNamespace, item: HarnessRunResultEvent, output_type: Any) -> Any:
    a13n, r = lib.a13n, item.result
    adapter = None if output_type is None else lib.TypeAdapter(output_type)
    output = None
    if r.status == "completed":
        output = copy_json(r.output) if adapter is None else adapter.validate_python(r.output)
    u = r.usage or Usage()
    counts = _fields_to(lib, u, {}, reasoning_tokens=_OMIT)
    usage = lib.RunUsageSummary(**{k: v for k, v in counts.items() if v is not None})
    f = r.failure
    failure = None if f is None else a13n.SafeFailure(**_fields_to(
        lib, f, {}, details=copy_json(f.details) or {}, retry_hint=_OMIT if f.retry_hint is None else f.retry_hint))
    d = r.deferred
    deferred = None if d is None else lib.A13nDeferredToolRequests(
        calls=[_deferred_call_to(lib, c) for c in d.calls], approvals=[_deferred_call_to(lib, c) for c in d.approvals],
        metadata=copy_json(d.metadata) if d.metadata is not None else {})
    records = [(lib.ProviderUsageRecord if isinstance(rec, dict) and rec.get("kind") == "provider"
                else lib.ModelUsageRecord).model_validate(rec) for rec in (r.usage_records or ())]
    history = r.history
    # a13n-harness 0.5's result has no output adapter (nor output_json()).
    own_adapter = {} if lib.release < (0, 20) else {"_output_adapter": adapter}
    return a13n.HarnessRunResult(
        thread_id=item.thread_id, run_id=item.run_id, status=r.status, output=output,
        state=None if r.state is None else a13n.HarnessState.model_validate(r.state),
        usage=usage, usage_records=records, failure=failure, suspend_reason=r.suspend_reason, deferred=deferred,
        _messages=() if history is None else lib.messages.validate_python(history.messages),
        _new_message_index=0 if history is None else history.new_message_index,
        **own_adapter,
    )


def _deferred_call_to(lib: SimpleNamespace, call: DeferredToolCall) -> Any:
    target = call.target_call or ToolCallPart(tool_name=call.tool_name, args=call.args,
                                              tool_call_id=call.tool_call_id)
    if lib.A13nDeferredToolCall is None:  # a13n-harness 0.5 holds the call alone
        if call.model_call is not None or call.target_identity is not None:
            raise ValueError(f"DeferredToolCall {call.tool_call_id!r}: a13n-harness 0.5 holds a deferred call as "
                             f"the model's ToolCallPart alone, with no forwarded model call or target identity")
        return _to(lib, target, {})
    return lib.A13nDeferredToolCall(model_call=_to(lib, call.model_call or target, {}),
                                    target_call=_to(lib, target, {}),
                                    target_identity=call.target_identity or "")


# -- equality -----------------------------------------------------------------------------------

def a13n_differences(a: Any, b: Any) -> list[str]:
    """How two a13n-harness stream items differ, field by field (empty when
    they are equal). A ``HarnessRunResult`` compares by identity, so its
    public fields are compared instead: status, output (and ``output_json()``
    of a completed Run), state, usage, usage records, failure, suspension,
    deferred calls, ``all_messages()`` and ``new_messages()``.

    One difference is not counted: an image held as a plain pydantic-ai
    ``BinaryContent`` (a tool may return one) equals the same image as a
    ``BinaryImage``, which is what ``to_a13n`` builds. pydantic-ai's own JSON
    form (the message history, the HarnessState) does not tell them apart
    either and reads both back as a ``BinaryImage``."""
    lib = _lib()
    if type(a) is not type(b):
        return [f"types differ: {type(a).__name__} and {type(b).__name__}"]
    if not isinstance(a, (lib.a13n.HarnessEvent, lib.a13n.HarnessRunResultEvent)):
        return [] if a == b else [f"{a!r} != {b!r}"]
    out = [f"{name}: {getattr(a, name)!r} != {getattr(b, name)!r}"
           for name in ("thread_id", "run_id", "sequence", "occurred_at") if getattr(a, name) != getattr(b, name)]
    if a.occurred_at.utcoffset() != b.occurred_at.utcoffset():
        out.append(f"occurred_at offset: {a.occurred_at.utcoffset()} != {b.occurred_at.utcoffset()}")
    if isinstance(a, lib.a13n.HarnessEvent):
        if a.event != b.event and _narrowed(lib, a.event) != _narrowed(lib, b.event):
            out.append(f"event: {a.event!r} != {b.event!r}")
        return out
    ra, rb = a.result, b.result
    for name in ("thread_id", "run_id", "status", "output", "state", "usage", "usage_records", "failure",
                 "suspend_reason", "deferred"):
        va, vb = getattr(ra, name), getattr(rb, name)
        if va != vb or type(va) is not type(vb):
            out.append(f"result.{name}: {va!r} != {vb!r}")
    for name in ("all_messages", "new_messages"):
        if getattr(ra, name)() != getattr(rb, name)():
            out.append(f"result.{name}() differ")
    if ra.status == "completed" and hasattr(ra, "output_json") and ra.output_json() != rb.output_json():
        out.append(f"result.output_json(): {ra.output_json()!r} != {rb.output_json()!r}")
    return out


def _narrowed(lib: SimpleNamespace, value: Any) -> Any:
    """``value`` with every plain ``BinaryContent`` image as a ``BinaryImage``
    (a copy where anything changes)."""
    if type(value) is lib.pai.BinaryContent:
        return lib.pai.BinaryContent.narrow_type(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_narrowed(lib, x) for x in value)
    if isinstance(value, dict):
        return {k: _narrowed(lib, v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        twin = copy.copy(value)
        for f in dataclasses.fields(value):
            object.__setattr__(twin, f.name, _narrowed(lib, getattr(value, f.name)))
        return twin
    return value


def a13n_equal(a: Any, b: Any) -> bool:
    """Whether two a13n-harness stream items are equal (see ``a13n_differences``)."""
    return not a13n_differences(a, b)
