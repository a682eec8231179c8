"""`streaming.read`: the JVM-free reader (no Spark needed; deltalake writes the fixture)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from streaming.read import TABLES, read_rows, read_table, table_uri


def test_reads_a_table_and_its_versions(tmp_path: Path) -> None:
    uri = table_uri(str(tmp_path), "catalog_state")
    write_deltalake(uri, pa.table({"catalog": ["a"], "resource_version": [1]}))
    write_deltalake(uri, pa.table({"catalog": ["b"], "resource_version": [2]}), mode="append")

    assert read_table(str(tmp_path), "catalog_state", version=0).num_rows == 1
    assert sorted(r["catalog"] for r in read_rows(str(tmp_path), "catalog_state")) == ["a", "b"]


def test_names_outside_the_projection_are_refused() -> None:
    assert "region_label" in TABLES and "metadata_log" in TABLES
    with pytest.raises(ValueError, match="not a projection table"):
        table_uri("/data", "tables")
