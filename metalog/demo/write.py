"""The write-path part of `make demo`: clients changing tables through a running leader.

Shows the seeds' rules at work on the real broker: several clients racing on
one table (exactly one wins each version, the rest see `VersionConflict` with
the current version), a rename, TiDB labels on a table and on a partition
(inheritance and priority, REGION_LABEL rows), a Hasura stale
`resource_version`, a region failover and the read-only export.
"""

from __future__ import annotations

import threading
import uuid

from rich.console import Console
from rich.table import Table

from events.topics import Topics
from events.values import Column
from metalog.demo import sql as demo_sql
from producers.client.client import MetadataClient
from producers.errors import CommandRejected, VersionConflict
from producers.leader.leader import Leader
from producers.leader.local import CheckpointSchedule
from producers.leader.metrics import LeaderMetrics
from producers.leader.owner import LeaderOptions
from projector.fold.export import region_label_rows

COLUMNS = (
    Column(name="order_id", data_type="int64", nullable=False),
    Column(name="customer", data_type="string"),
    Column(name="amount", data_type="float64"),
)


def run(bootstrap: str, topics: Topics, console: Console,
        checkpoints: CheckpointSchedule | None = None,
        metrics: LeaderMetrics | None = None) -> str:  # fmt: skip
    """Drive a fresh catalog through the leader; returns the catalog's name.

    Args:
        checkpoints: When the leader signs checkpoints (None: it signs none).
        metrics: Where the leader counts (None: a private registry).
    """
    catalog = f"shop-{uuid.uuid4().hex[:6]}"
    say = console.print
    with (
        Leader(bootstrap, topics=topics, options=LeaderOptions(checkpoints=checkpoints),
               metrics=metrics) as leader,
        MetadataClient(bootstrap, catalog=catalog, actor="demo", topics=topics) as client,
    ):
        if not leader.wait_until_serving(1, timeout=60.0):
            raise RuntimeError("the demo leader owned no partition within 60 s")
        created = client.create_table(
            "public", "orders", COLUMNS, partitions=("p0", "p1"), regions=4, datanodes=(1, 2)
        )
        table_id = created.tables[0].table_id
        say(f"[bold]create[/] public.orders → table {table_id}, resource_version "
            f"{created.resource_version}")  # fmt: skip

        outcomes: list[str] = []
        lock = threading.Lock()

        def alter(worker: int) -> None:
            try:
                done = client.alter_table(
                    "public", "orders", set_options={"owner": f"client-{worker}"},
                    expected_version=1,
                )  # fmt: skip
                line = f"client-{worker}: committed at version {done.tables[0].version}"
            except VersionConflict as conflict:
                line = f"client-{worker}: VersionConflict (current {conflict.current_version})"
            with lock:
                outcomes.append(line)

        racers = [threading.Thread(target=alter, args=(n,)) for n in range(4)]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join()
        say("[bold]race[/] four clients alter public.orders at expected_version=1:")
        for line in sorted(outcomes):
            say(f"  {line}")

        renamed = client.rename_table("public", "orders", "sales", expected_version=2)
        say(f"[bold]rename[/] public.orders → public.sales at version {renamed.tables[0].version}")
        client.set_attributes("public", "sales", "merge_option=deny")
        client.set_attributes("public", "sales", "merge_option=allow", partition_name="p0")
        say("[bold]labels[/] table merge_option=deny, partition p0 merge_option=allow")

        stale = created.resource_version
        try:
            client.drop_table("public", "sales", expected_resource_version=stale)
        except CommandRejected as rejected:
            say(f"[bold]stale drop[/] at resource_version {stale}: {rejected}")

        route = client.image().head.route(table_id)
        assert route is not None
        moved = route.region_routes[0]
        client.failover_region(table_id, moved.region_id, 3, route)
        say(f"[bold]failover[/] region {moved.region_id}: datanode "
            f"{moved.leader_datanode} → 3")  # fmt: skip

        image = client.image()
        exported = client.export()
        say(f"[bold]export[/] resource_version {exported['resource_version']}, "
            f"{len(exported['metadata'])} keys; datanode 3 serves "
            f"{[dn.regions for dn in image.head.datanode_tables(3)]}")  # fmt: skip
        labels = Table(title=f"INFORMATION_SCHEMA.REGION_LABEL of {catalog}")
        for column in ("RULE_ID", "RULE_TYPE", "REGION_LABEL", "RANGES"):
            labels.add_column(column)
        for row in region_label_rows(image):
            labels.add_row(row.rule_id, row.rule_type, row.region_label, row.ranges)
        console.print(labels)
        # The same catalog from a shell: TiDB's statements through `metalog sql`.
        demo_sql.run(bootstrap, topics, catalog, console)
    return catalog
