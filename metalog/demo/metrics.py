"""The last lines of `make demo`: the follower's lag and the leader's commit p99, scraped.

The demo's leader and follower run in the demo's process, each with its own
registry served on a loopback port the system picks (`MetricsServer(…, 0)`); the
figures are read back over HTTP from `/metrics` as Prometheus (and `metalog status
--metrics`) would read them.
"""

from __future__ import annotations

import math

from rich.console import Console

from metalog.cli.status import look

SCRAPE_TIMEOUT = 5.0
"""Seconds to wait for an in-process endpoint (the demo's own threads answer)."""


def report(console: Console, catalog: str, leader_url: str, follower_url: str) -> None:
    """Scrape the leader's and the follower's `/metrics` and print the figures."""
    lead, follow = look(leader_url, SCRAPE_TIMEOUT), look(follower_url, SCRAPE_TIMEOUT)
    if lead.error is not None or "leader" not in lead.roles:
        console.print(f"[bold]metrics[/] leader {leader_url}: {lead.error or 'no leader metrics'}")
    else:
        figures = lead.roles["leader"]
        p99 = figures["commit_p99_seconds"]
        shown = "n/a" if math.isnan(p99) else f"{p99 * 1000:.1f} ms"
        console.print(
            f"[bold]metrics[/] leader {leader_url}/metrics: commit p99 {shown} over "
            f"{figures['commits']:.0f} commits; {figures['commands']:.0f} commands, "
            f"{figures['rejected']:.0f} rejected")
    at = follow.roles.get("follower", {}).get("catalogs", {}).get(catalog)
    if follow.error is not None or at is None:
        console.print(f"[bold]metrics[/] follower {follower_url}: "
                      f"{follow.error or f'no figures for {catalog}'}")  # fmt: skip
        return
    console.print(
        f"[bold]metrics[/] follower {follower_url}/metrics: lag {at['lag_records']:.0f} "
        f"records / {at['lag_seconds']:.1f} s at resource_version {at['resource_version']:.0f}")
