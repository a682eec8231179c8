"""A bare `pip install metalog` serves a client, a leader and a follower without Spark.

The package (a copy of the source tree, so the build writes nothing into the
repository) is installed with its bare dependencies into a fresh virtualenv
(pip resolves them from its cache and `PIP_FIND_LINKS`, or from the index);
there a leader, a client and a follower work against the test's broker while
pyspark, DuckDB and sqlglot are not importable. The extras are `[spark]`,
`[sql]` and `[serve]` (pyproject.toml); `tests/test_layout_rules.py` keeps their
imports off the bare path, this test proves it with a real install.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.kafka import TopicSet

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "events", "producers", "projector", "streaming",
           "server", "metalog")  # fmt: skip

CLIENT = """
import sys
from metalog import Column, Follower, Leader, MetadataClient, Topics

for extra in ("pyspark", "duckdb", "sqlglot", "deltalake", "fastapi"):
    try:
        __import__(extra)
    except ImportError:
        continue
    sys.exit(f"{extra} is importable in a bare install")

bootstrap, prefix = sys.argv[1], sys.argv[2]
topics = Topics(prefix)
with Leader(bootstrap, topics=topics, group_id=f"{prefix}-leaders") as leader:
    assert leader.wait_until_serving(1, timeout=60.0), "the leader never owned its partition"
    with MetadataClient(bootstrap, catalog="bare", actor="svc", topics=topics) as client:
        done = client.create_table("public", "orders", [Column(name="id", data_type="int64")])
    with Follower(bootstrap, "bare", topics=topics) as follower:
        image = follower.wait_for(done.resource_version, timeout=30.0)
        print(image.published.table_by_name("public", "orders").table_name)
"""


def test_a_bare_install_runs_a_leader_a_client_and_a_follower_without_spark(
    wire: TopicSet, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name,
                            ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
        else:
            shutil.copy(ROOT / name, source / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(source)],
                             capture_output=True, text=True)  # fmt: skip
    assert install.returncode == 0, install.stderr[-3000:]

    run = subprocess.run([str(python), "-c", CLIENT, wire.bootstrap, wire.prefix],
                         cwd=tmp_path, capture_output=True, text=True)  # fmt: skip

    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "orders"
