"""The SQL relations over the Spark projection's Delta tables, without a JVM.

`DeltaSource(root, catalog)` is a `producers.sql.source.Source`: `metalog sql
--delta-dir DIR` runs the same queries over the projection's current-state
tables as over a follower's image. Each relation has the columns the image's
relation has (`producers.sql.relations.SCHEMAS`), built from one catalog's
rows of the merged read (`streaming.readers.read.read_current`: the compacted per-kind
tables and the newer tail of `changes`); `table_route` has one row per region,
as the image's does. A Delta table is read once per source, the first time a
relation or lookup needs it.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake.exceptions import TableNotFoundError

from events.values import LabelRuleValue, TableInfoValue
from producers.sql.engine import QueryError
from producers.sql.relations import SCHEMAS, options_text
from streaming.readers.read import read_current

_TIDB_VIEWS = frozenset({"region_label", "attributes"})


class DeltaSource:
    """One catalog's state in the projection's Delta tables.

    Args:
        root: The tables root (`metalog project --delta-dir`).
        catalog: The catalog whose rows are read.
    """

    def __init__(self, root: str, catalog: str) -> None:
        self.root = root
        self.catalog = catalog
        self._tables: dict[str, pa.Table] = {}

    def rows(self, table: str) -> pa.Table:
        """The catalog's rows of one Delta table (read on first use).

        Raises:
            QueryError: The table is not there (no projection under `root`).
        """
        rows = self._tables.get(table)
        if rows is None:
            try:
                everything = read_current(self.root, table)
            except TableNotFoundError:
                raise QueryError(
                    f"there is no Delta table `{table}` under {self.root}: run `metalog "
                    f"project --delta-dir {self.root}` first, or name the directory it wrote"
                ) from None
            rows = self._tables[table] = everything.filter(
                pc.equal(everything["catalog"], self.catalog))
        return rows

    def relation(self, name: str) -> pa.Table:
        """The relation `name` of `producers.sql.relations.RELATIONS`.

        Raises:
            KeyError: `name` is not one of them.
        """
        schema = SCHEMAS[name]
        if name in _TIDB_VIEWS:  # the projection formats REGION_LABEL / RANGES as TiDB does
            rules = self.rows("region_label")
            return pa.table([rules[c] for c in ("rule_id", "rule_type", "region_label",
                                                "ranges")], schema=schema)  # fmt: skip
        if name == "table_route":
            return _regions(self.rows("table_route"), schema)
        if name == "dropped_tables":
            dropped = self.rows("dropped_tables")
            infos = dropped.filter(pc.equal(dropped["kind"], "table_info"))
            return _tables(pa.Table.from_struct_array(infos["table_info"]), schema)
        if name == "table_info":
            return _tables(self.rows("table_info"), schema)
        return self.rows(name).select(schema.names).cast(schema)

    def table_by_name(self, schema_name: str, table_name: str) -> TableInfoValue | None:
        """The live table of that name, built from its `table_info` row."""
        names = self.rows("table_name")
        named = names.filter(pc.and_(pc.equal(names["schema_name"], schema_name),
                                     pc.equal(names["table_name"], table_name)))  # fmt: skip
        if named.num_rows == 0:
            return None
        infos = self.rows("table_info")
        row = _first(infos.filter(pc.equal(infos["table_id"], named["table_id"][0])))
        if row is None:
            return None
        row["catalog"] = row.pop("info_catalog")
        row["options"] = dict(row["options"] or ())
        return TableInfoValue.model_validate(
            {k: v for k, v in row.items() if k in TableInfoValue.model_fields})

    def rule(self, rule_id: str) -> LabelRuleValue | None:
        """The label rule of that id (`events.labels.rule_id`), if any."""
        rules = self.rows("label_rule")
        row = _first(rules.filter(pc.equal(rules["rule_id"], rule_id)))
        if row is None:
            return None
        return LabelRuleValue.model_validate(
            {k: v for k, v in row.items() if k in LabelRuleValue.model_fields})


def _first(rows: pa.Table) -> dict[str, Any] | None:
    return rows.slice(0, 1).to_pylist()[0] if rows.num_rows else None


def _tables(infos: pa.Table, schema: pa.Schema) -> pa.Table:
    """Table info rows as the relation's: `options` (a map in Delta) as sorted JSON."""
    options = pa.array([options_text(dict(pairs or ())) for pairs in
                        infos["options"].to_pylist()], pa.string())  # fmt: skip
    columns = [options if f.name == "options" else infos[f.name] for f in schema]
    return pa.table(columns, schema=schema)


def _regions(routes: pa.Table, schema: pa.Schema) -> pa.Table:
    """One row per region of each route, as the image's `table_route` relation."""
    lists = routes["region_routes"].combine_chunks()
    regions = pc.list_flatten(lists)
    table_ids = pc.take(routes["table_id"], pc.list_parent_indices(lists))
    return pa.table([table_ids, *(regions.field(f.name) for f in schema if f.name != "table_id")],
                    schema=schema)

