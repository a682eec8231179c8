"""Compact in-memory forms of the key values, so an image of 100k+ tables stays small.

A pydantic value costs a `__dict__` and a fields-set per instance (~500 bytes
for a two-field model), which would put a table's five keys near 8 KB. The
image stores instead:

- `TableInfoValue` as a model whose column tuple, catalog and schema name are
  shared with equal ones already seen (tables repeat column definitions), and
  whose fields-set is one shared set, the pool's mark: an info `decode_event`
  read is built that way already and kept as it is;
- names, routes and datanode tables as named tuples of ints;
- label rules as they are (there are few).

`unpack(pack(v)) == v` for every value; accessors unpack on read.

A replay reads names, routes and datanode tables straight into their packed forms
(`PACKED_RECORDS`, with its events: `projector.fold.packed_events`): its events hold
those where the models would be, and the draft stores them as read (`KEPT_AS_IS`).
"""

from collections.abc import Iterable
from operator import attrgetter
from typing import NamedTuple

from events.base import built
from events.pool import COLUMN_KEY, default_pool, pooled_fields_set, shared, shared_column
from events.values import (
    Column,
    DatanodeTableValue,
    KeyValue,
    LabelRuleValue,
    RegionRoute,
    TableInfoValue,
    TableNameValue,
    TableRouteValue,
)

# Named tuples, not frozen dataclasses: built in C (a frozen dataclass sets each
# field through `object.__setattr__`, about twice the time), at 8 bytes more each.


class PackedName(NamedTuple):
    """`TableNameValue` without the model."""

    table_id: int


class PackedRoute(NamedTuple):
    """`TableRouteValue`: one `(region_id, leader_datanode, followers)` per region."""

    table_id: int
    routes: tuple[tuple[int, int, tuple[int, ...]], ...]


class PackedDatanodeTable(NamedTuple):
    """`DatanodeTableValue` without the model."""

    datanode_id: int
    table_id: int
    regions: tuple[int, ...]
    version: int


Packed = TableInfoValue | LabelRuleValue | PackedName | PackedRoute | PackedDatanodeTable
"""What the image stores under a key."""

PACKED_RECORDS: dict[str, type[tuple[object, ...]]] = {
    "TableNameValue": PackedName,
    "TableRouteValue": PackedRoute,
    "RegionRoute": tuple,  # a route as `PackedRoute.routes` holds it
    "DatanodeTableValue": PackedDatanodeTable,
}
"""The values a replay reads as their packed forms, of their fields in order (with its
events' records: `projector.fold.packed_events.RECORDS`)."""

PACKED_FORMS = frozenset({PackedName, PackedRoute, PackedDatanodeTable})
"""The packed forms of `PACKED_RECORDS` (a route's routes are plain tuples inside one)."""

KEPT_AS_IS = PACKED_FORMS | {LabelRuleValue}
"""The classes a draft stores as read: packed forms, and label rules (there are few)."""


POOLED_INFO = pooled_fields_set(TableInfoValue)
"""The fields-set object of every packed info, the pool's mark: an info that
`decode_event` read, or that `pack` or a snapshot load built, is kept as it is."""


def _same_columns(value: TableInfoValue, previous: TableInfoValue) -> bool:
    """Equal columns and catalog; compares the plain field dicts, not the models."""
    new, old = value.columns, previous.columns
    if new is old:  # an alter keeps its table's tuple
        return value.catalog == previous.catalog
    return (
        len(new) == len(old)
        and value.catalog == previous.catalog
        and list(map(vars, new)) == list(map(vars, old))
    )


def _info(fields: dict[str, object]) -> TableInfoValue:
    """`TableInfoValue.model_construct` without its per-field loop (the hot path of apply).

    The fields come from a validated model (or a snapshot whose structure was
    checked once), so nothing needs defaults or checks.
    """
    return built(TableInfoValue, fields, POOLED_INFO)


_set = object.__setattr__


def packed_infos(rows: Iterable[dict[str, object]]) -> list[TableInfoValue]:
    """Packed infos from dicts of every `TableInfoValue` field, in field order, already shared.

    For bulk loads (`projector.snapshot.columns`) whose values are known to be
    well-formed: no validation, no copy of the dicts.
    """
    new = TableInfoValue.__new__
    fields_set = POOLED_INFO
    out = []
    for fields in rows:
        info = new(TableInfoValue)
        _set(info, "__dict__", fields)
        _set(info, "__pydantic_fields_set__", fields_set)
        _set(info, "__pydantic_extra__", None)
        _set(info, "__pydantic_private__", None)
        out.append(info)
    return out


def pack(value: KeyValue, previous: Packed | None = None) -> Packed:
    """The compact form of a value, sharing what equal values already hold.

    Args:
        value: The value a mutation PUTs.
        previous: What the key held before, if anything: most info PUTs
            (alter options, rename, a version bump) keep the columns, and
            comparing against the old ones is cheaper than interning anew.
    """
    # Values are these exact classes (none is subclassed): no isinstance chain. The named
    # tuples are built by `tuple.__new__` from C-level attribute reads: no Python frame.
    if type(value) is TableInfoValue:
        return _packed_info(value, previous)
    if type(value) is TableNameValue:
        return _new(PackedName, (value.table_id,))
    if type(value) is DatanodeTableValue:
        return _new(PackedDatanodeTable, _DATANODE_TABLE_FIELDS(value))
    if type(value) is TableRouteValue:
        routes = tuple(map(_ROUTE_FIELDS, value.region_routes))
        return _new(PackedRoute, (value.table_id, routes))
    assert isinstance(value, LabelRuleValue)
    return value


_new = tuple.__new__
_DATANODE_TABLE_FIELDS = attrgetter(*PackedDatanodeTable._fields)
_ROUTE_FIELDS = attrgetter("region_id", "leader_datanode", "follower_datanodes")
"""A `RegionRoute` as `PackedRoute` holds it."""


def _packed_info(value: TableInfoValue, previous: Packed | None) -> TableInfoValue:
    if value.__pydantic_fields_set__ is POOLED_INFO:
        return value  # built pooled
    fields = vars(value).copy()
    if type(previous) is TableInfoValue and _same_columns(value, previous):
        fields["columns"] = previous.columns
        fields["catalog"] = previous.catalog
        fields["schema_name"] = shared(value.schema_name)
    else:
        fields["catalog"] = shared(value.catalog)
        fields["schema_name"] = shared(value.schema_name)
        # The tuple itself is per table: column sets rarely repeat whole,
        # and a pool key for it would cost more than the tuple.
        fields["columns"] = _columns(value.columns)
    fields["primary_key"] = shared(value.primary_key)
    return _info(fields)


def _columns(columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """`tuple(map(shared_column, columns))`, looked up in C when every column was seen before."""
    found = tuple(map(default_pool().values.get, map(COLUMN_KEY, columns)))
    return found if all(found) else tuple(map(shared_column, columns))  # type: ignore[return-value]


def unpack(packed: Packed | KeyValue) -> KeyValue:
    """The value a packed form stands for (a value as it is)."""
    if isinstance(packed, PackedName):
        return TableNameValue(table_id=packed.table_id)
    if isinstance(packed, PackedRoute):
        return TableRouteValue(
            table_id=packed.table_id,
            region_routes=tuple(
                RegionRoute(region_id=r, leader_datanode=leader, follower_datanodes=followers)
                for r, leader, followers in packed.routes
            ),
        )
    if isinstance(packed, PackedDatanodeTable):
        return DatanodeTableValue(
            datanode_id=packed.datanode_id,
            table_id=packed.table_id,
            regions=packed.regions,
            version=packed.version,
        )
    return packed
