# The fenced code blocks of README.md and docs/*.md, and how each is run or checked. tests/test_docs.py (the
# Python 3.11 suite) and tests/a13n/test_docs_a13n.py (Python 3.13, a13n-harness) share this module.
#
# Every block has a language, and each language has one treatment; a block of any other language fails:
# - python: all the Python blocks of a page run in order, in one namespace, in a fresh interpreter whose
#   working folder is a new temporary one holding `examples` (a link to the checkout's), so what a page writes
#   (host.db, ...) lands there. The pages in A13N_PAGES need a13n-harness and run in tests/a13n; the pages in
#   POSTGRES_PAGES get DATABASE_URL, a throwaway PostgreSQL server's.
# - sh: every command of a block is either run (harness-agui's offline commands, cp, cat) or checked against
#   what it names (a Makefile target, an extra of pyproject.toml, a flag of `harness-agui serve --help`, a bench
#   module and its flags, uvicorn's flags); `classify` says which, and a command it does not know fails.
# - ts: a complete ES module for Node (TypeScript that is also JavaScript: no type annotations). Here `node
#   --check` parses each; tests/a13n runs each against the agent of docs/serving-a13n.md, served.
# - text: the drawing of the error tree, which must equal the one in harness_agui/core/errors.py (that one
#   is checked against the classes by tests/test_error_tree.py).

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted(DOCS.glob("*/*.md"))]
LANGUAGES = {"python", "sh", "ts", "text"}
A13N_PAGES = {"a13n.md", "serving-a13n.md", "drop-in.md"}
POSTGRES_PAGES = {"host-kit.md", "scaling.md"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, from 1
    language: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [Block(page, text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2))
            for m in FENCE.finditer(text)]


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


# -- python -------------------------------------------------------------------------------------------

RUNNER = """
import json, sys
namespace = {"__name__": "docs"}
for name, code in json.loads(sys.stdin.read()):
    exec(compile(code, name, "exec"), namespace)
"""


def run_python(page: Path, folder: Path, env: dict[str, str] | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Every Python block of ``page``, in order, in one namespace, in a fresh interpreter working in
    ``folder`` (given a link to the checkout's examples)."""
    code = [(block.name, block.code) for block in blocks(page) if block.language == "python"]
    assert code, f"{page.name} has no Python block"
    link(folder)
    return subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(code), cwd=folder, text=True,
                          capture_output=True, timeout=timeout, env={**child_env(), **(env or {})})


def child_env() -> dict[str, str]:
    """This checkout first on the path, whichever checkout the venv installed editable."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def link(folder: Path) -> None:
    if not (folder / "examples").exists():
        (folder / "examples").symlink_to(ROOT / "examples")


# -- sh -----------------------------------------------------------------------------------------------

RUN, CHECK = "run", "check"


def commands(code: str) -> list[str]:
    """The commands of a sh block: each line without its comment (from the first `#` after a blank; none of
    these blocks quotes a `#`), split at `&&`."""
    found = []
    for line in code.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        found.extend(part.strip() for part in line.split(" && ") if part.strip())
    return found


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {m.group(1) for m in re.finditer(r"^([A-Za-z0-9_-]+):", text, re.M)}


def extras() -> set[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["project"]["optional-dependencies"])


def help_of(*argv: str) -> str:
    done = subprocess.run([sys.executable, *argv, "--help"], capture_output=True, text=True, env=child_env(),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def flags(words: list[str]) -> list[str]:
    return [w.split("=")[0] for w in words if w.startswith("--")]


def run_command(command: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """A command classify() says to run, through bash in ``folder``, with this interpreter's scripts first
    on the PATH."""
    link(folder)
    env = child_env()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=folder, env=env, text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)


def classify(command: str) -> str:
    """RUN for a command the test runs as printed; CHECK after checking what it names (an AssertionError when
    that is wrong); an AssertionError for a command no rule knows."""
    if "|" in command:  # a pipeline runs when each of its commands would
        kinds = {classify(part.strip()) for part in command.split("|")}
        return RUN if kinds == {RUN} else CHECK
    words = shlex.split(command.split(">")[0])
    head = words[0]
    if head == "make":
        assert words[1] in make_targets(), f"no make target {words[1]!r}: {command}"
        return CHECK
    if head.endswith("pip") and words[1] == "install":
        named = re.findall(r"\.\[([^\]]+)\]", command)
        assert named, f"install from a checkout with an extra: {command}"
        for extra in ",".join(named).split(","):
            assert extra in extras(), f"no extra {extra!r}: {command}"
        return CHECK
    if head in ("python3", "python3.13") and words[1:3] == ["-m", "venv"]:
        return CHECK
    if head == "git" and words[1] == "clone" or head == "cd":
        return CHECK  # the repository has no public address to clone from
    if head == "harness-agui":
        if words[1] in ("serve", "inspect"):  # runs until stopped: its flags must be the command's
            known = help_of("-m", "harness_agui", words[1])
            for flag in flags(words):
                assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", known), \
                    f"{words[1]} has no {flag}: {command}"
            return CHECK
        assert words[1] in {"replay", "check", "demo", "runs", "export", "events", "--version"}, command
        return RUN
    if head in ("cp", "cat"):
        return RUN
    if head in (".venv/bin/python", ".venv-a13n/bin/python") and words[1] == "-m" and words[2].startswith("bench."):
        module = ROOT / (words[2].replace(".", "/") + ".py")
        assert module.exists(), f"no module {words[2]}: {command}"
        source = module.read_text(encoding="utf-8")
        for flag in flags(words):
            assert f'"{flag}"' in source, f"{words[2]} has no {flag}: {command}"
        return CHECK
    if head == "uvicorn":
        known = help_of("-m", "uvicorn")
        for flag in flags(words):
            assert flag in known, f"uvicorn has no {flag}: {command}"
        return CHECK
    raise AssertionError(f"no rule runs or checks this command: {command}")


# -- ts -----------------------------------------------------------------------------------------------

def write_module(block: Block, folder: Path) -> Path:
    """The block as an ES module in ``folder``, next to a link to tests/node's packages."""
    modules = folder / "node_modules"
    if not modules.exists():
        modules.symlink_to(ROOT / "tests" / "node" / "node_modules")
    path = folder / f"block_{block.line}.mjs"
    path.write_text(block.code, encoding="utf-8")
    return path


# -- text ---------------------------------------------------------------------------------------------

def error_tree() -> str:
    """The drawing in harness_agui/core/errors.py's opening comment."""
    lines = (ROOT / "harness_agui" / "core" / "errors.py").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#     HarnessAguiError"))
    drawing = []
    for line in lines[start:]:
        if not line.startswith("#     "):
            break
        drawing.append(line[6:])
    return "\n".join(drawing) + "\n"
