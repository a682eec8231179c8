"""`make demo`: the whole pipeline on the embedded default (the local broker + Spark).

1. Clients change a fresh catalog through a running leader (`metalog.demo.write`):
   a race with visible `VersionConflict`s, a rename, labels on a table and a
   partition, a stale resource_version, a region failover, the export; then
   `metalog sql` (`metalog.demo.sql`) creates a partitioned table, labels it and a
   partition with `ATTRIBUTES`, and reads `INFORMATION_SCHEMA.REGION_LABEL`,
   `SHOW ATTRIBUTES` and `SHOW CREATE TABLE` back.
2. A follower catches up on the catalog and prints its published view, and a
   datanode watcher reports the regions it opens.
3. The Spark projection (`availableNow`) folds the events topic into the
   Delta change feed, and `table_name` and `region_label` are read back
   through the merged read path without a JVM (`streaming.readers.read.read_current`:
   deltalake + DuckDB) and printed.
4. The audit: the history page of one table (renamed on the way), then `audit
   verify` of the catalog, its leader's signed checkpoints checked with the key
   (made on the first run under the state directory).
5. Over HTTP (`metalog.demo.http`): `metalog serve` on a loopback port, a watch
   of the catalog's tables, one CreateTable, and the change the watch saw.
6. The follower's lag and the leader's commit p99, scraped from the `/metrics`
   the demo's leader and a follower serve on loopback (`metalog.demo.metrics`).

Run `python -m metalog.demo` after `metalog up` (the Makefile does both).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import requests
from confluent_kafka import KafkaException
from rich.console import Console
from rich.table import Table

from events.checkpoint import Signer
from events.errors import MetalogError
from events.topics import Topics
from metalog.cli.follow import follow_demo
from metalog.demo import http as demo_http
from metalog.demo import metrics as demo_metrics
from metalog.demo import sql as demo_sql
from metalog.demo import write as demo_write
from metalog.stack.config import StackConfig
from producers.leader.local import CheckpointSchedule
from producers.leader.metrics import LeaderMetrics
from projector.audit.faults import AuditFailed
from projector.audit.page import history_page
from projector.audit.read import verify_topic
from projector.audit.verify import Verifier
from projector.checkpoint_keys import PRIVATE_NAME, generate, load_signer
from projector.follower.follower import Follower
from projector.follower.metrics import FollowerMetrics
from projector.replay.history import history_of
from projector.telemetry import MetricsServer
from streaming.errors import OldCheckpoint
from streaming.readers.read import read_current
from streaming.spark.projection import ProjectionConfig, run_once


def print_rows(
    console: Console, title: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> None:
    """Print `columns` of `rows` as a table."""
    table = Table(title=f"{title} ({len(rows)} rows)")
    for name in columns:
        table.add_column(name)
    for row in rows:
        table.add_row(*(str(row[c]) for c in columns))
    console.print(table)


def watch_datanode(bootstrap: str, topics: Topics, catalog: str, console: Console) -> None:
    """A datanode's event loop (CeresDB): report the regions datanode 3 opens."""
    opened: list[tuple[int, int]] = []

    def open_region(table_id: int, region_id: int) -> None:
        opened.append((table_id, region_id))

    def close_region(table_id: int, region_id: int) -> None:
        opened.remove((table_id, region_id))

    with Follower(bootstrap, catalog, topics=topics) as follower:
        follower.watch_datanode(3, open_region, close_region)
        follower.wait_caught_up(60.0)
    console.print(f"[bold]datanode 3[/] serves (table, region) {sorted(opened)}")


def project(bootstrap: str, topics: Topics, config: StackConfig, catalog: str) -> None:
    """Fold the events topic into Delta and print this catalog's names and labels."""
    from streaming.spark.session import spark_session  # starts a JVM: import only when run

    root = config.state_dir / "demo" / "projection"
    projection = ProjectionConfig(
        bootstrap=bootstrap,
        topic=topics.events,
        delta_dir=str(root / "tables"),
        checkpoint=str(root / "checkpoint"),
    )
    console = Console(width=160)
    spark = spark_session(app_name="metalog-demo")
    try:
        try:
            run_once(spark, projection)
        except OldCheckpoint:  # the demo's own scratch, from an older metalog: start it afresh
            console.print("[bold]project[/] the demo's projection is from an older metalog: "
                          "starting it afresh")  # fmt: skip
            shutil.rmtree(root)
            run_once(spark, projection)
    finally:
        spark.stop()
    shown = {
        "table_name": ("key", "table_id", "resource_version"),
        "region_label": ("rule_id", "rule_type", "region_label", "ranges"),
    }
    for name, columns in shown.items():
        rows = [r for r in read_current(projection.delta_dir, name).to_pylist()
                if r.get("catalog") == catalog]
        print_rows(console, f"Delta `{name}` of {catalog} (merged read)", rows, columns)


def demo_signer(config: StackConfig) -> Signer:
    """The demo leader's checkpoint key: made on the first run, kept in the state directory."""
    keys = config.state_dir / "demo" / "keys"
    if not (keys / PRIVATE_NAME).exists():
        generate(keys)
    return load_signer(keys / PRIVATE_NAME)


def verify(bootstrap: str, topics: Topics, catalog: str, signer: Signer,
           console: Console) -> None:  # fmt: skip
    """`metalog audit verify` of the demo's catalog, its checkpoints checked with the key.

    Raises:
        AuditFailed: The log does not verify (the first bad record and the fault).
    """
    report = verify_topic(bootstrap, topics.events, Verifier(signer.public_key, None, catalog))
    if report.fault is not None:
        raise AuditFailed(report.fault)
    summary = report.catalogs[catalog]
    console.print(f"[bold]audit verify[/] {catalog}: {summary.events} events, chain, versions "
                  f"and leader epochs hold, every event folds, {summary.checkpoints} signed "
                  f"checkpoint(s) through resource_version {summary.signed_through}")  # fmt: skip


def main() -> int:
    """Run the demo against `METALOG_BOOTSTRAP` or the local stack."""
    config = StackConfig.from_env()
    bootstrap = os.environ.get("METALOG_BOOTSTRAP") or config.bootstrap
    topics = Topics(config.topic_prefix)
    console = Console(width=160)
    demo_sql.quiet_kafka()
    try:
        signer = demo_signer(config)
        leading = LeaderMetrics()
        with MetricsServer(leading.registry, 0) as leads:  # a free loopback port
            catalog = demo_write.run(bootstrap, topics, console,
                                     CheckpointSchedule(signer, 10, 5.0), leading)
            following = FollowerMetrics()
            with (
                Follower(bootstrap, catalog, topics=topics, metrics=following) as follower,
                MetricsServer(following.registry, 0) as follows,
            ):
                read_and_audit(bootstrap, topics, config, catalog, signer, console)
                demo_http.run(bootstrap, topics, catalog, console)
                follower.wait_caught_up(60.0)
                demo_metrics.report(console, catalog, leads.url, follows.url)
    except (MetalogError, KafkaException, requests.RequestException) as exc:
        print(f"metalog demo: error: {exc} (is the broker up? run `metalog up`)", file=sys.stderr)
        return 1
    return 0


def read_and_audit(bootstrap: str, topics: Topics, config: StackConfig, catalog: str,
                   signer: Signer, console: Console) -> None:
    """Steps 2 to 4: the follower's view, the datanode, the projection, the audit."""
    follow_demo(bootstrap, topics, catalog)
    watch_datanode(bootstrap, topics, catalog, console)
    project(bootstrap, topics, config, catalog)
    page = config.state_dir / "history-sales.html"  # public.orders, renamed by the demo
    page.write_text(history_page(history_of(bootstrap, topics, catalog, "public.sales", None)))
    console.print(f"[bold]audit[/] the history of public.sales (born public.orders): {page}")
    verify(bootstrap, topics, catalog, signer, console)


if __name__ == "__main__":
    sys.exit(main())
