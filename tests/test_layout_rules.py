"""The layout keeps issue 44's rules: one home per idea, a shell that is only a shell.

The contract has no import-time side effects or module state; a bare install
(`pip install metalog`: the client, the leader, the follower) loads no extra's
library; the shell is packages with a static command table; the log is read
through one reader; Avro bytes are read by generated code only.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest

from tests.fixtures.modules import MODULES, ROOT, attributes, imported, imports, module_name

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
        for name, line in attributes(statement, READS_THE_PROCESS):
            faults.append(f"reads {name} on import (line {line})")
    return faults


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.split(".")[0] == "events"))
def test_the_contract_has_no_import_time_side_effects_or_module_state(module: str) -> None:
    """Issue 44 item 6: importing `events` reads no environment or randomness, raises
    nothing, and leaves no mutable container at module level (a process-wide value is
    made on first use, behind `functools.cache`, as `events.pool.default_pool`)."""
    faults = _import_time_faults(module)
    assert not faults, f"{module}: {faults}"


EXTRAS = {
    "pyspark": "spark", "delta": "spark", "pandas": "spark", "deltalake": "spark or sql",
    "duckdb": "spark or sql", "sqlglot": "sql", "fastapi": "serve", "uvicorn": "serve",
    "starlette": "serve",
}  # fmt: skip
"""The libraries of the optional dependency groups (pyproject.toml), and their group."""

NOT_BARE = ("producers.sql", "server", "streaming", "metalog.demo", "chaos.soak_projection")
"""What needs an extra: the SQL home, the server, the Spark jobs and readers, the demo, the
soak's check of the projection's tables."""

BARE_IN_NOT_BARE = ("streaming", "streaming.errors", "streaming.spark", "streaming.spark.config",
                    "streaming.spark.jars")  # fmt: skip
"""What a bare install still imports from them: the command line's Spark flags and the jars
the local stack resolves."""


def _is_bare(module: str) -> bool:
    return module in BARE_IN_NOT_BARE or not any(
        module == p or module.startswith(p + ".") for p in NOT_BARE)


def _top_levelimports(module: str) -> set[str]:
    """The modules `module` imports when it is imported: not inside functions or classes,
    nor under ``if TYPE_CHECKING``."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            names.update(imported(node))
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
    imported = _top_levelimports(module)
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
    uses_importlib = [p.name for p in cli if "importlib" in imports(module_name(p))]
    assert not uses_importlib, f"found by importlib strings: {uses_importlib}"
    from metalog.cli import commands

    groups = {m.rsplit(".", 1)[1] for m in imports("metalog.cli.commands") if m in MODULES
              and m.startswith("metalog.cli.")}  # fmt: skip
    listed = {f.__module__.rsplit(".", 1)[1] for f in commands.COMMANDS}
    with_parser = {p.stem for p in cli if "def add_parser(" in p.read_text()}
    assert listed == with_parser, f"command groups not listed: {sorted(with_parser - listed)}"
    assert listed <= groups


CONSUMERS = {
    "projector.kafka.clients",  # `new_consumer`: the reads of the log (`projector.kafka.partition`)
    "producers.client.channel",  # a client's replies
    "producers.leader.leader",  # the leaders' group on the commands topic
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
def test_a_partitions_ends_are_asked_through_the_one_reader(module: str) -> None:
    asked = _calls_named(module, "watermarks")
    assert not asked or module == "projector.kafka.partition", (
        f"{module} asks Kafka for a partition's watermarks (lines {asked}): ask "
        "projector.kafka.partition (PartitionReader.bounds, partition_bounds), which puts "
        "Kafka's failures in metalog's words (issue 44)"
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
