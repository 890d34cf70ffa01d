"""The tree of the library's errors drawn in ``harness_agui/core/errors.py`` is the tree of the classes:
each drawn class has the drawn parent as its one library base, a built-in named in parentheses as its
only other base, and every error class the library defines is drawn."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import harness_agui
from harness_agui.core.errors import HarnessAguiError

ERRORS = Path(harness_agui.__file__).parent / "core" / "errors.py"
# Every module of the package, but the command line's entry point (importing it runs the CLI) and the drop-in
# package, whose errors are upstream's tree (a13n_stream_protocol's names and bases), not this one.
MODULES = tuple(m.name for m in pkgutil.walk_packages(harness_agui.__path__, "harness_agui.")
                if not m.name.endswith(".__main__") and not m.name.startswith("harness_agui.compat"))
_LINE = re.compile(r"^#\s{5}(?P<indent>(?:[│ ] {3})*)(?:[├└]── )?(?P<name>\w+)(?: \(also (?P<also>\w+)\))?")


def drawn() -> dict[str, tuple[str | None, str | None]]:
    """{class name: (parent name, built-in named in parentheses)} as drawn."""
    lines = ERRORS.read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("#     HarnessAguiError"))
    tree: dict[str, tuple[str | None, str | None]] = {}
    parents: list[str] = []
    for line in lines[start:]:
        if line.strip() == "#":
            break
        match = _LINE.match(line)
        assert match is not None, line
        depth = len(match["indent"]) // 4 + (0 if match["name"] == "HarnessAguiError" else 1)
        del parents[depth:]
        tree[match["name"]] = (parents[-1] if parents else None, match["also"])
        parents.append(match["name"])
    return tree


def defined() -> dict[str, tuple[str | None, str | None]]:
    """The same, from the classes the library's modules define."""
    found: dict[str, tuple[str | None, str | None]] = {}
    for module in map(importlib.import_module, MODULES):
        for name, cls in vars(module).items():
            if not inspect.isclass(cls) or not issubclass(cls, BaseException) or cls.__module__ != module.__name__:
                continue
            if name.startswith("_"):  # a module's private signal, caught where it is raised
                continue
            assert issubclass(cls, HarnessAguiError), f"{module.__name__}.{name} is not a HarnessAguiError"
            ours = [b.__name__ for b in cls.__bases__ if issubclass(b, HarnessAguiError)]
            builtin = [b.__name__ for b in cls.__bases__ if not issubclass(b, HarnessAguiError)
                       and b.__module__ == "builtins" and b is not Exception]
            assert len(ours) <= 1, f"{name} has more than one library base: {ours}"
            assert len(builtin) <= 1, f"{name} has more than one built-in base: {builtin}"
            found[name] = (ours[0] if ours else None, builtin[0] if builtin else None)
    return found


def test_the_drawn_error_tree_is_the_tree_of_the_classes() -> None:
    assert drawn() == defined()


def test_no_error_class_is_in_two_branches_of_the_tree() -> None:
    for name, (parent, _) in defined().items():
        cls = next(c for m in map(importlib.import_module, MODULES)
                   if (c := vars(m).get(name)) is not None and getattr(c, "__module__", None) == m.__name__)
        library_bases = [c for c in cls.__mro__[1:] if issubclass(c, HarnessAguiError)]
        chain = []
        walk = parent
        while walk is not None:
            chain.append(walk)
            walk = defined()[walk][0]
        assert [c.__name__ for c in library_bases] == chain, name


def test_the_host_kit_page_draws_the_same_tree() -> None:
    source = ERRORS.read_text().splitlines()
    start = next(n for n, line in enumerate(source) if line.startswith("#     HarnessAguiError"))
    end = next(n for n in range(start, len(source)) if source[n].strip() == "#")
    page = (Path(__file__).parent.parent / "docs" / "host-kit.md").read_text()
    assert "\n".join(line[6:] for line in source[start:end]) in page
