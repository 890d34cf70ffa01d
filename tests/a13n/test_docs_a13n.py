# The code blocks of the docs pages that need a13n-harness (Python 3.13): their Python blocks run as printed,
# and the TypeScript client of docs/serving-a13n.md runs, flow by flow, with the official @ag-ui/client against
# that page's own agent served by `harness-agui serve` (tests/docs_blocks.py says how every block is treated).

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

from docs_blocks import A13N_PAGES, DOCS, blocks, child_env, run_python, write_module  # noqa: E402

SERVING = DOCS / "serving-a13n.md"


@pytest.mark.parametrize("name", sorted(A13N_PAGES))
def test_the_python_blocks_of_an_a13n_page_run_as_printed(name: str, tmp_path: Path) -> None:
    done = run_python(DOCS / name, tmp_path)
    assert done.returncode == 0, done.stderr
    if name == "drop-in.md":
        assert "'RUN_FINISHED'" in done.stdout


def the_agent() -> str:
    """The complete agent of the serving page: its Python block that builds `agent` with every kind of tool."""
    (code,) = [b.code for b in blocks(SERVING) if b.language == "python" and "SubagentDefinition" in b.code]
    return code


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`harness-agui serve support_agent:agent --port 0`, the page's module in the folder it is served from."""
    folder = tmp_path_factory.mktemp("served")
    (folder / "support_agent.py").write_text(the_agent(), encoding="utf-8")
    process = subprocess.Popen([sys.executable, "-m", "harness_agui", "serve", "support_agent:agent", "--port", "0",
                                "--db", str(folder / "served.db"), "--synchronous", "NORMAL"], cwd=folder,
                               env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    said = process.stderr.readline()
    found = re.search(r"on (http://127\.0\.0\.1:\d+)/runs", said)
    try:
        assert found is not None, said
        yield found.group(1)
    finally:
        process.kill()
        process.wait(30)


EXPECTED = [  # what each flow prints, in the page's order
    r"^assistant +Checking order 42.*order_status\(.*delegate\(.*\n(.*\n)*assistant \[subagent run-\w+\] Thank you",
    r"^asks: \S+:approval tool_approval\ntool: order 42 refunded\nassistant: Done: refund said order 42 refunded",
    r"^1 client call\(s\) answered; Done: confirm said yes",
    r"^the viewer holds (\d+) messages; the author \1\nWhere is order 7\?",
    r"^reconnected after 3\.[0-9a-f]{8}: \d+ more events, from \w+ to RUN_FINISHED",
]


def test_each_typescript_flow_runs_against_the_page_s_agent(node: str, served: str, tmp_path: Path) -> None:
    ts = [b for b in blocks(SERVING) if b.language == "ts"]
    assert len(ts) == len(EXPECTED)
    for block, expected in zip(ts, EXPECTED, strict=True):
        done = subprocess.run([node, str(write_module(block, tmp_path))], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "AGUI_URL": served})
        assert done.returncode == 0, f"{block.name}: {done.stderr}"
        assert re.search(expected, done.stdout, re.M), f"{block.name} printed:\n{done.stdout}"
