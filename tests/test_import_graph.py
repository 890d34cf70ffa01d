"""The package's import graph: acyclic, and every layer points down.

The graph is read from the source with ``ast``, so it holds every import a
module can make, not only those that ran: imports at module level, inside
functions and methods, under ``try``, and under ``if TYPE_CHECKING:``.
TYPE_CHECKING imports count: a type a module needs from a layer above is a
dependency on that layer all the same (it appears in its signatures and its
documentation), and the fix is cheap (a Protocol in the lower layer, as
``debug/views.py`` does for the replay classes). Dynamic imports
(``importlib.import_module``, ``__import__``) count too when their target is
a string or ``f"{__name__}.name"``; any other dynamic import fails the test,
so that nothing can hide an edge from it.

Layers (the folders): core imports only core; wire imports core; host
imports core and wire; debug imports core and wire; testing imports core and
wire; inspect (the run inspector's pages) imports core, wire, host and
debug; a13n (the a13n-harness adapter and its runner) imports core, wire,
host and the top-level ``_a13n_release``; compat (a13n-stream-protocol's
vocabulary over the core) imports core, wire, a13n and ``_a13n_release``,
never host, debug, testing or inspect; serve (the HTTP layer) imports core,
wire, host, a13n (an agent's runner, the demo agent), inspect (mounted with
``inspector=True``) and testing (the simulated Harness of ``demo_harness``),
never debug, compat or the command line; cli (the command line) is the top
of the tree and may import any layer. Inside debug the modules are ordered
(``text`` < ``pretty`` < ``views`` < ``replay`` < ``notebook`` < the
package) and import only to their left. The top-level package, ``demo``,
``source`` and ``__main__`` are the shell over all of them and may import
any layer, but take part in the cycle check like everything else.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import harness_agui

ROOT = Path(harness_agui.__file__).resolve().parent
PACKAGE = "harness_agui"

ALLOWED = {
    "core": {"core"},
    "wire": {"core", "wire"},
    "host": {"core", "wire", "host"},
    "debug": {"core", "wire", "debug"},
    "testing": {"core", "wire", "testing"},
    "inspect": {"core", "wire", "host", "debug", "inspect"},
    "a13n": {"core", "wire", "host", "_a13n_release", "a13n"},
    "compat": {"core", "wire", "a13n", "_a13n_release", "compat"},
    "serve": {"core", "wire", "host", "a13n", "inspect", "testing", "serve"},
    "cli": {"core", "wire", "host", "debug", "testing", "inspect", "a13n", "compat", "serve", "demo", "source", "",
            "cli"},
}
DEBUG_ORDER = ["text", "pretty", "views", "replay", "notebook", ""]


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join([PACKAGE, *parts])] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve_from(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _dynamic_target(module: str, call: ast.Call) -> str | None:
    """The module a dynamic import names, or None when the test cannot tell."""
    if not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and len(arg.values) == 2:
        head, tail = arg.values
        if (isinstance(head, ast.FormattedValue) and isinstance(head.value, ast.Name) and head.value.id == "__name__"
                and isinstance(tail, ast.Constant) and isinstance(tail.value, str)):
            return module + tail.value
    return None


def _is_dynamic_import(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("import_module", "__import__")


def _imports(module: str) -> tuple[set[str], list[str]]:
    """(the package's modules ``module`` imports, dynamic imports the test cannot resolve)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"), filename=str(MODULES[module]))
    targets: set[str] = set()
    unknown: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in MODULES else base)
        elif isinstance(node, ast.Call) and _is_dynamic_import(node):
            target = _dynamic_target(module, node)
            if target is None:
                unknown.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
            else:
                targets.add(target)
    edges = {t for t in targets if t in MODULES and t != module}
    # An import of a module inside the package that does not exist is a bug of its own.
    missing = {t for t in targets if (t == PACKAGE or t.startswith(PACKAGE + ".")) and t not in MODULES}
    assert not missing, f"{module} imports modules that do not exist: {sorted(missing)}"
    return edges, unknown


GRAPH = {module: _imports(module)[0] for module in MODULES}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that starts and ends at the same module, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_walk_sees_every_layer_of_the_package() -> None:
    layers = {_layer(m) for m in MODULES}
    assert {"core", "wire", "host", "debug", "testing", "a13n", "compat", "cli"} <= layers
    # Every folder of the package has a layer rule; only top-level modules are the shell.
    folders = {path.parent.relative_to(ROOT).parts[0] for path in ROOT.rglob("*.py") if path.parent != ROOT}
    assert folders <= set(ALLOWED), sorted(folders - set(ALLOWED))
    assert f"{PACKAGE}.debug.views" in GRAPH[f"{PACKAGE}.debug.replay"]  # a function-level import would count too


def test_the_import_graph_of_the_package_has_no_cycle() -> None:
    cycle = _find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle_through_a_function_level_import() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


# Dynamic imports of a module the user names, never one of the package's: ``harness-agui serve MODULE:ATTR``
# imports the user's module (the Host's agent), so its target is not known to the source.
USER_NAMED = {"harness_agui.serve._launch:importlib.import_module(module_name)"}


def test_every_dynamic_import_in_the_package_names_its_module() -> None:
    unknown = [u for module in MODULES for u in _imports(module)[1]
               if f"{module}:{u.split(': ', 1)[1]}" not in USER_NAMED]
    assert not unknown, unknown


# Edges kept for one release only, to serve a name from where it used to be (with a DeprecationWarning):
# TemporaryPostgres moved from host.postgres to testing.postgres.
DEPRECATED_EDGES = {("harness_agui.host.postgres.server", "harness_agui.testing.postgres")}


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items() if _layer(module) == layer
        for target in targets if _layer(target) not in ALLOWED[layer] and (module, target) not in DEPRECATED_EDGES
    )
    assert not wrong, wrong


def test_the_modules_of_debug_import_only_the_ones_before_them() -> None:
    def rank(module: str) -> int:
        name = module[len(f"{PACKAGE}.debug"):].lstrip(".")
        assert name in DEBUG_ORDER, f"{module} is not placed in DEBUG_ORDER"
        return DEBUG_ORDER.index(name)

    debug = [m for m in GRAPH if _layer(m) == "debug"]
    wrong = sorted(f"{m} imports {t}" for m in debug for t in GRAPH[m] if _layer(t) == "debug" and rank(t) >= rank(m))
    assert not wrong, wrong


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_the_public_packages_import_in_a_fresh_interpreter() -> None:
    proc = _run("import harness_agui, harness_agui.host, harness_agui.testing, harness_agui.debug")
    assert proc.returncode == 0, proc.stderr


def _ancestors(module: str) -> set[str]:
    """The module and the packages Python imports before it."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def _closure(module: str) -> set[str]:
    """Every module that importing ``module`` can load, by the static graph."""
    seen: set[str] = set()
    todo = list(_ancestors(module))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            for target in GRAPH[name]:
                todo.extend(_ancestors(target))
    return seen


def test_every_module_imports_first_in_a_fresh_interpreter_and_loads_only_what_the_graph_says() -> None:
    # Each module is imported with no module of the package loaded before it, as a user's first import
    # would be; an import order that only works from elsewhere shows up here. What it loads must be in
    # the static graph (from the module and its parent packages), so the walk above misses no edge.
    names = sorted(m for m in MODULES if not m.endswith(".__main__"))
    code = (
        "import importlib, json, sys\n"
        f"names = {names!r}\n"
        "out = {}\n"
        "for name in names:\n"
        "    for loaded in [m for m in sys.modules if m == 'harness_agui' or m.startswith('harness_agui.')]:\n"
        "        del sys.modules[loaded]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as e:\n"
        "        out[name] = f'{type(e).__name__}: {e}'\n"
        "    else:\n"
        "        out[name] = sorted(m for m in sys.modules if m == 'harness_agui' or m.startswith('harness_agui.'))\n"
        "print(json.dumps(out))\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout)
    failed = {name: what for name, what in loaded.items() if isinstance(what, str)}
    assert not failed, failed
    unexplained = {name: sorted(set(mods) - _closure(name)) for name, mods in loaded.items()}
    assert not {k: v for k, v in unexplained.items() if v}, unexplained
