# The README's code runs as written: every Python block of the sections a new
# user copies from, in order, in one namespace per section (a block may use
# what an earlier block of its section defined), with stdout captured.

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
SECTIONS = ["Quick start"]


def blocks_of(section: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## )", text, re.S | re.M)
    assert match is not None, f"README has no section {section!r}"
    found = re.findall(r"^```python\n(.*?)^```", match.group(1), re.S | re.M)
    assert found, f"README section {section!r} has no python block"
    return found


@pytest.mark.parametrize("section", SECTIONS)
def test_a_readme_section_runs_as_written(section: str) -> None:
    namespace: dict[str, object] = {"__name__": "readme"}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        for block in blocks_of(section):
            exec(compile(block, f"README.md ({section})", "exec"), namespace)  # noqa: S102
    assert "RUN_FINISHED" in out.getvalue()
