"""The SQL step of `make demo`, run as `python -m metalog.demo.sql` against a real broker:
it writes through `metalog sql`, reads REGION_LABEL and SHOW CREATE TABLE back, and
prints nothing but metalog's own words."""

from __future__ import annotations

import pytest

from tests.fixtures.demo import run_step
from tests.fixtures.kafka import TopicSet

pytestmark = pytest.mark.integration


def test_the_demo_sql_step(wire: TopicSet) -> None:
    done = run_step("metalog.demo.sql", wire)
    out = done.stdout
    assert "$ metalog sql" in out and "ALTER TABLE invoices PARTITION p2026 ATTRIBUTES" in out
    assert out.count("OK ") == 3  # the three writes, each with its resource_version
    # REGION_LABEL: the table's rule and the partition's, TiDB's way of printing labels.
    assert "schema/public/invoices/p2026" in out and '"merge_option=allow"' in out
    assert '"merge_option=deny"' in out
    assert "RULE_ID" in out and "REGION_LABEL" in out and "RANGES" in out
    # SHOW CREATE TABLE carries the attributes as TiDB's versioned comment.
    assert "CREATE TABLE `invoices`" in out
    assert '/*T![attributes] ATTRIBUTES="merge_option=deny" */' in out
    # No library chatter: no logging lines, no binding leak reports, nothing on stderr.
    assert done.stderr == ""
    assert "nanobind" not in out and "WARNING" not in out
