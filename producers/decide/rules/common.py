"""What every rule shares: the decision shape, lookups that reject, key builders.

A rule is `rule(image, command) -> Decision`: pure, and it raises a
`CommandRejected` subclass when the command must not be written. `put`,
`delete` and `bumped` build their models with `producers.decide.trusted` (no second
validation: their parts are the validated command's or the image's).
"""

from collections.abc import Iterable
from dataclasses import dataclass

from events.changes import KeyAtVersion, Mutation, MutationOp, Requirement
from events.commands import CommandBase
from events.intents import (
    ChangeIntent,
    EpochAssigned,
    PublishModeSet,
    Reloaded,
    StableEpochAdvanced,
)
from events.keys import datanode_table_key, removed, table_info_key
from events.values import (
    DatanodeTableValue,
    KeyValue,
    PartitionDef,
    RegionRoute,
    TableInfoValue,
    TableRouteValue,
    TableVersion,
)
from producers.decide.rules.limits import TABLE_ID_MAX
from producers.decide.trusted import replaced, trusted
from producers.errors import (
    InvalidCommand,
    OutOfRange,
    PartitionNotFound,
    TableNotFound,
    VersionConflict,
)
from projector.fold.image import Image

REGION_BITS = 32
"""GreptimeDB's region id: `(table_id << 32) | region_number`."""


@dataclass(frozen=True, slots=True)
class Change:
    """A change event's content: what happened, what was checked, what it writes."""

    intent: ChangeIntent
    requirements: tuple[Requirement, ...]
    mutations: tuple[Mutation, ...]
    tables: tuple[TableVersion, ...]


ControlIntentOut = Reloaded | PublishModeSet | EpochAssigned | StableEpochAdvanced
Decision = Change | ControlIntentOut
"""What a rule returns: a change, or the intent of a control event."""


def put(key: str, value: KeyValue) -> Mutation:
    """A PUT mutation."""
    return trusted(Mutation, key=key, op=MutationOp.PUT, value=value)


def delete(key: str) -> Mutation:
    """A DELETE mutation."""
    return trusted(Mutation, key=key, op=MutationOp.DELETE)


def qualified(schema_name: str, table_name: str) -> str:
    """`schema.table`, as messages show a table."""
    return f"{schema_name}.{table_name}"


def live_table(image: Image, schema_name: str, table_name: str) -> TableInfoValue:
    """The live table of that name, or `TableNotFound`."""
    info = image.head.table_by_name(schema_name, table_name)
    if info is None:
        raise TableNotFound(
            f"table `{qualified(schema_name, table_name)}` does not exist in catalog "
            f"`{image.catalog}`: check the name, or create it first"
        )
    return info


def live_table_by_id(image: Image, table_id: int) -> TableInfoValue:
    """The live table with that id, or `TableNotFound`."""
    info = image.head.table(table_id)
    if info is None:
        raise TableNotFound(
            f"table id {table_id} is not a live table of catalog `{image.catalog}`: "
            "re-read the catalog for its current id"
        )
    return info


def find_partition(info: TableInfoValue, name: str) -> PartitionDef:
    """The partition of that name, or `PartitionNotFound`."""
    for partition in info.partitions:
        if partition.name == name:
            return partition
    raise PartitionNotFound(
        f"table `{qualified(info.schema_name, info.table_name)}` has no partition `{name}`: "
        "re-read its partitions"
    )


def check_version(info: TableInfoValue, expected: int | None) -> None:
    """`VersionConflict` when the caller read another version of the table."""
    if expected is not None and expected != info.version:
        raise VersionConflict.of_table(
            qualified(info.schema_name, info.table_name), expected, info.version, info.table_id
        )


def no_expected_version(command: CommandBase) -> None:
    """Reject `expected_version` on a command that addresses no table."""
    if command.expected_version is not None:
        raise InvalidCommand(
            f"{type(command).__name__} addresses no table, so it takes no expected_version: "
            "drop it (use expected_resource_version for the catalog)"
        )


def at_version(info: TableInfoValue, *, dropped: bool = False) -> KeyAtVersion:
    """The requirement that the table's info is still at the version the rule read.

    `dropped`: the info of a dropped table, under `__removed-`.
    """
    key = table_info_key(info.table_id)
    return KeyAtVersion(key=removed(key) if dropped else key, version=info.version)


def bumped(info: TableInfoValue, **update: object) -> TableInfoValue:
    """The info with `update` applied and its version +1."""
    return replaced(info, **update, version=info.version + 1)


def touched(
    image: Image, *table_ids: int, named: TableInfoValue | None = None
) -> tuple[TableVersion, ...]:
    """The `tables` entry of each id: its last version + 1 (a new id starts at 1).

    An id that was a table before an exchange made it a partition counts on
    from its last version as a table (`Image.version_of`): a (table_id,
    version) pair never repeats. `named`: the info of the table that takes a
    name in this change, at `version_taking_name`; its entry takes that version.
    """
    versions = {t: image.version_of(t) + 1 for t in table_ids}
    if named is not None:
        assert named.table_id in versions, "the table taking a name is one the change touches"
        versions[named.table_id] = named.version
    return tuple(TableVersion(table_id=t, version=v) for t, v in versions.items())


def version_taking_name(image: Image, table_id: int, schema_name: str, table_name: str) -> int:
    """The version a table id takes with a name: every rule that gives an id a name uses it.

    Create, rename onto, recover (and so FLASHBACK … TO), truncate's new id and the
    plain table's new id in an exchange. It is the id's own next version, or the
    name's next if higher: one above the last version a table had under the name
    (`Image.name_versions`) and, when a table holds the name now (truncate,
    exchange), one above the version this same change gives that table. So a
    version a client read for the name never matches the table that takes it
    (docs/design.md, "version"); the fold checks the
    same number from the event's name keys (`projector.fold.apply`).
    """
    floor = image.name_versions.get((schema_name, table_name), 0)
    holder = image.head.table_id(schema_name, table_name)
    if holder is not None and holder != table_id:
        floor = max(floor, image.version_of(holder) + 1)  # it leaves the name in this change
    return max(image.version_of(table_id), floor) + 1


def new_ids(image: Image, count: int) -> range:
    """The next `count` ids: ids are never reused, so they follow the highest ever.

    Raises:
        OutOfRange: The ids would pass `TABLE_ID_MAX` (the catalog's ids are used up).
    """
    if image.max_id + count > TABLE_ID_MAX:
        raise OutOfRange(
            f"catalog `{image.catalog}` has used table ids up to {image.max_id:,}: {count:,} "
            f"more would pass the highest id {TABLE_ID_MAX:,} (ids are never reused), so "
            "create new tables in a new catalog"
        )
    return range(image.max_id + 1, image.max_id + 1 + count)


def region_number(region_id: int) -> int:
    """The region number inside a GreptimeDB region id."""
    return region_id & ((1 << REGION_BITS) - 1)


def rekeyed_route(route: TableRouteValue, table_id: int) -> TableRouteValue:
    """The same regions and placement under another table id (truncate, exchange)."""
    return TableRouteValue(
        table_id=table_id,
        region_routes=tuple(
            r.model_copy(
                update={"region_id": (table_id << REGION_BITS) | region_number(r.region_id)}
            )
            for r in route.region_routes
        ),
    )


def placed_route(table_id: int, regions: int, datanodes: tuple[int, ...]) -> TableRouteValue:
    """A new table's route: regions 0..n-1 placed round robin on `datanodes`."""
    return TableRouteValue(
        table_id=table_id,
        region_routes=tuple(
            RegionRoute(
                region_id=(table_id << REGION_BITS) | number,
                leader_datanode=datanodes[number % len(datanodes)],
            )
            for number in range(regions)
        ),
    )


def datanode_tables(route: TableRouteValue, version: int) -> dict[int, DatanodeTableValue]:
    """The `__dn_table` value of every datanode leading one of the route's regions."""
    regions: dict[int, list[int]] = {}
    for r in route.region_routes:
        regions.setdefault(r.leader_datanode, []).append(region_number(r.region_id))
    return {
        datanode: DatanodeTableValue(
            datanode_id=datanode, table_id=route.table_id, regions=tuple(numbers), version=version
        )
        for datanode, numbers in sorted(regions.items())
    }


def put_datanode_tables(route: TableRouteValue, version: int) -> list[Mutation]:
    """PUT a `__dn_table` key per datanode of the route."""
    return [
        put(datanode_table_key(dn, route.table_id), value)
        for dn, value in datanode_tables(route, version).items()
    ]


def delete_datanode_tables(route: TableRouteValue) -> list[Mutation]:
    """DELETE the `__dn_table` key of every datanode of the route."""
    return [delete(datanode_table_key(dn, route.table_id)) for dn in datanode_tables(route, 0)]


def mutations(*groups: Iterable[Mutation]) -> tuple[Mutation, ...]:
    """Concatenate mutation groups, in order."""
    return tuple(m for group in groups for m in group)
