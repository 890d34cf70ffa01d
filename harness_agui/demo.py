# The main job, end to end, on built-in data.
#
# ``run_demo`` takes ``simulated_run`` (see ``testing.builder``) and does the
# job this library exists for: observe live, lose the process, resume from the
# retained prefix, continue, and check the result against an uninterrupted
# projection.

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from .core.observer import HarnessAguiObserver
from .testing.builder import simulated_run

__all__ = ["run_demo"]


def run_demo(out: TextIO = sys.stdout) -> int:
    """Observe the simulated Run live, interrupt it, resume a fresh observer
    from the retained prefix, continue with the live tail, and compare with
    an uninterrupted projection. Returns 0 when they agree, 1 otherwise."""
    items = simulated_run()
    cut = len(items) * 3 // 5

    uninterrupted = HarnessAguiObserver()
    for item in items:
        uninterrupted.observe(item)

    first = HarnessAguiObserver()
    published = [e for item in items[:cut] for e in first.observe(item)]
    print(f"live: observed {cut} of {len(items)} source items, published {len(published)} AG-UI events", file=out)
    print("process restarts: the observer is gone, the source journal is kept", file=out)

    second = HarnessAguiObserver()
    asyncio.run(second.resume(items[:cut]))
    print(f"resume: rebuilt {second.event_count} events from {cut} retained items, published nothing", file=out)
    for item in items[cut:]:
        published.extend(second.observe(item))
    print(f"live tail: observed {len(items) - cut} more items, {len(published)} events published in all", file=out)

    same_snapshot = second.snapshot() == uninterrupted.snapshot()
    same_stream = uninterrupted.snapshot() == tuple(published)
    print("", file=out)
    for line in _summarise(second.snapshot()):
        print("  " + line, file=out)
    print("", file=out)
    print(f"snapshot equals the uninterrupted projection: {same_snapshot}", file=out)
    print(f"published stream has no gap and no duplicate:  {same_stream}", file=out)
    valid = _validate(published, out)
    return 0 if same_snapshot and same_stream and valid else 1


def _validate(events: Sequence[Any], out: TextIO) -> bool:
    """Check the stream with the public AG-UI validator when it is installed
    (it is a development dependency, not a runtime one)."""
    try:
        from ag_ui_validate.pytest_plugin import validate_agui
    except ImportError:
        print("AG-UI validator (ag-ui-validate) not installed: conformance not checked", file=out)
        return True
    summary = validate_agui([e.model_dump(mode="json", by_alias=True) for e in events]).summary
    print(f"AG-UI validator: {summary.errors} errors, {summary.warnings} warnings", file=out)
    return summary.errors == 0 and summary.warnings == 0


def _summarise(events: Sequence[Any]) -> list[str]:
    """One line per event, with runs of streamed deltas of one message joined."""
    lines: list[str] = []
    run_key, run_text, run_count = None, "", 0

    def flush() -> None:
        if run_key is not None:
            text = run_text if len(run_text) <= 60 else run_text[:57] + "..."
            lines.append(f"{run_key[0]:<26} x{run_count:<3} {text!r}")

    for event in events:
        kind = event.type.value
        delta = getattr(event, "delta", None)
        key = (kind, getattr(event, "message_id", None) or getattr(event, "tool_call_id", None))
        if isinstance(delta, str):
            if key == run_key:
                run_text, run_count = run_text + delta, run_count + 1
                continue
            flush()
            run_key, run_text, run_count = key, delta, 1
            continue
        flush()
        run_key = None
        lines.append(_describe(event))
    flush()
    return lines


def _describe(event: Any) -> str:
    kind = event.type.value
    for name in ("tool_call_name", "name", "content", "message"):
        value = getattr(event, name, None)
        if isinstance(value, str):
            text = value if len(value) <= 60 else value[:57] + "..."
            return f"{kind:<26} {text!r}"
    return kind
