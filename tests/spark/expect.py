"""Compare the projection's current state (read without a JVM) with the Python fold.

`Rows` reads one per-kind table's rows: the merged read (`read_current`) by
default, the compacted tables as stored (`read_rows`) to check a compaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from events.labels import region_label_rows
from events.values import (
    DatanodeTableValue,
    KeyValue,
    LabelRuleValue,
    TableInfoValue,
    TableNameValue,
    TableRouteValue,
)
from projector.fold.image import Image
from streaming.readers.read import read_current

Key = tuple[str, str]
Rows = Callable[[str, str], list[dict[str, Any]]]


def current_rows(root: str, kind: str) -> list[dict[str, Any]]:
    """The merged read of one per-kind table, as dicts."""
    return read_current(root, kind).to_pylist()


def _info(row: dict[str, Any]) -> TableInfoValue:
    fields = {k: row[k] for k in TableInfoValue.model_fields if k not in ("type", "options")}
    return TableInfoValue(**fields, options=dict(row["options"] or ()))


def _keyed(root: str, table: str, rows_of: Rows) -> dict[Key, dict[str, Any]]:
    rows = rows_of(root, table)
    keyed = {(row["catalog"], row["key"]): row for row in rows}
    assert len(keyed) == len(rows), f"{table} holds a key twice"
    return keyed


def delta_values(root: str, rows_of: Rows = current_rows) -> dict[Key, KeyValue]:
    """Every (catalog, key) → value that the current-state tables hold."""
    values: dict[Key, KeyValue] = {}
    for key, row in _keyed(root, "table_info", rows_of).items():
        values[key] = _info({**row, "catalog": row["info_catalog"]})
    for key, row in _keyed(root, "table_name", rows_of).items():
        values[key] = TableNameValue(table_id=row["table_id"])
    for key, row in _keyed(root, "table_route", rows_of).items():
        values[key] = TableRouteValue(table_id=row["table_id"], region_routes=row["region_routes"])
    for key, row in _keyed(root, "datanode_table", rows_of).items():
        values[key] = DatanodeTableValue(**{k: row[k] for k in (
            "datanode_id", "table_id", "regions", "version")})
    for key, row in _keyed(root, "label_rule", rows_of).items():
        values[key] = LabelRuleValue(**{k: row[k] for k in (
            "rule_id", "rule_type", "labels", "ranges")})
    for key, row in _keyed(root, "dropped_tables", rows_of).items():
        if row["kind"] == "table_info":
            values[key] = _info(row["table_info"])
        else:
            values[key] = TableRouteValue(**row["table_route"])
    return values


def published_values(images: Iterable[Image]) -> dict[Key, KeyValue]:
    """Every (catalog, key) → value of the images' published views."""
    return {(image.catalog, key): value for image in images
            for key, value in image.published.items()}


def region_labels(root: str, rows_of: Rows = current_rows
                  ) -> dict[str, list[tuple[str, str, str, str]]]:
    """`region_label` rows per catalog, in `region_label_rows` order."""
    out: dict[str, list[tuple[str, str, str, str]]] = {}
    for row in rows_of(root, "region_label"):
        out.setdefault(row["catalog"], []).append(
            (row["rule_id"], row["rule_type"], row["region_label"], row["ranges"]))
    return {catalog: sorted(rows, reverse=True) for catalog, rows in out.items()}


def expected_region_labels(images: Iterable[Image]) -> dict[str, list[tuple[str, str, str, str]]]:
    """What `events.labels.region_label_rows` renders for each catalog's published rules."""
    out = {}
    for image in images:
        rows = region_label_rows(image.published.label_rules())
        if rows:
            out[image.catalog] = [(r.rule_id, r.rule_type, r.region_label, r.ranges) for r in rows]
    return out


def catalog_states(root: str, rows_of: Rows = current_rows
                   ) -> dict[str, tuple[int, int, int, str]]:
    """`catalog_state` as catalog → (resource_version, stable, leader_epoch, mode)."""
    return {row["catalog"]: (row["resource_version"], row["stable_epoch"], row["leader_epoch"],
                             row["publish_mode"]) for row in rows_of(root, "catalog_state")}


def expected_states(images: Iterable[Image]) -> dict[str, tuple[int, int, int, str]]:
    """The images' resource_version, stable epoch, leader epoch and publish mode."""
    return {image.catalog: (image.resource_version, image.stable_epoch, image.leader_epoch,
                            image.publish_mode) for image in images}


def assert_projection_equals(root: str, images: Iterable[Image],
                             rows_of: Rows = current_rows) -> None:
    """Every per-kind table equals the Python fold's published view, key by key.

    Args:
        root: The tables root.
        images: The Python fold's images of every catalog projected.
        rows_of: How a table is read: the merged read, or `read_rows` for
            the compacted tables as stored.
    """
    images = list(images)
    actual, expected = delta_values(root, rows_of), published_values(images)
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        assert actual[key] == value, key
    assert region_labels(root, rows_of) == expected_region_labels(images)
    assert catalog_states(root, rows_of) == expected_states(images)
