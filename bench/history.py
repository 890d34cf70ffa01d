# Realistic single-Run histories for the benchmark, generated from a seed.
#
# A history is what a Harness publishes for one long agent Run: a user input,
# then model request after model request until the requested number of items
# is reached, then one terminal result. Each model request is a lifecycle
# notice, usually a thinking part streamed in many small deltas and closed
# with a signature, usually a text part streamed the same way, one to three
# tool calls whose args arrive in chunks, and one tool result per call (every
# outcome occurs). Now and then a diagnostic extension, a usage extension or
# another observation appears between requests.
#
# Items are built with the harness_agui.core.source classes directly (the same
# classes SourceBuilder uses, without its bookkeeping), so generation stays a
# small part of a benchmark run even at 10^6 items. Everything comes from one
# ``random.Random(seed)`` and a fixed clock, so the same (size, seed) gives
# the same items and the same wire bytes on every machine.

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from harness_agui.core.source import (
    ExtensionEvent,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    InputEvent,
    ObservationEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    Payload,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
    Usage,
)

__all__ = ["DEFAULT_SEED", "history", "payloads"]

DEFAULT_SEED = 20261130
THREAD_ID = "thread-bench"
RUN_ID = "run-bench"
START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
STEP = timedelta(milliseconds=7)

_WORDS = (
    "the forecast for Lyon tomorrow shows rain so an umbrella is wise and the temperature converts to "
    "Fahrenheit by multiplying by nine fifths then adding thirty two which the tool confirms while the "
    "user asked about travel plans hotels trains museums opening hours and a budget in euros per night"
).split()
_TOOLS = ("get_forecast", "convert_temperature", "search_hotels", "read_file", "run_query", "fetch_page")
_OUTCOMES = ("success", "success", "success", "success", "failed", "retried")


def _chunks(rng: random.Random, n: int, low: int, high: int) -> list[str]:
    """``n`` token-sized chunks of prose of ``low..high`` words each."""
    out = []
    for _ in range(n):
        words = rng.choices(_WORDS, k=rng.randint(low, high))
        out.append(" ".join(words) + " ")
    return out


def _args_chunks(rng: random.Random, tool: str) -> list[str]:
    """A JSON object's text cut into 3..15 chunks, as a model streams args."""
    fields = ", ".join(f'"{w}_{i}": "{" ".join(rng.choices(_WORDS, k=rng.randint(1, 4)))}"'
                       for i, w in enumerate(rng.sample(_WORDS, rng.randint(1, 4))))
    text = '{"tool": "' + tool + '", ' + fields + "}"
    n = min(len(text), rng.randint(3, 15))
    cuts = sorted(rng.sample(range(1, len(text)), n - 1))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def payloads(seed: int = DEFAULT_SEED) -> Iterator[Payload]:
    """An endless stream of the payloads of a Run, model request after model request."""
    rng = random.Random(seed)
    yield InputEvent(input_id="input-0", source="user",
                     content="Plan a three day trip to Lyon: weather, hotels and a budget. " * 4)
    request = 0
    call = 0
    while True:
        yield ExtensionEvent(kind="lifecycle", schema_version="1",
                             payload={"type": "model_request_started", "request_index": request,
                                      "model": "bench-model"})
        index = 0
        if rng.random() < 0.8:
            chunks = _chunks(rng, rng.randint(10, 60), 1, 3)
            signature = "sig-" + "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=64))
            yield PartStartEvent(index=index, part=ThinkingPart(content=""))
            for c in chunks:
                yield PartDeltaEvent(index=index, delta=ThinkingPartDelta(content_delta=c))
            yield PartDeltaEvent(index=index, delta=ThinkingPartDelta(signature_delta=signature))
            yield PartEndEvent(index=index, part=ThinkingPart(content="".join(chunks), signature=signature,
                                                             provider_name="bench"))
            index += 1
        if rng.random() < 0.7:
            chunks = _chunks(rng, rng.randint(10, 80), 1, 3)
            yield PartStartEvent(index=index, part=TextPart(content=""))
            for c in chunks:
                yield PartDeltaEvent(index=index, delta=TextPartDelta(content_delta=c))
            yield PartEndEvent(index=index, part=TextPart(content="".join(chunks)))
            index += 1
        calls = []
        for _ in range(rng.randint(1, 3)):
            tool = rng.choice(_TOOLS)
            call_id = f"call-{call}"
            call += 1
            chunks = _args_chunks(rng, tool)
            yield PartStartEvent(index=index, part=ToolCallPart(tool_name=tool, args=None, tool_call_id=call_id))
            for c in chunks:
                yield PartDeltaEvent(index=index, delta=ToolCallPartDelta(args_delta=c))
            yield PartEndEvent(index=index, part=ToolCallPart(tool_name=tool, args="".join(chunks),
                                                             tool_call_id=call_id))
            calls.append((call_id, tool))
            index += 1
        for call_id, tool in calls:
            outcome = rng.choice(_OUTCOMES)
            if outcome == "success":
                content = {"ok": True, "items": rng.choices(_WORDS, k=rng.randint(1, 6)), "n": rng.randint(0, 99)}
            else:
                content = {"error": " ".join(rng.choices(_WORDS, k=4))}
            yield ToolResultEvent(tool_call_id=call_id, tool_name=tool, outcome=outcome, content=content)
        roll = rng.random()
        if roll < 0.10:
            yield ExtensionEvent(kind="diagnostic", schema_version="1",
                                 payload={"level": "info", "message": " ".join(rng.choices(_WORDS, k=6))})
        elif roll < 0.25:
            tokens = {"input_tokens": rng.randint(100, 9000), "output_tokens": rng.randint(10, 900)}
            yield ExtensionEvent(kind="usage", schema_version="1", payload=tokens)
        elif roll < 0.30:
            yield ObservationEvent(name="token_budget", value={"remaining": rng.randint(0, 100000)})
        request += 1


def history(size: int, seed: int = DEFAULT_SEED) -> list[HarnessStreamEvent]:
    """Exactly ``size`` items (``size >= 2``) of one Run: ``size - 1`` payloads
    from ``payloads(seed)`` and a completed result. The last model request may
    be cut short; the terminal item closes whatever is still open."""
    if size < 2:
        raise ValueError(f"a history needs at least 2 items, got {size}")
    items: list[HarnessStreamEvent] = []
    append = items.append
    at = START
    for seq, payload in zip(range(size - 1), payloads(seed), strict=False):
        append(HarnessEvent(thread_id=THREAD_ID, run_id=RUN_ID, sequence=seq, occurred_at=at, event=payload))
        at += STEP
    usage = Usage(input_tokens=size * 3, output_tokens=size, cache_read_tokens=size, reasoning_tokens=size // 4)
    append(HarnessRunResultEvent(thread_id=THREAD_ID, run_id=RUN_ID, sequence=size - 1, occurred_at=at,
                                 result=RunResult(status="completed", output={"answer": "Take an umbrella."},
                                                  usage=usage)))
    return items
