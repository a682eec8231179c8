"""The layout keeps its promises: the pure core touches no outside world, and no import circles.

DESIGN.md, "Layout": nothing in `events/`, the fold (`projector.fold`) or decide
(`producers.decide`) imports Kafka, Spark, pyarrow, a clock or randomness. The
check reads every module's imports from its source (including imports inside
functions and under `TYPE_CHECKING`, which hide circles from the interpreter),
and a fresh interpreter proves what importing the pure core actually loads.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("events", "producers", "projector", "streaming", "server", "metalog", "chaos")
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


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    _module_name(path): path
    for package in PACKAGES
    for path in sorted((ROOT / package).rglob("*.py"))
}


def _is_pure(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PURE)


def _imports(module: str) -> set[str]:
    """Every module name `module` imports, resolved to project modules where they are ours."""
    tree = ast.parse(MODULES[module].read_text())
    return {name for node in ast.walk(tree) for name in _imported(node)}


def _imported(node: ast.AST) -> set[str]:
    """The modules one statement imports, resolved to project modules where they are ours."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES
                else node.module for a in node.names}  # fmt: skip
    return set()


def _clock_calls(module: str) -> list[str]:
    calls = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (node.value.id, node.attr) in CLOCK_CALLS
        ):
            calls.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
    return calls


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _is_pure(m)))
def test_pure_module_imports_no_outside_world(module: str) -> None:
    """A pure module imports neither the outside world nor a module that is not pure."""
    imported = _imports(module)
    outside = {
        f"{name} ({OUTSIDE[name.split('.')[0]]})"
        for name in imported
        if name.split(".")[0] in OUTSIDE
    }
    impure = {name for name in imported if name in MODULES and not _is_pure(name)}
    assert not outside, f"{module} is pure but imports {sorted(outside)}"
    assert not impure, f"{module} is pure but imports the runtime modules {sorted(impure)}"
    assert not _clock_calls(module), f"{module} reads the clock: {_clock_calls(module)}"


MUTABLE_CALLS = {"dict", "list", "set", "bytearray", "defaultdict", "OrderedDict", "Counter",
                 "deque"}
"""Calls that build a mutable container."""
READS_THE_PROCESS = {("os", "environ"), ("os", "getenv"), ("os", "urandom"), ("os", "getpid")}
"""What importing the contract must not read: the environment, randomness, the process."""


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The statements that run on import: the top level, into `if`/`try`/`with`, not into
    function or class bodies."""
    found: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        found.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            todo += [n for n in getattr(node, field, []) if isinstance(n, ast.stmt)]
        for handler in getattr(node, "handlers", []):
            todo += handler.body
    return found


def _import_time_faults(module: str) -> list[str]:
    faults = []
    for statement in _module_level(ast.parse(MODULES[module].read_text())):
        where = f"line {statement.lineno}"
        if isinstance(statement, ast.Raise):
            faults.append(f"raises on import ({where})")
        value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(statement, ast.Assign) and ast.unparse(statement.targets[0]) == "__all__":
            value = None  # the export list, by convention a list
        if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp,
                              ast.SetComp)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in MUTABLE_CALLS
        ):  # fmt: skip
            faults.append(f"module-level mutable {type(value).__name__} ({where})")
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in READS_THE_PROCESS
            ):
                faults.append(f"reads {node.value.id}.{node.attr} on import (line {node.lineno})")
    return faults


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.split(".")[0] == "events"))
def test_the_contract_has_no_import_time_side_effects_or_module_state(module: str) -> None:
    """Issue 44 item 6: importing `events` reads no environment or randomness, raises
    nothing, and leaves no mutable container at module level (a process-wide value is
    made on first use, behind `functools.cache`, as `events.pool.default_pool`)."""
    faults = _import_time_faults(module)
    assert not faults, f"{module}: {faults}"


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
    upward = {name for name in _imports(module) if name in MODULES and not _allowed(module, name)}
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
            for i in _imports(m)
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


EXTRAS = {
    "pyspark": "spark", "delta": "spark", "pandas": "spark", "deltalake": "spark or sql",
    "duckdb": "spark or sql", "sqlglot": "sql", "fastapi": "serve", "uvicorn": "serve",
    "starlette": "serve",
}  # fmt: skip
"""The libraries of the optional dependency groups (pyproject.toml), and their group."""

NOT_BARE = ("producers.sql", "server", "streaming", "metalog.demo")
"""What needs an extra: the SQL home, the server, the Spark jobs and readers, the demo."""

BARE_IN_NOT_BARE = ("streaming", "streaming.errors", "streaming.spark", "streaming.spark.config",
                    "streaming.spark.jars")  # fmt: skip
"""What a bare install still imports from them: the command line's Spark flags and the jars
the local stack resolves."""


def _is_bare(module: str) -> bool:
    return module in BARE_IN_NOT_BARE or not any(
        module == p or module.startswith(p + ".") for p in NOT_BARE)


def _top_level_imports(module: str) -> set[str]:
    """The modules `module` imports when it is imported: not inside functions or classes,
    nor under ``if TYPE_CHECKING``."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            names.update(_imported(node))
            if isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody):
                    visit(block)
                for handler in node.handlers:
                    visit(handler.body)

    visit(ast.parse(MODULES[module].read_text()).body)
    return names


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _is_bare(m)))
def test_a_bare_install_imports_no_extra(module: str) -> None:
    """A module a bare `pip install metalog` uses imports an extra's library, or a module
    that needs one, only where it is used (inside the function), never when it is loaded."""
    imported = _top_level_imports(module)
    extras = sorted(f"{n} ([{EXTRAS[n.split('.')[0]]}])" for n in imported
                    if n.split(".")[0] in EXTRAS)  # fmt: skip
    needing = sorted(n for n in imported if n in MODULES and not _is_bare(n))
    assert not extras, f"{module} imports {extras} when loaded"
    assert not needing, f"{module} imports {needing} (they need an extra) when loaded"


BLOCKER = """
import importlib.abc, sys
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in EXTRAS:
            raise ImportError(f"{name} is an extra's")
sys.meta_path.insert(0, Blocker())
import metalog
for name in metalog.__all__:
    getattr(metalog, name)
from metalog.cli.commands import build_parser
build_parser().parse_args(["leader"])
"""


def test_the_public_api_and_the_command_line_load_without_the_extras() -> None:
    """A fresh interpreter where no extra can be imported loads every public name of
    `metalog` but the SQL errors (the `[sql]` extra's), and builds every command's parser."""
    probe = f"EXTRAS = {set(EXTRAS)!r}\n" + BLOCKER.replace(
        "for name in metalog.__all__:",
        "for name in set(metalog.__all__) - {'SqlError', 'SqlSyntaxError', "
        "'UnsupportedStatement', 'QueryError'}:")
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]


def test_the_shell_is_packages_with_a_static_command_table() -> None:
    """`metalog/` holds packages (`cli/`, `stack/`, `demo/`), not files named by prefix, and
    the command line lists its command groups as imports, not as strings to import."""
    flat = sorted(p.name for p in (ROOT / "metalog").glob("*.py")
                  if p.name.startswith(("cli", "stack", "demo")))  # fmt: skip
    assert not flat, f"flat shell files: {flat}"
    cli = sorted((ROOT / "metalog" / "cli").glob("*.py"))
    uses_importlib = [p.name for p in cli if "importlib" in _imports(_module_name(p))]
    assert not uses_importlib, f"found by importlib strings: {uses_importlib}"
    from metalog.cli import commands

    groups = {m.rsplit(".", 1)[1] for m in _imports("metalog.cli.commands") if m in MODULES
              and m.startswith("metalog.cli.")}  # fmt: skip
    listed = {f.__module__.rsplit(".", 1)[1] for f in commands.COMMANDS}
    with_parser = {p.stem for p in cli if "def add_parser(" in p.read_text()}
    assert listed == with_parser, f"command groups not listed: {sorted(with_parser - listed)}"
    assert listed <= groups


CONSUMERS = {
    "projector.kafka.clients",  # `new_consumer`: the reads of the log (`projector.kafka.partition`)
    "producers.client.channel",  # a client's replies
    "producers.leader.leader",  # the leaders' group on the commands topic
    "producers.leader.restart",  # the restart point's group offsets
}
"""The modules that make a Kafka consumer: the log itself is read through one reader."""


VARINT_STEP = re.compile(r"&\s*(0x7[fF]|127)\s*\)?\s*<<")
"""A 7-bit group shifted into place: the step of a hand-written varint decoder."""


def _calls_named(module: str, name: str) -> list[int]:
    tree = ast.parse(MODULES[module].read_text())
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == name)
        or (isinstance(node.func, ast.Attribute) and node.func.attr == name))]  # fmt: skip


@pytest.mark.parametrize("module", MODULES)
def test_the_log_is_read_through_one_reader(module: str) -> None:
    made = _calls_named(module, "Consumer")
    assert not made or module in CONSUMERS, (
        f"{module} makes a Kafka consumer (lines {made}): read a catalog's partition "
        "through projector.kafka.partition.PartitionReader (issue 44)"
    )


@pytest.mark.parametrize("module", MODULES)
def test_avro_bytes_are_read_by_generated_code_only(module: str) -> None:
    """A varint loop (`(b & 0x7F) << shift`) belongs to `events.compiled`'s templates."""
    if module.startswith("events.compiled"):
        return
    assert not VARINT_STEP.search(MODULES[module].read_text()), (
        f"{module} decodes Avro varints by hand: use the readers compiled from the schemas "
        "(events.compiled.partial.compile_prefix)"
    )
