"""`metalog project --master spark://…` on a standalone master and worker (pyspark's own
launcher, on loopback) writes the same tables as `local[2]`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyspark
import pytest

from bench.workload import Workload, encoded, produce
from tests.fixtures.kafka import TopicSet
from tests.spark.expect import assert_projection_equals, delta_values

pytestmark = [pytest.mark.spark, pytest.mark.integration]

MASTER_PORT, MASTER_UI, WORKER_UI = 17077, 18080, 18081
MASTER = f"spark://127.0.0.1:{MASTER_PORT}"


def _spark_class(*args: str, log: Path) -> subprocess.Popen[bytes]:
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    with log.open("ab") as out:
        return subprocess.Popen([str(home / "bin" / "spark-class"), *args], env=env,
                                stdout=out, stderr=out)  # fmt: skip


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone master and one worker (1 core, 1 GiB) on loopback."""
    logs = tmp_path_factory.mktemp("standalone")
    master = _spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                          "--port", str(MASTER_PORT), "--webui-port", str(MASTER_UI),
                          log=logs / "master.log")  # fmt: skip
    worker = _spark_class("org.apache.spark.deploy.worker.Worker", MASTER, "--host",
                          "127.0.0.1", "--webui-port", str(WORKER_UI), "--cores", "1",
                          "--memory", "1g", "--work-dir", str(logs / "work"),
                          log=logs / "worker.log")  # fmt: skip
    try:
        deadline = time.monotonic() + 120.0
        while b"Successfully registered with master" not in _read(logs / "worker.log"):
            assert time.monotonic() < deadline, _read(logs / "worker.log")[-2000:]
            assert worker.poll() is None and master.poll() is None, "master or worker exited"
            time.sleep(0.5)
        yield MASTER
    finally:
        for process in (worker, master):
            process.terminate()
            process.wait(timeout=60.0)


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def _project(made: TopicSet, master: str, root: Path, *flags: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "metalog.cli", "project", "--master", master,
         "--bootstrap", made.bootstrap, "--prefix", made.prefix,
         "--delta-dir", str(root / "tables"), "--checkpoint", str(root / "cp"), "--once",
         *flags],
        capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "METALOG_STATE_DIR": str(root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # What Spark's JVM and its Python workers print goes to Spark's log, not to the user.
    assert "Python worker" not in done.stdout + done.stderr
    assert "py4j" not in done.stderr
    assert "TransformWithStateInPandas Python worker" in _read(root / "spark.log").decode()
    return done.stdout


def test_the_projection_on_a_standalone_cluster_equals_local(
    standalone: str, topics: Callable[..., TopicSet], tmp_path: Path
) -> None:
    made = topics(2)
    work = Workload(["alpha", "beta"], seed=11)
    work.run(40)
    records = encoded(work.events())
    produce(made.bootstrap, made.events, records, 2)

    _project(made, standalone, tmp_path / "cluster")
    lines = [json.loads(line) for line in
             _project(made, "local[2]", tmp_path / "local", "--json").splitlines()]  # fmt: skip

    *batches, done = lines  # `--json`: a line per micro-batch, then the summary
    assert batches and all(b["input_rows"] >= 0 and b["duration_ms"] > 0 for b in batches)
    assert done == {"done": True, "topic": made.events,
                    "delta_dir": str(tmp_path / "local" / "tables"),
                    "batches": len(batches), "input_rows": len(records)}  # fmt: skip

    images = [c.image for c in work.catalogs.values()]
    assert_projection_equals(str(tmp_path / "cluster" / "tables"), images)
    assert delta_values(str(tmp_path / "cluster" / "tables")) == delta_values(
        str(tmp_path / "local" / "tables")
    )
