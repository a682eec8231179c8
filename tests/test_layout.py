"""The layout keeps its promises: the pure core touches no outside world, and no import circles.

DESIGN.md, "Layout": nothing in `events/`, the fold (`projector.fold`) or decide
(`producers.decide`) imports Kafka, Spark, pyarrow, a clock or randomness. The
check reads every module's imports from its source (including imports inside
functions and under `TYPE_CHECKING`, which hide circles from the interpreter),
and a fresh interpreter proves what importing the pure core actually loads.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.fixtures.modules import MODULES, PACKAGES, ROOT, attributes, imports

PURE = ("events", "projector.fold", "projector.errors", "producers.decide", "producers.errors")
OUTSIDE = {
    "confluent_kafka": "Kafka",
    "pyspark": "Spark",
    "delta": "Spark",
    "pyarrow": "pyarrow",
    "deltalake": "pyarrow",
    "duckdb": "DuckDB",
    "random": "randomness",
    "secrets": "randomness",
    "uuid": "randomness",
}
CLOCK_CALLS = {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("date", "today"),
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
}


def _is_pure(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PURE)


def _clock_calls(module: str) -> list[str]:
    tree = ast.parse(MODULES[module].read_text())
    return [f"{name} (line {line})" for name, line in attributes(tree, CLOCK_CALLS)]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _is_pure(m)))
def test_pure_module_imports_no_outside_world(module: str) -> None:
    """A pure module imports neither the outside world nor a module that is not pure."""
    imported = imports(module)
    outside = {
        f"{name} ({OUTSIDE[name.split('.')[0]]})"
        for name in imported
        if name.split(".")[0] in OUTSIDE
    }
    impure = {name for name in imported if name in MODULES and not _is_pure(name)}
    assert not outside, f"{module} is pure but imports {sorted(outside)}"
    assert not impure, f"{module} is pure but imports the runtime modules {sorted(impure)}"
    assert not _clock_calls(module), f"{module} reads the clock: {_clock_calls(module)}"


ALLOWED = {
    "events": {"events"},
    "projector": {"events", "projector"},
    "producers": {"events", "projector", "producers"},
    "streaming": {"events", "projector", "streaming"},
    "server": {"events", "projector", "producers", "server"},
    "metalog": set(PACKAGES) - {"chaos"},
    "chaos": set(PACKAGES),
}
"""DESIGN.md, "Layout": dependencies point one way; only `metalog` wires them all,
and the fault harness (`chaos`) drives them from outside."""


READERS = "streaming.readers"
"""The JVM-free readers of the projection's tables: SQL (`producers.sql`) reads them too."""


def _allowed(module: str, name: str) -> bool:
    if name.split(".")[0] in ALLOWED[module.split(".")[0]]:
        return True
    return module.startswith("producers.sql.") and (name + ".").startswith(READERS + ".")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_dependencies_point_one_way(module: str) -> None:
    """A module imports only the packages below its own (events ← projector ← producers)."""
    package = module.split(".")[0]
    upward = {name for name in imports(module) if name in MODULES and not _allowed(module, name)}
    assert not upward, f"{module} imports {sorted(upward)}, above `{package}`"


def test_no_import_circles() -> None:
    """No two project modules import each other, directly or through others.

    Importing `a.b.c` runs `a/__init__.py` and `a/b/__init__.py` first, so an
    import is an edge to the module and to each package above it that is not
    above the importer too (those are already being imported).
    """
    graph = {
        m: {
            p
            for i in imports(m)
            if i in MODULES
            for p in _with_packages(i)
            if p != m and not m.startswith(p + ".")
        }
        for m in MODULES
    }
    circles = [sorted(c) for c in _strongly_connected(graph) if len(c) > 1]
    assert not circles, f"import circles: {circles}"


@pytest.mark.parametrize(
    ("core", "forbidden"),
    [
        ("projector.fold.apply", ("confluent_kafka", "pyspark", "pyarrow", "fastavro")),
        ("producers.decide.core", ("confluent_kafka", "pyspark", "pyarrow")),
    ],
)
def test_importing_the_core_loads_no_outside_library(core: str, forbidden: tuple[str, ...]) -> None:
    """A fresh interpreter that imports the core has none of the outside libraries loaded."""
    probe = (
        f"import sys, {core}; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(forbidden)!r}))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]", f"importing {core} loads {loaded}"


def _with_packages(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts) + 1) if ".".join(parts[:n]) in MODULES]


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is small, but recursion limits are not)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(component)
    return components
