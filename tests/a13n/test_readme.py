# The docs page "Using it with a13n-harness" (docs/a13n.md) runs as written, against
# the real a13n-harness: its Python blocks, in order, in one namespace.

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from harness_agui.a13n import a13n_equal

pytest.importorskip("a13n_harness", reason="needs a13n-harness (Python 3.13): make test-a13n")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "a13n.md"


def section_code(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"# {title}\n")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end != -1 else None]
    blocks = re.findall(r"```python\n(.*?)```", body, flags=re.DOTALL)
    assert len(blocks) == 2, "the section shows the live path and the path after a restart"
    return "\n".join(blocks)


def test_the_a13n_page_runs_and_does_what_it_says() -> None:
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(section_code("Using it with a13n-harness"), str(PAGE), "exec"), namespace)
    journal, published = namespace["journal"], namespace["published"]
    decode, to_a13n, from_a13n = namespace["decode_line"], namespace["to_a13n"], namespace["from_a13n"]
    runs = list(dict.fromkeys(decode(line).run_id for line in journal))
    assert len(runs) == 2  # the first Run, and the Run that continued its Thread from the journal
    assert len({decode(line).thread_id for line in journal}) == 1
    terminal = to_a13n(decode(journal[-1])).result
    assert terminal.status == "completed" and len(terminal.all_messages()) == 4  # both Runs' messages
    assert published and published[0].type.value == "RUN_STARTED"
    for line in journal:  # every journal line is the Harness's own item again
        item = to_a13n(decode(line))
        assert a13n_equal(item, to_a13n(from_a13n(item)))
