"""The code's layers, read from its imports (issue 22, "Done when"): no import circle between
masakari's modules, and the engine, the database and the Nova clients import nothing of the
layers above them (the API, its rules, the commands, the servers)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "masakari"
ABOVE = ("masakari.api", "masakari.ha", "masakari.cmd", "masakari.server", "masakari.wsgi")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in ROOT.rglob("*.py") if "migrations" not in p.parts}


def _imports(name: str) -> set[str]:
    """The masakari modules ``name`` imports, at any depth of its code."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            # ``from package import submodule`` imports the submodule, not the package's own
            # names: no tie to its __init__ unless a name is not a submodule.
            targets = [f"{base}.{alias.name}" for alias in node.names]
            if any(target not in MODULES for target in targets):
                targets.append(base)
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: _imports(name) for name in MODULES}


def _circles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in GRAPH[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(GRAPH):
        if name not in index:
            visit(name)
    return found


def test_the_graph_is_read() -> None:
    assert "masakari.engine.effects" in GRAPH["masakari.engine.service"] | set().union(
        *(GRAPH[m] for m in GRAPH["masakari.engine.service"])
    )
    assert "masakari.compute.retry" in GRAPH["masakari.compute.nova"]


def test_no_import_circle() -> None:
    assert _circles() == []


@pytest.mark.parametrize("layer", ["masakari.engine", "masakari.db", "masakari.compute"])
def test_a_lower_layer_imports_nothing_above_it(layer: str) -> None:
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        if name.startswith(layer)
        for target in targets
        if target.startswith(ABOVE)
    )
    assert upward == []


def _reaching(prefix: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        if name == prefix or name.startswith(prefix + ".")
        for target in targets
        if target.startswith(forbidden) and not target.startswith(allowed)
    )


def test_fencing_stands_alone() -> None:
    """The drivers speak to BMCs and fence agents; what a fence means to a recovery is the
    engine's (masakari.engine.fencing): the drivers import nothing else of masakari."""
    assert _reaching("masakari.fencing", ("masakari.",), allowed=("masakari.fencing",)) == []


def test_the_engine_never_imports_detection() -> None:
    """Detection reports failures through the same door as a monitor; the engine acts on
    what is reported and must not depend on who reported it."""
    assert _reaching("masakari.engine", ("masakari.detection",)) == []


def test_the_flows_do_not_reach_into_selection_rules() -> None:
    """The selection (which instances move, under which rules) is one package the flows and
    the plans call through its front, not rule by rule."""
    assert _reaching("masakari.engine.recovery", ("masakari.engine.selection.",)) == []
