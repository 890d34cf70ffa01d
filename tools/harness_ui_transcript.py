"""Run a13n-harness-ui 0.21 offline and print the display transcript it stores.

Usage (in a venv with a13n-harness-ui 0.21 and a13n-stream-protocol 0.21, and harness-agui for ``--compat``;
``make test-harness-ui`` makes one)::

    python tools/harness_ui_transcript.py [--compat] OUT.json

The Run is a13n-harness-ui's own headless one (``a13n-harness-ui run PROMPT``), in a configuration tree and a
data root made afresh in a temporary folder, with one Agent whose model is a pydantic-ai ``FunctionModel``
(a13n-harness-ui builds its models from the configured route; that one function is replaced, nothing else):
the user's prompt; a response that says something and calls ``task_list`` with an argument it does not take
(a13n-harness-ui's tool refuses it: the call is retried); a response that calls it again, properly; and the
final answer. Nothing touches the network.

With ``--compat`` the compat package is put behind the name ``a13n_stream_protocol``
(``harness_agui.compat.install()``) before a13n-harness-ui is imported, so its producer tap, its display fold
and its checkpoints run on harness-agui.

What is written: the display history a13n-harness-ui stored for the Thread (the DisplayFold items it saves
with its checkpoint) and the transcript page it serves from it, as JSON, with what differs between two Runs
by nature replaced by stable names: ids a13n-harness and a13n-harness-ui make (threads, runs, items, model
attempts, digests) become ``<id-1>``, ``<id-2>``, ... in order of appearance, times become ``<time>`` and the
temporary folder ``<root>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

PROMPT = "How many tasks are open? Then tell me 6 times 7."

_CONFIG = 'schema_version: "1"\ndefaults:\n  agent: agent-offline\n'
_MODEL = """schema_version: "1"
kind: model
id: model-offline
name: Offline
route: "openai:gpt-4o"
authentication:
  kind: api_key
  env: HARNESS_UI_OFFLINE_KEY
"""
_AGENT = 'schema_version: "1"\nkind: agent\nid: agent-offline\nname: Offline\nmodel: model-offline\n'


def _offline_model() -> Any:
    from pydantic_ai.messages import ModelRequest, RetryPromptPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    async def respond(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        parts = [part for message in messages if isinstance(message, ModelRequest) for part in message.parts]
        answers = [part for part in parts if isinstance(part, RetryPromptPart | ToolReturnPart)]
        if not answers:
            yield "Let me look at the tasks. "
            yield {0: DeltaToolCall(name="task_list", json_args='{"status": "open"}', tool_call_id="call-1")}
        elif not any(isinstance(part, ToolReturnPart) and part.outcome == "success" for part in answers):
            yield {0: DeltaToolCall(name="task_list", json_args="{}", tool_call_id="call-2")}
        else:
            yield "There are no open tasks. "
            yield "And 6 times 7 is 42."

    return FunctionModel(stream_function=respond, model_name="offline")


async def _stored(config: Path, data: Path) -> dict[str, Any]:
    """The stored display history of the one Thread, and the transcript page served from it."""
    from a13n_harness_ui.app import open_harness_ui_app
    from a13n_harness_ui.settings_loader import load_harness_ui_settings

    source = await load_harness_ui_settings(config, data_root=data)
    async with open_harness_ui_app(source.settings, configuration_path=source.path,
                                   configuration_error=source.candidate_error, host_mode="local") as app:
        (summary,) = (await app.list_threads()).threads
        thread_id = summary.thread_id
        page = await app.get_thread_transcript(thread_id=thread_id, limit=100)
        # The checkpoint a13n-harness-ui stored for the Thread, with its display archive (no public read).
        thread = await app._projections._required_thread(thread_id)
        continuation = await app._store.read_continuation(thread_id, thread.continuation, include_display=True)
        history = continuation.display_history
        return {
            "display_history": None if history is None else history.model_dump(mode="json"),
            "transcript": page.model_dump(mode="json"),
        }


_IDS = re.compile(r"\b(?:[a-z][a-z-]*[-_])?[0-9a-f]{16,}\b")  # thread_<hex>, run-<hex>, itm_<hex>, usage-<hex>, ...
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?$")
_TIME_KEYS = re.compile(r"(?:_at|At|timestamp|Timestamp|time)$")


def normalized(value: Any, names: dict[str, str] | None = None) -> Any:
    """``value`` with generated ids named in order of appearance and times replaced (see the module doc)."""
    names = {} if names is None else names
    if isinstance(value, dict):
        return {normalized(key, names): "<time>" if _TIME_KEYS.search(key) and isinstance(item, int | float | str)
                and item else normalized(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [normalized(item, names) for item in value]
    if isinstance(value, str):
        if _TIME.match(value):
            return "<time>"
        return _IDS.sub(lambda m: names.setdefault(m.group(0), f"<id-{len(names) + 1}>"), value)
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compat", action="store_true", help="put harness-agui behind a13n_stream_protocol")
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.compat:
        from harness_agui.compat import install

        install()
    import a13n_harness_ui.model_runtime as model_runtime

    async def build_offline_model(*args: Any, **kwargs: Any) -> Any:
        return _offline_model()

    model_runtime.build_api_key_model = build_offline_model  # the one replaced function: no network, no key
    import a13n_stream_protocol

    using = a13n_stream_protocol.__name__
    assert using.startswith("harness_agui.") == args.compat, using
    root = Path(tempfile.mkdtemp(prefix="harness-ui-"))
    config = root / "config" / "a13n-harness-ui.yaml"
    (config.parent / "models").mkdir(parents=True)
    (config.parent / "agents").mkdir()
    config.write_text(_CONFIG)
    (config.parent / "models" / "model-offline.yaml").write_text(_MODEL)
    (config.parent / "agents" / "agent-offline.yaml").write_text(_AGENT)
    (root / "work").mkdir()
    os.environ["HARNESS_UI_OFFLINE_KEY"] = "offline"
    os.environ["HOME"] = str(root)
    os.chdir(root / "work")
    from a13n_harness_ui.cli import main as harness_ui

    try:
        harness_ui(["--config", str(config), "--data-root", str(root / "data"), "--no-update-check", "run", PROMPT])
    except SystemExit as exit_:
        if exit_.code:
            print(f"a13n-harness-ui run exited with {exit_.code}", file=sys.stderr)
            return 1
    stored = asyncio.run(_stored(config, root / "data"))
    stored["a13n_stream_protocol"] = using
    text = json.dumps(normalized(stored), indent=1, sort_keys=True)
    args.out.write_text(text.replace(str(root), "<root>") + "\n")  # the folder of this Run, wherever it shows
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
