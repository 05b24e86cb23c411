"""The package's house rules (docs/architecture.md): an AST walk over every module's imports,
top-level and late (inside functions, ``if TYPE_CHECKING``), that fails on

- an import circle between modules;
- ``rocketfilter/delta/`` importing anything of rocketfilter;
- ``rocketfilter/broker_files/`` importing pyspark, directly or through what it imports;
- an import pointing up between the layers (:data:`RANKS`).

No module is imported: the checker reads the source text, so it runs in milliseconds without
Spark. Run it as a script (``python tests/test_layers.py``) to print every problem.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple


PACKAGE = "rocketfilter"
ROOT = Path(__file__).resolve().parents[1]

# Layer of a module: its first package folder below rocketfilter, or "" for the small top-level
# modules (javalang, message, tags, bloom, config, naming, checks, session set-up...). Lower
# ranks may not import higher ones. Top-level modules that are commands or the Spark source's
# helpers sit with them on top (TOP_MODULES).
RANKS: Dict[str, int] = {
    "delta": 0,   # imports nothing of rocketfilter, so everything may build on it
    "": 1,
    "broker_files": 2,
    "selector": 3,
    "consumer": 4,
    "store": 5,
    "pull": 6,
    "groups": 7,
    "source": 8, "jobs": 8,
}
TOP_MODULES = {"cli", "functions"}
FACADE = PACKAGE   # rocketfilter/__init__.py: hands out names from every layer
NO_PACKAGE_IMPORTS = {"delta"}          # folders that import nothing of rocketfilter
NO_PYSPARK = {"broker_files"}           # folders that must not reach pyspark


@dataclass(frozen=True)
class Edge:
    """One import statement: ``source`` (a module) imports ``target`` at ``path:line``."""

    source: str
    target: str
    path: str
    line: int
    text: str

    def where(self) -> str:
        return f"{self.path}:{self.line}: {self.text}" if self.line else self.text


def module_files(root: Path, package: str = PACKAGE) -> Dict[str, Path]:
    """Every module of ``package`` under ``root`` by dotted name (packages by their own name)."""
    base = root / package
    out: Dict[str, Path] = {}
    for path in sorted(base.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve_relative(module: str, is_package: bool, level: int, name: Optional[str]) -> str:
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def _owner(name: str, modules: Dict[str, Path]) -> Optional[str]:
    """The most specific module of the package that ``name`` (dotted) lies in."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _dynamic_import(node: ast.AST) -> bool:
    """``importlib.import_module("name")`` or ``__import__("name")`` with a literal name: an
    import all the same (a module handing out another's names on first use hides a circle so)."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("import_module", "__import__")


def imports_of(module: str, path: Path, modules: Dict[str, Path], root: Path) -> Iterator[Edge]:
    """Every import in ``path``, anywhere in its body, as edges to package modules or to external
    top-level names (``pyspark``...)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    rel = str(path.relative_to(root))
    is_package = path.name == "__init__.py"
    lines = source.splitlines()
    for node in ast.walk(tree):
        targets: List[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(module, is_package, node.level, node.module) if node.level
                    else node.module or "")
            for alias in node.names:
                # "from pkg import sub" imports the submodule sub when there is one.
                full = f"{base}.{alias.name}" if base else alias.name
                targets.append(full if full in modules else base)
        elif _dynamic_import(node):
            targets = [node.args[0].value]
        else:
            continue
        text = lines[node.lineno - 1].strip()
        for target in targets:
            owner = _owner(target, modules) if target.split(".")[0] == PACKAGE else None
            yield Edge(module, owner or target.split(".")[0], rel, node.lineno, text)


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> Tuple[Dict[str, Path], List[Edge]]:
    modules = module_files(root, package)
    edges = [edge for name, path in modules.items() for edge in imports_of(name, path, modules, root)
             if edge.target != edge.source]
    return modules, edges


def layer(module: str, package: str = PACKAGE) -> Optional[str]:
    """The layer folder of a module, "" for small top-level modules, None for the facade."""
    parts = module.split(".")[1:]
    if not parts:
        return None
    if len(parts) == 1 and parts[0] not in RANKS:
        return "top" if parts[0] in TOP_MODULES else ""
    return parts[0]


def rank(module: str, package: str = PACKAGE) -> int:
    name = layer(module, package)
    if name is None:
        return 99
    if name == "top":
        return max(RANKS.values())
    return RANKS.get(name, max(RANKS.values()))


def circles(modules: Dict[str, Path], edges: List[Edge]) -> List[List[Edge]]:
    """One circle (as its edges) per strongly connected group of modules (Tarjan)."""
    out_edges: Dict[str, List[Edge]] = {m: [] for m in modules}
    for edge in edges:
        if edge.target in modules:
            out_edges[edge.source].append(edge)
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    groups: List[Set[str]] = []
    counter = [0]

    def visit(start: str) -> None:
        # iterative Tarjan: the package's depth would pass Python's recursion limit one day
        work = [(start, iter(out_edges[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for edge in it:
                nxt = edge.target
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(out_edges[nxt])))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)

    for module in modules:
        if module not in index:
            visit(module)
    found = []
    for group in groups:
        found.append(_one_cycle(sorted(group)[0], group, out_edges))
    return found


def _one_cycle(start: str, group: Set[str], out_edges: Dict[str, List[Edge]]) -> List[Edge]:
    """A shortest circle through ``start`` inside ``group`` (breadth first)."""
    previous: Dict[str, Edge] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for edge in out_edges[node]:
                if edge.target not in group:
                    continue
                if edge.target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, previous[path[0].source])
                    return path
                if edge.target not in seen:
                    seen.add(edge.target)
                    previous[edge.target] = edge
                    nxt_frontier.append(edge.target)
        frontier = nxt_frontier
    return []


def reaches(start: str, target_top: str, edges: List[Edge],
            modules: Optional[Dict[str, Path]] = None) -> Optional[List[Edge]]:
    """The chain of imports from ``start`` to the external package ``target_top``, if any.
    Importing ``a.b.c`` runs ``a/b/__init__.py`` first, so a module also reaches what its
    packages import (all but the facade, whose own imports are late bindings only)."""
    by_source: Dict[str, List[Edge]] = {}
    for edge in edges:
        by_source.setdefault(edge.source, []).append(edge)
    for module in modules or {}:
        parts = module.split(".")
        for n in range(2, len(parts)):
            package = ".".join(parts[:n])
            if package in modules:
                by_source.setdefault(module, []).append(
                    Edge(module, package, "", 0, f"(package {package} runs first)"))
    previous: Dict[str, Edge] = {}
    frontier, seen = [start], {start}
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for edge in by_source.get(node, []):
                if edge.target == target_top:
                    chain = [edge]
                    while chain[0].source != start:
                        chain.insert(0, previous[chain[0].source])
                    return chain
                if edge.target.startswith(PACKAGE) and edge.target not in seen:
                    seen.add(edge.target)
                    previous[edge.target] = edge
                    nxt_frontier.append(edge.target)
        frontier = nxt_frontier
    return None


def problems(root: Path = ROOT, package: str = PACKAGE) -> List[str]:
    """Every broken house rule, one line each, naming the file, line and import."""
    modules, edges = import_graph(root, package)
    found: List[str] = []
    for cycle in circles(modules, edges):
        found.append("import circle " + " -> ".join([e.source for e in cycle] + [cycle[0].source])
                     + ": " + "; ".join(e.where() for e in cycle))
    for edge in edges:
        source_layer = layer(edge.source, package)
        inside = edge.target.split(".")[0] == package
        if source_layer in NO_PACKAGE_IMPORTS and inside and layer(edge.target, package) != source_layer:
            found.append(f"{edge.where()}: {source_layer}/ imports {edge.target} (it may import nothing "
                         f"of {package})")
            continue
        if inside and edge.target != package and edge.source != package \
                and rank(edge.target, package) > rank(edge.source, package):
            found.append(f"{edge.where()}: upward import from {layer(edge.source) or 'top-level'} "
                         f"({edge.source}) to {layer(edge.target) or 'top-level'} ({edge.target})")
        elif inside and edge.target == package and edge.source != package:
            found.append(f"{edge.where()}: {edge.source} imports the facade {package} (import the "
                         f"module that defines the name)")
    for module in modules:
        if layer(module, package) in NO_PYSPARK:
            chain = reaches(module, "pyspark", edges, modules)
            if chain:
                found.append(f"{modules[module].relative_to(root)} reaches pyspark: "
                             + " -> ".join(e.where() for e in chain))
    return found


def test_package_keeps_its_layers():
    found = problems()
    assert not found, "\n".join(found)


def test_every_layer_folder_exists():
    """The ranks name real folders: a renamed folder must be renamed here too."""
    for name in RANKS:
        if name:
            assert (ROOT / PACKAGE / name / "__init__.py").is_file(), name


# The checker checks: each rule fails on a tiny package built for it.

def _package(tmp_path: Path, files: Dict[str, str]) -> Path:
    for name, text in {"__init__.py": "", **files}.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in list((tmp_path / PACKAGE).rglob("*")):
        if folder.is_dir() and not (folder / "__init__.py").exists():
            (folder / "__init__.py").write_text("", encoding="utf-8")
    return tmp_path


def test_checker_passes_a_clean_package(tmp_path):
    root = _package(tmp_path, {"tags.py": "import re\n",
                               "store/store.py": "from rocketfilter.tags import x\nfrom . import put\n",
                               "store/put.py": "from rocketfilter.delta import table\n",
                               "delta/table.py": "import pyarrow\nfrom .stats import y\n",
                               "delta/stats.py": "import json\n"})
    assert problems(root) == []


def test_checker_finds_a_circle_through_import_module(tmp_path):
    # A module handing out another's names on first use (a module __getattr__) imports it.
    root = _package(tmp_path, {"tags.py": ("def __getattr__(name):\n    import importlib\n"
                                           "    return getattr(importlib.import_module('rocketfilter.tag_columns'), name)\n"),
                               "tag_columns.py": "from rocketfilter.tags import x\n"})
    found = problems(root)
    assert len(found) == 1 and found[0].startswith("import circle")
    assert "importlib.import_module('rocketfilter.tag_columns')" in found[0]


def test_checker_finds_a_late_circle(tmp_path):
    root = _package(tmp_path, {"store/a.py": "from rocketfilter.store import b\n",
                               "store/b.py": "def f():\n    from .a import g\n    return g\n"})
    found = problems(root)
    assert len(found) == 1 and found[0].startswith("import circle")
    assert "rocketfilter/store/b.py:2: from .a import g" in found[0]


def test_checker_finds_an_upward_import(tmp_path):
    root = _package(tmp_path, {"store/store.py": "def get():\n    from rocketfilter.pull.get_message import g\n",
                               "pull/get_message.py": "from rocketfilter.store.store import get\n"})
    found = problems(root)
    assert any("rocketfilter/store/store.py:2: from rocketfilter.pull.get_message import g: upward import"
               in line for line in found), found


def test_checker_finds_session_importing_source(tmp_path):
    root = _package(tmp_path, {"session.py": "import rocketfilter.source.datasource\n",
                               "source/datasource.py": "X = 1\n"})
    assert problems(root) == ["rocketfilter/session.py:1: import rocketfilter.source.datasource: upward import "
                              "from top-level (rocketfilter.session) to source (rocketfilter.source.datasource)"]


def test_checker_finds_delta_importing_the_package(tmp_path):
    root = _package(tmp_path, {"delta/table.py": "from rocketfilter import tags\n", "tags.py": ""})
    found = problems(root)
    assert found == ["rocketfilter/delta/table.py:1: from rocketfilter import tags: delta/ imports "
                     "rocketfilter.tags (it may import nothing of rocketfilter)"]


def test_checker_finds_pyspark_behind_broker_files(tmp_path):
    root = _package(tmp_path, {"broker_files/records.py": "from ..message import parse\n",
                               "message.py": "def parse():\n    import pyspark.sql.functions as F\n"})
    found = problems(root)
    assert len(found) == 1 and "broker_files/records.py reaches pyspark" in found[0]
    assert "rocketfilter/message.py:2: import pyspark.sql.functions as F" in found[0]


def test_checker_follows_package_inits_to_pyspark(tmp_path):
    root = _package(tmp_path, {"broker_files/records.py": "from rocketfilter.broker_files.cq.units import U\n",
                               "broker_files/cq/__init__.py": "from .frames import frame\n",
                               "broker_files/cq/units.py": "U = 20\n",
                               "broker_files/cq/frames.py": "from pyspark.sql import Column\n"})
    found = [line for line in problems(root) if "records.py reaches" in line]
    assert len(found) == 1, problems(root)
    assert "(package rocketfilter.broker_files.cq runs first) -> rocketfilter/broker_files/cq/__init__.py:1: from " \
           ".frames import frame -> rocketfilter/broker_files/cq/frames.py:1: from pyspark.sql import Column" \
           in found[0], found


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    lines = problems(root)
    print("\n".join(lines) or "the house stands")
    sys.exit(1 if lines else 0)
