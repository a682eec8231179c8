"""A snapshot's columnar layout: its format number, sections, kinds of rows, Arrow schema.

One row per key, one typed column per value field (`SCHEMA`); a row's `kind`
says which columns it uses, the others are null. `projector.snapshot.columns`
writes it; `projector.snapshot.load` and `projector.snapshot.cold` read it.
"""

import pyarrow as pa

FORMAT = 4
"""Bumped whenever the layout changes; formats not in `READABLE` are refused, never misread.

4: the image's `name_versions` in the metadata (a format-3 snapshot loads with the
ones its dropped tables show: `projector.snapshot.store`).
3: the image's `retired_versions` in the metadata (a format-2 image lacks
them, and a loaded image must equal the replay); the pending section's
`epoch` column is named `schema_epoch`, the metadata's `table_epochs`
`table_schema_epochs`.
"""

READABLE = frozenset({3, FORMAT})
"""The formats a snapshot is read in (the layout of rows is the same in both)."""

HEAD, PUBLISHED, PENDING, DEFINITIONS = range(4)
"""Sections: the head view, the published view (only when it differs), pending, columns."""
COLUMN, INFO, NAME, ROUTE, DATANODE_TABLE, RULE, CHANGE = range(7)
"""Kinds of rows."""

CHUNK = 65_536
"""Rows per record batch (and Parquet row group)."""

_str = pa.string()
_PAIR = pa.struct([("key", _str), ("value", _str)])
SCHEMA = pa.schema(
    [
        ("section", pa.int8()),
        ("kind", pa.int8()),
        ("key", _str),
        ("table_id", pa.int64()),
        ("version", pa.int64()),
        ("catalog", pa.dictionary(pa.int32(), _str)),
        ("schema_name", pa.dictionary(pa.int32(), _str)),
        ("table_name", _str),
        ("columns", pa.list_(pa.int32())),
        ("primary_key", pa.list_(_str)),
        ("options", pa.map_(_str, _str)),
        ("partitions", pa.list_(pa.struct([("partition_id", pa.int64()), ("name", _str)]))),
        ("column_name", _str),
        ("data_type", _str),
        ("nullable", pa.bool_()),
        ("default_value", _str),
        (
            "routes",
            pa.list_(
                pa.struct(
                    [
                        ("region_id", pa.int64()),
                        ("leader_datanode", pa.int64()),
                        ("follower_datanodes", pa.list_(pa.int64())),
                    ]
                )
            ),
        ),
        ("datanode_id", pa.int64()),
        ("regions", pa.list_(pa.int64())),
        ("rule_id", _str),
        ("rule_type", _str),
        ("labels", pa.list_(_PAIR)),
        ("ranges", pa.list_(pa.struct([("start_key", _str), ("end_key", _str)]))),
        ("event", pa.binary()),
        ("schema_epoch", pa.int64()),
    ]
)
