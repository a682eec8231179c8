"""Region failover (GreptimeDB): move a region's leader if the route is still the snapshot."""

from events.changes import ValueEquals
from events.commands import FailoverRegion
from events.intents import RegionFailedOver
from events.keys import datanode_table_key, table_info_key, table_route_key
from producers.decide.rules.common import (
    Change,
    bumped,
    check_version,
    datanode_tables,
    delete,
    live_table_by_id,
    put,
    qualified,
    touched,
)
from producers.errors import InvalidCommand, RegionNotFound, RouteChanged
from projector.fold.image import Image


def failover(image: Image, command: FailoverRegion) -> Change:
    """FailoverRegion: PUT the route with the new leader; datanode keys follow.

    The old datanode loses the region (its key is deleted when it has none
    left), the new one gains it. The table's info is PUT at version + 1: the
    change touches the table.
    """
    info = live_table_by_id(image, command.table_id)
    check_version(info, command.expected_version)
    table = qualified(info.schema_name, info.table_name)
    route_key = table_route_key(info.table_id)
    route = image.head.route(info.table_id)
    if route != command.expected_route:
        raise RouteChanged(
            f"the route of table `{table}` changed since your snapshot: re-read it and "
            "decide again whether the failover is still needed"
        )
    current = next((r for r in route.region_routes if r.region_id == command.region_id), None)
    if current is None:
        raise RegionNotFound(
            f"table `{table}` has no region {command.region_id}: re-read its route"
        )
    if current.leader_datanode == command.to_datanode:
        raise InvalidCommand(
            f"region {command.region_id} of `{table}` is already led by datanode "
            f"{command.to_datanode}: nothing to fail over"
        )
    new_route = route.model_copy(
        update={
            "region_routes": tuple(
                r.model_copy(update={"leader_datanode": command.to_datanode})
                if r.region_id == command.region_id
                else r
                for r in route.region_routes
            )
        }
    )
    changed = bumped(info)
    before = datanode_tables(route, 0)
    after = datanode_tables(new_route, changed.version)
    moved = [
        delete(datanode_table_key(current.leader_datanode, info.table_id))
        if current.leader_datanode not in after
        else put(
            datanode_table_key(current.leader_datanode, info.table_id),
            after[current.leader_datanode],
        ),
        put(datanode_table_key(command.to_datanode, info.table_id), after[command.to_datanode]),
    ]
    assert current.leader_datanode in before
    return Change(
        intent=RegionFailedOver(
            table_id=info.table_id,
            region_id=command.region_id,
            from_datanode=current.leader_datanode,
            to_datanode=command.to_datanode,
        ),
        requirements=(ValueEquals(key=route_key, value=route),),
        mutations=(
            put(table_info_key(info.table_id), changed),
            put(route_key, new_route),
            *moved,
        ),
        tables=touched(image, info.table_id),
    )
