"""The soak's Spark projection: a `metalog project` process, its JVM, and the end check.

The projection runs as a user runs it (`metalog project`, a continuous query
with its periodic compaction and maintenance); the soak samples the Python
driver and the JVM it starts, and at the end waits for the tables to reach the
follower's resource version and compares them with the follower's image
through the merged read without a JVM (`streaming.readers.read.read_current`).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from events.values import TableInfoValue
from projector.fold.image import Image
from streaming.readers.read import read_current

CATCH_UP_SECONDS = 600.0
"""How long the end check waits for the tables to reach the follower."""


def start(out: Path, bootstrap: str, prefix: str) -> subprocess.Popen[bytes]:
    """Start `metalog project` on the soak's cluster, its tables and checkpoint under `out`."""
    return subprocess.Popen(
        [sys.executable, "-m", "metalog.cli", "project", "--bootstrap", bootstrap,
         "--prefix", prefix, "--delta-dir", str(out / "tables"),
         "--checkpoint", str(out / "checkpoint"), "--json"],
        stdout=(out / "projection.jsonl").open("ab"), stderr=(out / "projection.log").open("ab"),
    )  # fmt: skip


def jvm_pid(driver: int) -> int | None:
    """The JVM the projection's Python driver started (its `java` child), if running."""
    with contextlib.suppress(OSError):
        for child in Path(f"/proc/{driver}/task/{driver}/children").read_text().split():
            if Path(f"/proc/{child}/comm").read_text().strip() == "java":
                return int(child)
    return None


def state_version(root: Path, catalog: str) -> int | None:
    """The catalog's resource version in the tables' merged read (None: not there yet)."""
    with contextlib.suppress(Exception):  # the tables may not exist yet: wait, do not fail
        for row in read_current(str(root), "catalog_state").to_pylist():
            if row["catalog"] == catalog:
                return int(row["resource_version"])
    return None


def tables_equal(root: Path, image: Image) -> dict[str, Any]:
    """Wait for the tables to reach `image`, then compare each table's version and options.

    The soak's commands create tables and alter their options, so each
    `table_info` row's version and options, and the catalog's resource
    version, are what the image says.

    Returns:
        `equal`, the tables' resource version, the tables compared, the seconds waited.
    """
    began = time.monotonic()
    seen = state_version(root, image.catalog)
    while seen != image.resource_version and time.monotonic() - began < CATCH_UP_SECONDS:
        time.sleep(2.0)
        seen = state_version(root, image.catalog)
    rows = read_current(str(root), "table_info").to_pylist()
    actual = {row["key"]: (row["version"], dict(row["options"] or ()))
              for row in rows if row["catalog"] == image.catalog}  # fmt: skip
    expected = {key: (value.version, dict(value.options))
                for key, value in image.published.items() if isinstance(value, TableInfoValue)}
    return {"equal": seen == image.resource_version and actual == expected,
            "resource_version": seen, "tables": len(actual),
            "waited_s": round(time.monotonic() - began)}  # fmt: skip
