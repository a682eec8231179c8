"""`metalog show`, `metalog snapshot` and `follow_demo` against a real broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from events.values import TableInfoValue
from metalog.cli import main
from metalog.cli.follow import follow_demo
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import CATALOG, produce, random_log

pytestmark = pytest.mark.integration


def test_show_snapshot_and_the_demo_hook(
    wire: TopicSet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = random_log(15, seed=2)
    produce(wire, catalog.events)
    where = ["--bootstrap", wire.bootstrap, "--prefix", wire.prefix, "--catalog", CATALOG]
    assert main(["show", *where]) == 0
    shown = capsys.readouterr().out
    rules = catalog.image.published.label_rules()
    assert rules  # each rule's labels print as TiDB's attribute string, `k=v,k1=v1`
    assert all(rule.rule_id in shown for rule in rules)
    assert all(",".join(f"{x.key}={x.value}" for x in rule.labels) in shown for rule in rules)
    tables = [v for _, v in catalog.image.published.items() if isinstance(v, TableInfoValue)]
    assert tables and f"resource_version {catalog.image.resource_version}" in shown
    assert all(f"{t.schema_name}.{t.table_name}" in shown for t in tables)
    assert main(["snapshot", "create", *where, "--snapshot-dir", str(tmp_path)]) == 0
    assert main(["snapshot", "verify", *where, "--snapshot-dir", str(tmp_path)]) == 0
    assert "OK" in capsys.readouterr().out
    [path] = (tmp_path / CATALOG).glob("*.parquet")
    path.write_bytes(b"not parquet")
    assert main(["snapshot", "list", *where, "--snapshot-dir", str(tmp_path)]) == 1
    assert follow_demo(wire.bootstrap, wire.topics, CATALOG) == catalog.image
