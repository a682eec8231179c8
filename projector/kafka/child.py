"""A child Python process that reads the log for this one (two cores: reading and the work).

Reading a big log costs about as much as checking it, so `metalog audit verify`
hands the reading to a child (`projector.audit.read`): it gets its task as one
pickle on stdin and writes pickles to stdout. The child imports this package
from the same root as this process, whatever the caller's working directory.
(A replay does not: shipping decoded events costs more than a busy second core
gives; docs/benchmarks/replay.md.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def start_child(module: str) -> subprocess.Popen[bytes]:
    """`python -m module` with pipes on stdin and stdout; its stderr is discarded (a
    failure arrives in its output, or as the end of it)."""
    root = str(Path(__file__).resolve().parents[2])  # the package's root, for the child
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", module], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
