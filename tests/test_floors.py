"""The house's floors run one way (docs/DESIGN.md).

Every module of monsearch belongs to a floor; a module imports only from its own floor
or a lower one (function-level imports included: a lazy import is still an arrow), and
no two modules import each other, directly or around a loop. Parsed from the sources,
so a new arrow the wrong way fails here, not in review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Floors, lowest first, by module prefix (the longest matching prefix decides).
#: The synthetic generator reads corpora but only the API and the CLI may call it: a
#: search, an evaluation or an export is given a corpus, it never builds one.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("monsearch.errors", "monsearch.files", "monsearch.cache", "monsearch.document")),
    ("corpora", ("monsearch.corpora",)),
    ("views", ("monsearch.views",)),
    # ``monsearch llm fetch/serve``'s model catalogue and llama.cpp server: the local
    # endpoint the oracle's OpenAI-compatible client talks to.
    ("oracle", ("monsearch.oracle",)),
    ("sandbox", ("monsearch.sandbox",)),
    ("eval", ("monsearch.eval",)),
    ("strategies", ("monsearch.strategies",)),
    ("search", ("monsearch.search",)),
    ("export", ("monsearch.export",)),
    ("synth", ("monsearch.synth",)),
    # The live corpus plays the synthetic plans against a user's real apps; it reads
    # views to compare the simulated and the real observation of each step.
    ("live", ("monsearch.live",)),
    ("local_llm", ("monsearch.local_llm",)),
    ("api", ("monsearch.api",)),
    ("cli", ("monsearch.cli", "monsearch.commands", "monsearch.__main__")),
]
#: The namespace's own ``__init__`` holds the version and reaches the API lazily (on
#: attribute access, not at import): every floor may import it.
BASE_EXACT = {"monsearch"}

#: Folders mapped onto the namespace (pyproject.toml's package-dir), and the exported
#: plugin's template files, which are copied into plugins, not imported by monsearch.
FOLDERS = {
    "monsearch": "monsearch",
    "corpora": "monsearch.corpora",
    "synth": "monsearch.synth",
    "views": "monsearch.views",
    "oracle": "monsearch.oracle",
    "sandbox": "monsearch.sandbox",
    "eval": "monsearch.eval",
    "strategies": "monsearch.strategies",
    "search": "monsearch.search",
    "export": "monsearch.export",
    "live": "monsearch.live",
}
#: The plugin's templates, and the live container's own tools (run inside a live
#: worker's walls under a bare interpreter, never imported by monsearch).
SKIP = ("export/plugin/", "live/box/")


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in FOLDERS.items():
        base = ROOT / folder
        if not base.is_dir():
            continue
        for path in base.rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if any(rel.startswith(s) for s in SKIP):
                continue
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Modules of monsearch that ``name`` imports (resolved relative imports included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{a.name}" for a in node.names]
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name and t.startswith("monsearch"):
                found.add(t)
    return found


def floor_of(module: str) -> int:
    if module in BASE_EXACT:
        return 0
    best, level = -1, -1
    for i, (_, prefixes) in enumerate(FLOORS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, level = len(p), i
    assert level >= 0, f"{module}: on no floor"
    return level


# The namespace root reaches the API in ``__getattr__`` (on first attribute access, never
# at import): not an arrow of the house.
GRAPH = {name: set() if name in BASE_EXACT else _imports(name, path) for name, path in MODULES.items()}


def test_every_module_is_on_a_floor():
    assert len(MODULES) > 100
    for name in MODULES:
        floor_of(name)


def test_no_module_imports_a_higher_floor():
    wrong = [
        f"{a} ({FLOORS[floor_of(a)][0]}) imports {b} ({FLOORS[floor_of(b)][0]})"
        for a, targets in sorted(GRAPH.items())
        for b in sorted(targets)
        if floor_of(b) > floor_of(a)
    ]
    assert wrong == []


def test_no_import_cycles():
    # Tarjan's strongly connected components: any component of two or more is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    import sys

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == []


@pytest.mark.parametrize("limit", [1200])
def test_no_source_file_over_the_limit(limit):
    # Data modules (tables, facts) are exempt; code is not.
    data = {"synth/app_facts.py"}
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in sorted(ROOT.rglob("*.py"))
        if ".venv" not in p.parts and "runs" not in p.parts
        and p.relative_to(ROOT).as_posix() not in data
        and (n := len(p.read_text(encoding="utf-8").splitlines())) > limit
    ]
    assert long == []
