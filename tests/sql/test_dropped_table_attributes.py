"""A dropped table's attributes stay with its id: every view of a table agrees with REGION_LABEL.

Issue 50, item 3 (seeds/tidb-region-label-sql.md, "DDL management"): rule ids hold names
and ranges hold ids. A dropped table's rule stays, over the dropped id's ranges, until it
is purged or recovered; a new table under that name (created, or renamed onto it) starts
with none, and SHOW ATTRIBUTES, SHOW CREATE TABLE, `View.attributes`,
INFORMATION_SCHEMA.ATTRIBUTES and REGION_LABEL say the same for every id.
"""

from __future__ import annotations

import pytest

from events.commands import DropTable, RecoverTable, RenameTable, SetAttributes
from events.labels import record_key_range, rule_id
from events.values import Label
from producers.leader.leader import Leader
from producers.leader.local import LocalCatalog
from producers.sql.engine import Engine
from tests.domain.builders import SCHEMA, command, create, local
from tests.fixtures.kafka import TopicSet
from tests.sql.test_sql_cli import image, sql


def rng(physical_id: int) -> str:
    r = record_key_range(physical_id)
    return f"[{r.start_key}, {r.end_key}]"


def attributes(text: str, table: str = "t1f", partition: str | None = None) -> SetAttributes:
    return command(SetAttributes, table_name=table, partition_name=partition, attributes=text)


def shown(catalog: LocalCatalog, table: str) -> dict[str, str]:
    """SHOW ATTRIBUTES FOR TABLE: rule id → labels, after checking that every view agrees."""
    agree(catalog)
    return {row[0]: row[2] for row in Engine(catalog.image).show_attributes(SCHEMA, table, None)
            .rows}  # fmt: skip


def agree(catalog: LocalCatalog) -> None:
    """For every live table and partition, each view shows the rule REGION_LABEL gives its id."""
    engine = Engine(catalog.image)
    region = engine.query("SELECT * FROM region_label").rows
    assert engine.query("SELECT * FROM attributes").rows == region
    view = catalog.image.published
    for (name,) in engine.query("SELECT table_name FROM table_info").rows:
        info = view.table_by_name(SCHEMA, name)
        assert info is not None
        ids: dict[str | None, int] = {None: info.table_id}
        ids.update({p.name: p.partition_id for p in info.partitions})
        # What REGION_LABEL says: the rule of that name whose ranges cover the id, if any.
        covering = {part: next((row[2] for row in region if row[0] == rule_id(SCHEMA, name, part)
                                and rng(physical_id) in row[3]), None)
                    for part, physical_id in ids.items()}  # fmt: skip
        rows = {r[0]: r[2] for r in engine.show_attributes(SCHEMA, name, None).rows}
        assert rows.get(rule_id(SCHEMA, name)) == covering[None]
        labels = view.attributes(SCHEMA, name)
        assert ",".join(f'"{x.key}={x.value}"' for x in labels) == (covering[None] or "")
        [(_, text)] = engine.show_create_table(SCHEMA, name).rows
        assert text.count("ATTRIBUTES=") == sum(rule is not None for rule in covering.values())
        for rule in covering.values():
            if rule is not None:  # REGION_LABEL's '"k=v","k1=v1"' is ATTRIBUTES="k=v,k1=v1"
                assert 'ATTRIBUTES="' + rule.replace('","', ",").strip('"') + '"' in text


def test_a_new_table_under_a_dropped_tables_name_starts_with_no_attributes() -> None:
    catalog = local()
    catalog.submit(create("t1f", partitions=("p0",)))
    catalog.submit(attributes("merge_option=deny"))
    catalog.submit(attributes("merge_option=allow", partition="p0"))
    dropped = catalog.image.head.table_by_name(SCHEMA, "t1f")
    assert dropped is not None
    catalog.submit(command(DropTable, table_name="t1f"))
    catalog.submit(create("t1f", partitions=("p0",)))
    # The issue: SHOW ATTRIBUTES and SHOW CREATE TABLE gave the new table the dropped one's.
    assert shown(catalog, "t1f") == {}
    assert catalog.image.published.attributes(SCHEMA, "t1f", "p0") == ()
    # REGION_LABEL keeps the dropped table's rules over the dropped ids, for RECOVER.
    region = Engine(catalog.image).query("SELECT RULE_ID, RANGES FROM region_label").rows
    p0 = dropped.partitions[0].partition_id
    assert region == (
        ("schema/public/t1f/p0", rng(p0)),
        ("schema/public/t1f", f"{rng(dropped.table_id)}, {rng(p0)}"),
    )


def test_a_table_renamed_onto_a_dropped_name_keeps_its_own_attributes_only() -> None:
    catalog = local()
    catalog.submit(create("t1f"))
    catalog.submit(attributes("merge_option=deny"))
    catalog.submit(command(DropTable, table_name="t1f"))
    catalog.submit(create("other"))
    catalog.submit(command(RenameTable, table_name="other", new_table_name="t1f"))
    assert shown(catalog, "t1f") == {}
    catalog.submit(command(RenameTable, table_name="t1f", new_table_name="other"))
    catalog.submit(attributes("a=1", table="other"))
    catalog.submit(command(RenameTable, table_name="other", new_table_name="t1f"))
    # Its own rule follows it (replacing the dropped one's, as PD keeps one rule per id).
    assert shown(catalog, "t1f") == {"schema/public/t1f": '"a=1"'}


def test_recover_and_flashback_to_a_new_name_bring_the_dropped_tables_attributes_back() -> None:
    catalog = local()
    catalog.submit(create("t1f"))
    catalog.submit(attributes("merge_option=deny"))
    catalog.submit(command(DropTable, table_name="t1f"))
    catalog.submit(create("t1f"))
    assert shown(catalog, "t1f") == {}
    # The new table moves away (its name is needed free), taking no rule with it.
    catalog.submit(command(RenameTable, table_name="t1f", new_table_name="t2"))
    assert shown(catalog, "t2") == {}
    # FLASHBACK TABLE t1f TO t1g: RecoverTable, then RenameTable; the rule follows the name.
    catalog.submit(command(RecoverTable, table_name="t1f"))
    assert shown(catalog, "t1f") == {"schema/public/t1f": '"merge_option=deny"'}
    catalog.submit(command(RenameTable, table_name="t1f", new_table_name="t1g"))
    assert shown(catalog, "t1g") == {"schema/public/t1g": '"merge_option=deny"'}
    assert catalog.image.published.attributes(SCHEMA, "t1g") == (
        Label(key="merge_option", value="deny"),)  # fmt: skip
    assert [r[0] for r in Engine(catalog.image).query("SELECT * FROM region_label").rows] == [
        "schema/public/t1g"]  # fmt: skip


@pytest.mark.integration
def test_the_issues_script_through_metalog_sql(
    wire: TopicSet, leader: Leader, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = sql(wire, capsys, """
        CREATE TABLE test.t1f (id INT);
        ALTER TABLE test.t1f ATTRIBUTES='merge_option=deny';
        DROP TABLE test.t1f;
        CREATE TABLE test.t1f (id INT);
        SHOW ATTRIBUTES FOR TABLE test.t1f;
        SHOW CREATE TABLE t1f;
        SELECT * FROM INFORMATION_SCHEMA.REGION_LABEL;
        RENAME TABLE t1f TO t2;
        FLASHBACK TABLE t1f TO t1g;
        SHOW ATTRIBUTES FOR TABLE t1g;
        SHOW CREATE TABLE t1g;
        SELECT RULE_ID FROM INFORMATION_SCHEMA.REGION_LABEL""")  # fmt: skip
    assert code == 0, out
    reads = [s for s in out["statements"] if s["kind"] == "read"]
    dropped = image(wire).published.table_by_name("test", "t1g")
    assert dropped is not None
    assert reads[0]["rows"] == []  # the new t1f has no attributes of its own
    assert "ATTRIBUTES" not in reads[1]["rows"][0][1]
    # The dropped table's rule stays over its own id, for the FLASHBACK below.
    assert reads[2]["rows"] == [["schema/test/t1f", "key-range", '"merge_option=deny"',
                                 rng(dropped.table_id)]]  # fmt: skip
    assert reads[3]["rows"] == [["schema/test/t1g", "key-range", '"merge_option=deny"',
                                 rng(dropped.table_id)]]  # fmt: skip
    assert '/*T![attributes] ATTRIBUTES="merge_option=deny" */' in reads[4]["rows"][0][1]
    assert reads[5]["rows"] == [["schema/test/t1g"]]
