"""`import metalog` is the one import home of the public API, and importing it is light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import metalog
from events.errors import MetalogError

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("confluent_kafka", "pyspark", "duckdb", "sqlglot", "pyarrow")


def _type_checking_names() -> set[str]:
    """The names metalog/__init__.py imports under TYPE_CHECKING (what mypy sees)."""
    tree = ast.parse((ROOT / "metalog" / "__init__.py").read_text())
    [block] = [n for n in tree.body if isinstance(n, ast.If)]
    return {a.asname or a.name for n in block.body if isinstance(n, ast.ImportFrom)
            for a in n.names}  # fmt: skip


@pytest.mark.parametrize("name", metalog.__all__)
def test_each_exported_name_resolves_to_its_home(name: str) -> None:
    value = getattr(metalog, name)
    assert value.__name__ == name
    assert value.__module__.split(".")[0] in ("events", "producers", "projector", "streaming",
                                              "metalog")  # fmt: skip


def test_the_promised_names_are_there_and_mypy_sees_the_same() -> None:
    promised = {"MetadataClient", "Leader", "Follower", "Image", "Column", "CreateTable",
                "SetAttributes", "Committed", "MetalogError", "CommandRejected",
                "VersionConflict", "LeaderUnavailable", "CommandOutcomeUnknown",
                "FollowerError", "SqlError"}  # fmt: skip
    assert promised <= set(metalog.__all__)
    assert _type_checking_names() == set(metalog.__all__)
    errors = [n for n in metalog.__all__ if n.endswith(("Error", "Rejected"))]
    assert all(issubclass(getattr(metalog, n), MetalogError) for n in errors)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        metalog.Nope  # noqa: B018


def _loaded(code: str) -> list[str]:
    probe = (f"import sys; {code}; "
             f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return ast.literal_eval(done.stdout.strip())


def test_import_metalog_alone_loads_no_outside_library() -> None:
    assert _loaded("import metalog") == []
    # The names are imported when used: the client brings Kafka.
    assert "confluent_kafka" in _loaded("import metalog; metalog.MetadataClient")


def test_each_public_name_is_named_once() -> None:
    """metalog/__init__.py lists a name in one place (the imports mypy reads), not twice."""
    source = (ROOT / "metalog" / "__init__.py").read_text()
    tree = ast.parse(source)
    aliases = [a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               for a in n.names]  # fmt: skip
    strings = [n.value for n in ast.walk(tree)
               if isinstance(n, ast.Constant) and isinstance(n.value, str)]  # fmt: skip
    for name in metalog.__all__:
        assert aliases.count(name) == 1, f"{name} is imported {aliases.count(name)} times"
        assert not any(name in s.split() for s in strings), f"{name} is also named in a string"
