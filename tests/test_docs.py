# Every fenced code block of README.md and docs/*.md is run or checked: the Python blocks of the pages that
# need no a13n-harness run here, the sh commands run or are checked, the TypeScript blocks are parsed by Node
# (tests/a13n/test_docs_a13n.py runs them against a served agent), the text block is the error tree.
# tests/docs_blocks.py says how each language is treated.

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_blocks import (
    A13N_PAGES,
    CHECK,
    LANGUAGES,
    PAGES,
    POSTGRES_PAGES,
    ROOT,
    RUN,
    all_blocks,
    blocks,
    child_env,
    classify,
    commands,
    error_tree,
    link,
    run_command,
    run_python,
    write_module,
)

from harness_agui.testing.postgres import TemporaryPostgres

PYTHON_PAGES = [p for p in PAGES if p.name not in A13N_PAGES and any(b.language == "python" for b in blocks(p))]


def test_every_code_block_has_a_language_the_tests_run_or_check() -> None:
    found = all_blocks()
    assert len(found) > 30
    assert {(b.name, b.language) for b in found if b.language not in LANGUAGES} == set()


def test_no_page_hides_code_in_an_indented_block_the_tests_would_not_see() -> None:
    for page in PAGES:
        fenced = False
        previous = ""
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and previous == "" and line.startswith("    ") and not line.lstrip().startswith("-"):
                raise AssertionError(f"{page.name}:{number} is an indented code block: fence it")
            previous = line


def test_the_readme_is_short_and_its_links_lead_to_pages_that_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for target in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / target).exists(), target


@pytest.fixture
def postgres() -> Iterator[str]:
    server = TemporaryPostgres()
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_python_blocks_of_a_page_run_as_printed(page: Path, tmp_path: Path, request: pytest.FixtureRequest,
                                                      ) -> None:
    env = {"DATABASE_URL": request.getfixturevalue("postgres")} if page.name in POSTGRES_PAGES else {}
    done = run_python(page, tmp_path, env)
    assert done.returncode == 0, done.stderr
    expected = {
        "README.md": "RUN_FINISHED",                   # the quick start prints the SSE frames
        "getting-started.md": "RUN_FINISHED",
        "host-kit.md": '"type":"RUN_FINISHED"',         # the Host example and the PostgreSQL one print frames
        "scaling.md": "events, the last:",
        "debugging.md": "== completed",                # show() printed: the conversation view's outcome
        "performance.md": "RUN_FINISHED",
        "serving.md": "",
        "testing.md": "",
    }
    assert expected[page.name] in done.stdout
    if page.name == "debugging.md":
        assert "failed at item #4" in done.stdout and "True" in done.stdout.splitlines()[-1]


def test_the_sh_commands_are_each_run_or_checked(tmp_path: Path) -> None:
    # The debugging page's commands read host.db as the Host kit's example leaves it: run that first.
    host_kit = [b for b in blocks(ROOT / "docs" / "host-kit.md") if b.language == "python"][0]
    link(tmp_path)
    made = subprocess.run([sys.executable, "-c", host_kit.code], cwd=tmp_path, capture_output=True, text=True,
                          env=child_env(), timeout=300)
    assert made.returncode == 0, made.stderr
    ran = checked = 0
    for block in all_blocks():
        if block.language != "sh":
            continue
        for command in commands(block.code):
            kind = classify(command)
            if kind == CHECK:
                checked += 1
                continue
            assert kind == RUN
            done = run_command(command, tmp_path)
            allowed = {0, 1} if command.startswith("harness-agui check") else {0}  # check: 1 = problems found
            assert done.returncode in allowed, f"{block.name}: {command}: {done.returncode}\n{done.stderr}"
            ran += 1
    assert ran >= 10 and checked >= 20


def test_each_typescript_block_is_a_module_node_parses(node: str, tmp_path: Path) -> None:
    ts = [b for b in all_blocks() if b.language == "ts"]
    assert len(ts) == 5
    for block in ts:
        done = subprocess.run([node, "--check", str(write_module(block, tmp_path))], capture_output=True, text=True)
        assert done.returncode == 0, f"{block.name}: {done.stderr}"


def test_the_drawn_error_tree_is_the_one_the_tree_test_checks() -> None:
    text = [b for b in all_blocks() if b.language == "text"]
    assert [b.code for b in text] == [error_tree()]
