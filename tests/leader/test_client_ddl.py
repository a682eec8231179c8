"""Purge, truncate and partition DDL through `MetadataClient`, a real leader and broker.

Each test reads back what a user of the client sees after the call: the
export (every committed key and value) and the image replayed from the log.
The expectations come from DESIGN.md ("Commands and their rules") and TiDB's
region-label proposal (the seeds): truncate gives new ids and the label
ranges follow; a dropped partition's rule goes at once; exchange swaps the
ids and the rules with them; purge deletes a dropped table's `__removed-` keys
and label rules for good. Rule ranges are TiDB's record-key ranges of the
ids (`record_key_range`, checked against TiDB's printed example in
tests/domain/test_labels.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from events.labels import record_key_range
from events.values import Column, TableInfoValue
from producers.client.client import MetadataClient
from producers.errors import TableNotFound
from producers.leader.leader import Leader
from tests.fixtures.kafka import TopicSet
from tests.leader.conftest import log_of
from tests.leader.history import check_history

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"), Column(name="amount", data_type="float64"))
TABLE_RULE = "__label_rule/schema/public/orders"


def _info(client: MetadataClient, table: str) -> TableInfoValue:
    info = client.image().head.table_by_name("public", table)
    assert info is not None, f"public.{table} is not in the image"
    return info


def _ids(info: TableInfoValue) -> dict[str, int]:
    """The table's physical ids: the table's own under "", each partition's under its name."""
    return {"": info.table_id, **{p.name: p.partition_id for p in info.partitions}}


def _ranges(*ids: int) -> list[dict[str, Any]]:
    """A rule's ranges as the export shows them: one record-key range per id, ascending."""
    return [record_key_range(i).model_dump(mode="json") for i in sorted(ids)]


def _labels(metadata: dict[str, Any], key: str) -> str:
    return ",".join(f"{label['key']}={label['value']}" for label in metadata[key]["labels"])


def _partitioned(client: MetadataClient) -> TableInfoValue:
    """`public.orders` with partitions p0, p1, a table rule and a rule of p0's own."""
    client.create_table("public", "orders", COLUMNS, partitions=("p0", "p1"))
    client.set_attributes("public", "orders", "merge_option=deny")
    client.set_attributes("public", "orders", "merge_option=allow", partition_name="p0")
    return _info(client, "orders")


def test_purge_table_deletes_a_dropped_tables_keys_and_rules_for_good(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    client.create_table("public", "keep", COLUMNS)
    kept = client.export()["metadata"]
    orders = _partitioned(client)
    old = _ids(orders)
    client.drop_table("public", "orders")
    dropped = client.export()["metadata"]
    assert f"__removed-__table_info/{orders.table_id}" in dropped and TABLE_RULE in dropped

    purged = client.purge_table(orders.table_id)

    assert [t.table_id for t in purged.tables] == [orders.table_id]
    assert client.export()["metadata"] == kept  # nothing of orders is left; keep is untouched
    assert list(client.image().head.dropped_tables()) == []
    with pytest.raises(TableNotFound):
        client.recover_table("public", "orders")
    client.create_table("public", "orders", COLUMNS, partitions=("p0",))
    assert set(_ids(_info(client, "orders")).values()).isdisjoint(old.values())  # never reused
    check_history(log_of(wire))


def test_truncate_table_gives_the_table_and_its_partitions_new_ids_and_the_rules_follow(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    before = _partitioned(client)
    old = _ids(before)

    truncated = client.truncate_table("public", "orders")

    after = _info(client, "orders")
    new = _ids(after)
    assert set(new) == set(old) and set(new.values()).isdisjoint(old.values())
    assert after.columns == before.columns
    assert new[""] in [t.table_id for t in truncated.tables]
    metadata = client.export()["metadata"]
    assert metadata["__table_name/greptime/public/orders"]["table_id"] == new[""]
    assert f"__table_info/{old['']}" not in metadata
    assert f"__table_route/{old['']}" not in metadata
    assert metadata[f"__table_route/{new['']}"]["table_id"] == new[""]
    assert metadata[TABLE_RULE]["ranges"] == _ranges(*new.values())
    assert metadata[f"{TABLE_RULE}/p0"]["ranges"] == _ranges(new["p0"])
    assert (_labels(metadata, TABLE_RULE), _labels(metadata, f"{TABLE_RULE}/p0")) == (
        "merge_option=deny",
        "merge_option=allow",
    )
    check_history(log_of(wire))


def test_add_truncate_and_drop_partition_change_ids_and_rules_as_tidb_does(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    old = _ids(_partitioned(client))
    seen = set(old.values())

    client.add_partition("public", "orders", "p2")
    added = _ids(_info(client, "orders"))
    assert list(added) == ["", "p0", "p1", "p2"] and added["p2"] not in seen
    assert client.export()["metadata"][TABLE_RULE]["ranges"] == _ranges(*added.values())
    seen.add(added["p2"])

    client.truncate_partition("public", "orders", "p0")
    truncated = _ids(_info(client, "orders"))
    assert truncated["p0"] not in seen
    assert {k: v for k, v in truncated.items() if k != "p0"} == {
        k: v for k, v in added.items() if k != "p0"
    }
    metadata = client.export()["metadata"]
    assert metadata[f"{TABLE_RULE}/p0"]["ranges"] == _ranges(truncated["p0"])
    assert metadata[TABLE_RULE]["ranges"] == _ranges(*truncated.values())

    client.drop_partition("public", "orders", "p0")
    dropped = _ids(_info(client, "orders"))
    assert dropped == {k: v for k, v in truncated.items() if k != "p0"}
    metadata = client.export()["metadata"]
    assert f"{TABLE_RULE}/p0" not in metadata  # at once, not at GC
    assert metadata[TABLE_RULE]["ranges"] == _ranges(*dropped.values())
    assert _labels(metadata, TABLE_RULE) == "merge_option=deny"
    check_history(log_of(wire))


def test_exchange_partition_swaps_the_ids_and_the_rules_go_with_them(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    orders = _partitioned(client)
    client.create_table("public", "plain", COLUMNS, datanodes=(2,))
    client.set_attributes("public", "plain", "zone=cold")
    plain = _info(client, "plain")
    old = _ids(orders)

    exchanged = client.exchange_partition(
        "public", "orders", "p0", "public", "plain",
        expected_version=orders.version, other_expected_version=plain.version,
    )  # fmt: skip

    orders_after, plain_after = _info(client, "orders"), _info(client, "plain")
    assert _ids(orders_after) == {**old, "p0": plain.table_id}
    assert plain_after.table_id == old["p0"]
    assert orders_after.version == orders.version + 1
    # Versions go on per name: the table leaving `plain` takes this event's version
    # (plain.version + 1), and the id taking the name goes on above it.
    assert plain_after.version == plain.version + 2
    assert {orders.table_id, plain_after.table_id} <= {t.table_id for t in exchanged.tables}
    metadata = client.export()["metadata"]
    assert metadata["__table_name/greptime/public/plain"]["table_id"] == old["p0"]
    assert f"__table_route/{plain.table_id}" not in metadata
    assert metadata[f"__table_route/{old['p0']}"]["table_id"] == old["p0"]
    plain_rule = "__label_rule/schema/public/plain"
    assert (_labels(metadata, f"{TABLE_RULE}/p0"), metadata[f"{TABLE_RULE}/p0"]["ranges"]) == (
        "zone=cold",
        _ranges(plain.table_id),
    )
    assert (_labels(metadata, plain_rule), metadata[plain_rule]["ranges"]) == (
        "merge_option=allow",
        _ranges(old["p0"]),
    )
    assert metadata[TABLE_RULE]["ranges"] == _ranges(*_ids(orders_after).values())
    check_history(log_of(wire))
