"""Loading a format-3 snapshot (`projector.snapshot.columns`) into views, row group by row group.

Each row group's structure is checked once (one `(section, kind)` from the
column statistics, no nulls where the kind needs a value, column indexes in
range); then its columns are kept as they are, its keys under an index of their
hashes (`projector.snapshot.cold`): a value is built from its row when it is first
read, not at load. Only the few label rules are built now, for the view's rule index.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from events.codec import decode_event
from events.pool import shared_column
from events.values import Column
from projector.errors import SnapshotError
from projector.fold.image import PendingChange
from projector.fold.packing import Packed
from projector.fold.view import View
from projector.snapshot.cold import READERS, ColdValues
from projector.snapshot.columns import NEEDS, OPTIONAL
from projector.snapshot.layout import (
    CHANGE,
    COLUMN,
    DEFINITIONS,
    HEAD,
    INFO,
    PENDING,
    PUBLISHED,
    RULE,
)


def load_views(
    parquet: pq.ParquetFile, catalog: str, published_is_head: bool
) -> tuple[View, View, dict[int, PendingChange]]:
    """The head and published views and the pending changes, row group by row group.

    Raises:
        SnapshotError: A row group does not have the layout's structure.
    """
    definitions: list[Column] = []
    cold = {HEAD: ColdValues(definitions), PUBLISHED: ColdValues(definitions)}
    rules: dict[int, list[tuple[str, Packed]]] = {HEAD: [], PUBLISHED: []}
    pending: dict[int, PendingChange] = {}
    for group in range(parquet.num_row_groups):
        section, kind = _group_kind(parquet, group)
        table = parquet.read_row_group(group, columns=[*NEEDS[kind], *OPTIONAL.get(kind, ())])
        columns = {name: _array(table, name, name in NEEDS[kind]) for name in table.column_names}
        if kind == COLUMN:
            definitions.extend(_definitions(columns))
        elif kind == CHANGE:
            for rv, data, schema_epoch in zip(
                *(columns[c].to_pylist() for c in NEEDS[CHANGE]), strict=True
            ):
                pending[int(rv)] = PendingChange(decode_event(data), schema_epoch)
        else:
            if kind == INFO:
                _check_indexes(columns, len(definitions))
            keys = columns.pop("key")
            if kind == RULE:
                values = READERS[RULE](columns, definitions)
                rules[section].extend(zip(keys.to_pylist(), values, strict=True))
            cold[section].add(kind, keys, columns)
    for section_values in cold.values():
        section_values.seal()
    head = View.from_cold(catalog, cold[HEAD], rules[HEAD])
    published = (
        head if published_is_head else View.from_cold(catalog, cold[PUBLISHED], rules[PUBLISHED])
    )
    return head, published, pending


def _group_kind(parquet: pq.ParquetFile, group: int) -> tuple[int, int]:
    """The row group's one (section, kind), from the column statistics the writer stores."""
    meta = parquet.metadata.row_group(group)
    marks = []
    for index in (0, 1):  # `section`, `kind`: the schema's first two columns
        stats = meta.column(index).statistics
        if stats is None or not stats.has_min_max or stats.min != stats.max:
            raise SnapshotError(f"row group {group} does not hold one (section, kind)")
        marks.append(int(stats.min))
    section, kind = marks
    sections = {COLUMN: (DEFINITIONS,), CHANGE: (PENDING,)}.get(kind, (HEAD, PUBLISHED))
    if kind not in NEEDS or section not in sections:
        raise SnapshotError(f"row group {group}: kind {kind} in section {section}")
    return section, kind


def _array(table: pa.Table, name: str, required: bool) -> pa.Array:
    column = table.column(name)
    # A row group's column is one chunk: `combine_chunks` would copy it all the same.
    array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    if required and array.null_count:
        raise SnapshotError(f"column `{name}` has {array.null_count} null(s) where values belong")
    return array


def _definitions(columns: dict[str, pa.Array]) -> list[Column]:
    fields = zip(
        *(
            columns[n].to_pylist()
            for n in ("column_name", "data_type", "nullable", "default_value")
        ),
        strict=True,
    )
    return [
        shared_column(Column(name=n, data_type=t, nullable=null, default_value=d))
        for n, t, null, d in fields
    ]


def _check_indexes(columns: dict[str, pa.Array], definitions: int) -> None:
    """Every column index of an info row group points at a definition."""
    low, high = pc.min_max(columns["columns"].values).values()
    if low.is_valid and not 0 <= low.as_py() <= high.as_py() < definitions:
        raise SnapshotError(f"a column index is outside the {definitions} definitions")
