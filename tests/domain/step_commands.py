"""`build(image, step)`: the command a drawn step stands for, against the image it meets.

See `tests.domain.steps` for the steps. A step that needs a table the image
lacks (no partitioned table for an exchange, …) addresses the table `absent`,
which `decide` refuses.
"""

from collections.abc import Callable
from typing import Any

from events.commands import (
    AddPartition,
    AdvanceStableEpoch,
    AlterTable,
    Command,
    CreateTable,
    DropPartition,
    DropTable,
    ExchangePartition,
    FailoverRegion,
    Publish,
    PurgeTable,
    RecoverTable,
    Reload,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    SetPublishMode,
    TruncatePartition,
    TruncateTable,
)
from events.values import Column, TableInfoValue
from projector.fold.image import Image
from tests.domain.builders import SCHEMA
from tests.domain.steps import PARTS, Step, epoch, live_tables, make, unpublished_ids

Fields = dict[str, Any]


def build(image: Image, step: Step) -> Command:
    """The command `step` stands for against `image`."""
    return _BUILDERS[step.kind](image, dict(step.fields))


def _pick(items: list[Any], index: int) -> Any:
    return items[index % len(items)] if items else None


def _table(image: Image, index: int, kind: str = "any") -> TableInfoValue | None:
    """The index-th live table of a kind: `any`, `partitioned` or `plain`."""
    tables = live_tables(image)
    if kind != "any":
        tables = [t for t in tables if bool(t.partitions) == (kind == "partitioned")]
    return _pick(tables, index)


def _named(info: TableInfoValue | None) -> Fields:
    """The name fields addressing a table (the absent table `absent` for None)."""
    if info is None:
        return {"schema_name": SCHEMA, "table_name": "absent"}
    return {"schema_name": info.schema_name, "table_name": info.table_name}


def _partition(info: TableInfoValue | None, index: int | None) -> str | None:
    if index is None:
        return None
    if info is None:
        return "absent"
    part = _pick(list(info.partitions), index)
    return part.name if part is not None else "absent"


def _columns(names: tuple[str, ...]) -> tuple[Column, ...]:
    return tuple(Column.model_construct(name=n, data_type="int") for n in names)


def _create(image: Image, f: Fields) -> Command:
    return make(
        CreateTable,
        table_name=f["name"],
        columns=_columns(("id", "name")),
        partitions=PARTS[: f["partitions"]],
        regions=f["regions"],
        datanodes=f["datanodes"],
    )


def _create_with(image: Image, f: Fields) -> Command:
    return make(
        CreateTable,
        schema_name=f["schema"],
        table_name=f["name"],
        columns=_columns(f["columns"]),
        primary_key=f["primary_key"],
        partitions=f["partitions"],
        regions=f["regions"],
        datanodes=f["datanodes"],
    )


def _create_big(image: Image, f: Fields) -> Command:
    return make(
        CreateTable,
        table_name=f["name"],
        columns=_columns(("id",)),
        options={"big": "é" * (f["size"] // 2)},
        regions=f["regions"],
        datanodes=(1, 2, 3),
    )


def _alter(image: Image, f: Fields) -> Command:
    info = _table(image, f["table"])
    column = f"c{f['column']}"
    present = info is not None and any(c.name == column for c in info.columns)
    return make(
        AlterTable,
        **_named(info),
        add_columns=() if present else _columns((column,)),
        drop_columns=(column,) if present else (),
        set_options={"ttl": f"{f['column']}d"},
    )


def _partition_command(kind: type[Command]) -> Callable[[Image, Fields], Command]:
    def built(image: Image, f: Fields) -> Command:
        info = _table(image, f["table"], "partitioned")
        return make(kind, **_named(info), partition_name=_partition(info, f["part"]))

    return built


def _exchange(image: Image, f: Fields) -> Command:
    info = _table(image, f["table"], "partitioned")
    if "schema" in f:
        other = {"other_schema_name": f["schema"], "other_table_name": f["other"]}
    else:
        named = _named(_table(image, f["other"], "plain"))
        other = {"other_schema_name": named["schema_name"], "other_table_name": named["table_name"]}
    return make(
        ExchangePartition, **_named(info), partition_name=_partition(info, f["part"]), **other
    )


def _failover(image: Image, f: Fields, raw: bool = False) -> Command:
    """Fail a region over; `raw`: `region` is a region id as drawn, not a position."""
    info = _table(image, f["table"])
    route = image.head.route(info.table_id) if info is not None else None
    if route is None:
        return make(Reload)
    region = f["region"] if raw else _pick(list(route.region_routes), f["region"]).region_id
    return make(
        FailoverRegion,
        table_id=route.table_id,
        region_id=region,
        to_datanode=f["to"],
        expected_route=route,
    )


def _attributes(image: Image, f: Fields, text: str) -> Command:
    info = _table(image, f["table"])
    part = f.get("part")
    name = _partition(info, part) if isinstance(part, int) else part  # a position, or a name
    return make(SetAttributes, **_named(info), partition_name=name, attributes=text)


def _reset(image: Image, f: Fields) -> Command:
    info = _table(image, f["table"])
    return make(ResetAttributes, **_named(info), partition_name=_partition(info, f["part"]))


def _publish(image: Image, f: Fields) -> Command:
    ids = unpublished_ids(image) or [t.table_id for t in live_tables(image)] or [1]
    at = f["epoch"] if isinstance(f["epoch"], int) else epoch(image, f["epoch"])
    return make(Publish, table_id=_pick(ids, f["table"]), epoch=at)


def _purge(image: Image, f: Fields) -> Command:
    dropped = sorted(t.table_id for t in image.head.dropped_tables())
    return make(PurgeTable, table_id=_pick(dropped, f["table"]) or 1)


def _addressed(image: Image, f: Fields) -> Command:
    schema, table = f["target"]
    if f["action"] == "create":
        return make(CreateTable, schema_name=schema, table_name=table, columns=_columns(("id",)))
    if f["action"] == "alter":
        options = {"at": str(image.resource_version)}
        return make(AlterTable, schema_name=schema, table_name=table, set_options=options)
    return make(DropTable, schema_name=schema, table_name=table)


def _on_table(kind: type[Command], **extra: Any) -> Callable[[Image, Fields], Command]:
    def built(image: Image, f: Fields) -> Command:
        fields = {k: f[v] for k, v in extra.items()}
        return make(kind, **_named(_table(image, f["table"])), **fields)

    return built


_BUILDERS: dict[str, Callable[[Image, Fields], Command]] = {
    "reload": lambda image, f: make(Reload),
    "reload_at": lambda image, f: make(Reload, **f),
    "create": _create,
    "create_with": _create_with,
    "create_big": _create_big,
    "drop": _on_table(DropTable),
    "drop_with": lambda image, f: make(DropTable, schema_name=f["schema"], table_name=f["name"]),
    "recover": lambda image, f: make(RecoverTable, table_name=f["name"]),
    "recover_id": lambda image, f: make(RecoverTable, table_name=f["name"], table_id=f["table_id"]),
    "purge": _purge,
    "purge_id": lambda image, f: make(PurgeTable, table_id=f["table_id"]),
    "rename": _on_table(RenameTable, new_table_name="new_name"),
    "rename_to": _on_table(RenameTable, new_table_name="new_name"),
    "alter": _alter,
    "alter_with": lambda image, f: make(
        AlterTable,
        **_named(_table(image, f["table"])),
        add_columns=_columns(f["add"]),
        drop_columns=f["drop"],
    ),
    "alter_big": lambda image, f: make(
        AlterTable,
        **_named(_table(image, f["table"])),
        set_options={f"k{image.resource_version}": "é" * (f["size"] // 2)},
    ),
    "alter_at": lambda image, f: make(
        AlterTable,
        **_named(_table(image, f["table"])),
        set_options={"at": "x"},
        expected_version=f["expected_version"],
    ),
    "truncate": _on_table(TruncateTable),
    "add_partition": _on_table(AddPartition, partition_name="name"),
    "drop_partition": _partition_command(DropPartition),
    "truncate_partition": _partition_command(TruncatePartition),
    "exchange": _exchange,
    "exchange_with": _exchange,
    "addressed": _addressed,
    "failover": _failover,
    "failover_with": lambda image, f: _failover(image, f, raw=True),
    "set_attributes": lambda image, f: _attributes(
        image, f, f"k{f['value']}=v{image.resource_version}"
    ),
    "attributes_with": lambda image, f: _attributes(image, f, "k=v"),
    "attributes_big": lambda image, f: _attributes(image, f, "k=" + "v" * f["size"]),
    "reset_attributes": _reset,
    "set_mode": lambda image, f: make(SetPublishMode, mode=f["mode"]),
    "publish": _publish,
    "publish_at": _publish,
    "publish_id": lambda image, f: make(
        Publish, table_id=f["table_id"], epoch=epoch(image, f["epoch"])
    ),
    "advance": lambda image, f: make(AdvanceStableEpoch, epoch=epoch(image, f["to"])),
    "advance_at": lambda image, f: make(AdvanceStableEpoch, epoch=f["epoch"]),
}
