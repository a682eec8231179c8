"""What a snapshot load asks of Arrow (`projector.snapshot.arrow`): no pandas, malloc's pages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from projector.fold.apply import replay
from projector.fold.image import Image
from projector.snapshot.arrow import system_allocator
from projector.snapshot.store import Position, read_snapshot, write_snapshot
from tests.follower.workload import CATALOG, random_log

_ROOT = Path(__file__).resolve().parents[2]


def _snapshot(folder: Path) -> Path:
    image = replay(Image.empty(CATALOG), random_log(60, seed=3).events)
    return write_snapshot(folder, image, Position("t.events", 0, 7))


def test_loading_a_snapshot_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow imports pandas (≈ 0.35 s) when it first builds an array from Python
    values: a cold leader would pay it on its takeover's clock."""
    path = _snapshot(tmp_path)
    script = (
        "import sys\n"
        "from projector.snapshot.store import read_snapshot\n"
        f"image, _ = read_snapshot({str(path)!r})\n"
        "head = image.head\n"
        "assert head.datanode_table_ids(1) and all(head.get(key) for key in list(head.values))\n"
        "print('pandas' in sys.modules)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=_ROOT, capture_output=True, text=True, check=True
    )
    assert run.stdout.strip() == "False", run.stderr


def test_a_load_decodes_with_the_system_allocator_and_restores_the_default(
    tmp_path: Path,
) -> None:
    """mimalloc, Arrow's default, maps huge pages: their faults cost seconds of a load."""
    path = _snapshot(tmp_path)
    default, system = pa.default_memory_pool().backend_name, pa.system_memory_pool()
    before = system.bytes_allocated()
    image, _ = read_snapshot(path)
    assert system.bytes_allocated() > before  # the view's columns live there
    assert pa.default_memory_pool().backend_name == default
    with system_allocator():
        with system_allocator():
            assert pa.default_memory_pool().backend_name == "system"
        assert pa.default_memory_pool().backend_name == "system"
    assert pa.default_memory_pool().backend_name == default
    assert len(image.head) > 0
