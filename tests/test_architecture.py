"""The package structure: no import circles, no private names across modules, every module imports."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bounds", "sim", "paper_checks", "plots")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


def _imports(modules: dict[str, Path]) -> tuple[nx.DiGraph, list[tuple[str, str, str]]]:
    """Every import between project modules (module level and inside functions), and private names."""
    graph, private = nx.DiGraph(), []
    for name, path in modules.items():
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    target = full if full in modules else node.module
                    if target != name:
                        graph.add_edge(name, target)
                    if alias.name.startswith("_") and full not in modules:
                        private.append((name, node.module, alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in PACKAGES and alias.name != name:
                        graph.add_edge(name, alias.name)
    return graph, private


def test_no_import_circles_and_no_private_names_across_modules() -> None:
    graph, private = _imports(_modules())
    assert graph.number_of_edges() > 50  # the walk sees the imports
    assert list(nx.simple_cycles(graph)) == []
    assert private == []


def test_the_walk_sees_a_circle() -> None:
    """The detector itself: a two-module circle is found."""
    graph = nx.DiGraph([("a", "b"), ("b", "a")])
    assert [sorted(c) for c in nx.simple_cycles(graph)] == [["a", "b"]]


@pytest.mark.parametrize("name", sorted(n for n in _modules() if not n.endswith("__main__")))
def test_every_module_imports(name: str) -> None:
    importlib.import_module(name)


def test_bounds_never_imports_torch() -> None:
    graph, _ = _imports(_modules())
    for name, path in _modules().items():
        if name.startswith("bounds"):
            assert "import torch" not in path.read_text(), name
    assert not any(t.startswith("sim") for s, t in graph.edges if s.startswith("bounds"))


def test_bounds_names_load_on_first_use() -> None:
    """``bounds`` re-exports its names lazily (PEP 562) and lists them three times, for three readers: the
    imports it shows type checkers, its table of lazy names and __all__ (a literal, as ruff and type
    checkers read it). The three must agree; each name resolves to the object in the module it names,
    an unknown name is an AttributeError, and importing the package alone (as the simulator's modules
    do) loads neither sympy nor the bounds' code."""
    import subprocess
    import sys

    import bounds

    shown = {
        alias.name: node.module
        for node in ast.walk(ast.parse((ROOT / "bounds" / "__init__.py").read_text()))
        if isinstance(node, ast.ImportFrom) and node.module != "bounds._checks" and node.level == 0
        for alias in node.names
        if node.module and node.module.startswith("bounds.")
    }
    assert shown == bounds._LAZY
    assert set(bounds.__all__) == set(bounds._LAZY) | {"InputError"}
    for name, module in bounds._LAZY.items():
        assert getattr(bounds, name) is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        _ = bounds.nonexistent
    probe = "import sys, bounds; print('sympy' in sys.modules, 'bounds.dfl.proposition1' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "False"]


def test_the_numeric_tools_load_no_sympy() -> None:
    """dfl-bounds and the numeric bounds answer without sympy (about 0.4 s to import): the formulas take
    sympy's functions only for sympy input, and bounds.dfl.symbolic makes its symbols on first use."""
    import subprocess
    import sys

    probe = (
        "import sys, bounds.cli\n"
        "from bounds import dfl_bound\n"
        "r = dfl_bound(L=1, sigma2=1, N=10, eta=0.01, tau1=4, tau2=4, zeta=0.8, T=1000, gap=1)\n"
        "from bounds.dfl import symbolic\n"
        "before = 'sympy' in sys.modules\n"
        "text = symbolic.latex('eta_max_non_iid')\n"
        "print(before, 'sympy' in sys.modules, type(symbolic.SYMBOLS['eta']).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "True", "Symbol"]
