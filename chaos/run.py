"""One chaos run: the cluster, the leaders, the clients, the nemesis, then the checks.

`run` starts Toxiproxy and three brokers behind it (`chaos.cluster`), two
leader processes, the clients and their followers (`chaos.workload`), plays
the nemesis' schedule, heals everything, lets the clients run a while on a
healthy cluster, then stops them and checks:

- the history, with Porcupine (`chaos.history.check`); a refuted one keeps
  its HTML page next to `history.json` in the run's folder;
- the log: resource versions dense from 1, the hash chain whole, each
  command id once;
- each follower's image equals the fold of the log.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos import cluster, history
from chaos.cluster import Layout
from chaos.leaders import LeaderProcess
from chaos.nemesis import LEADER_GROUPS, Nemesis, Step
from chaos.toxiproxy import Toxiproxy
from chaos.workload import Workload, WorkloadOptions
from events.chain import verify_chain
from events.topics import Topics
from producers.leader.log import read_events
from projector.fold.apply import replay
from projector.fold.image import Image

log = logging.getLogger(__name__)
CATALOG = "chaos"
SETTLE_S = 60.0
"""How long the healed cluster gets to serve a command again before the clients stop."""


@dataclass(frozen=True)
class RunOptions:
    """A run.

    Attributes:
        out: The run's folder: cluster state, logs, `history.json`, `result.json`.
        steps: The nemesis' schedule (`chaos.nemesis.schedule`).
        seed: The seed the schedule and the clients were drawn from.
        workload: The clients.
        base_port: The cluster's first port (`chaos.cluster`).
        warmup_s: Seconds of clients without faults before the first fault.
        keep_state: Keep the brokers' data after the run (it is deleted by default).
    """

    out: Path
    steps: list[Step]
    seed: int
    workload: WorkloadOptions = field(default_factory=WorkloadOptions)
    base_port: int = cluster.DEFAULT_BASE
    warmup_s: float = 5.0
    keep_state: bool = False


@dataclass
class RunResult:
    """What a run did and found (written as `result.json`)."""

    seed: int
    seconds: float = 0.0
    operations: dict[str, dict[str, int]] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    verdict: str = "not checked"
    unknown: int = 0
    visualization: str | None = None
    log_events: int = 0
    log_problems: list[str] = field(default_factory=list)
    followers_equal_log: bool = False
    leader_exits: dict[str, list[int]] = field(default_factory=dict)

    @property
    def anomalies(self) -> int:
        """A refuted history, a log problem or a follower that differs from the log."""
        return int(self.verdict == "refuted") + len(self.log_problems) + int(
            not self.followers_equal_log)


def run(options: RunOptions) -> RunResult:
    """Run it; see the module docstring. The result is also written to `out/result.json`."""
    options.out.mkdir(parents=True, exist_ok=True)
    layout = Layout(options.out / "cluster", base=options.base_port)
    result = RunResult(seed=options.seed)
    started = time.monotonic()
    proxy = Toxiproxy(layout.api_port, options.out / "toxiproxy.log", seed=options.seed)
    leaders = {g: LeaderProcess(layout, g, options.out) for g in LEADER_GROUPS}
    workload = Workload(layout.bootstrap, CATALOG, Topics(layout.prefix), options.workload,
                        options.seed)  # fmt: skip
    proxy.start()
    try:
        cluster.up(layout, proxy)
        for leader in leaders.values():
            leader.start()
        workload.start()
        nemesis = Nemesis(layout, proxy, leaders)
        _play(nemesis, options, result)
        _settle(workload)
        workload.stop_clients()
        result.leader_exits = {g: leader.exits for g, leader in leaders.items()}
        _check(options, layout, workload, result)
    finally:
        workload.stop()
        for leader in leaders.values():
            leader.stop()
        for n in range(1, cluster.BROKERS + 1):
            cluster.kill_broker(layout, n)  # the data is thrown away: no clean shutdown
        proxy.stop()
        if not options.keep_state:
            shutil.rmtree(layout.state_dir, ignore_errors=True)
    result.seconds = round(time.monotonic() - started, 1)
    (options.out / "result.json").write_text(json.dumps(asdict(result), indent=2))
    return result


def _play(nemesis: Nemesis, options: RunOptions, result: RunResult) -> None:
    time.sleep(options.warmup_s)
    try:
        for step in options.steps:
            at = time.monotonic()
            log.info("fault %s on %s for %.1f s", step.fault, step.target, step.seconds)
            nemesis.inject(step)
            time.sleep(step.seconds)
            nemesis.heal(step)
            result.faults.append({**asdict(step), "at": round(at, 1)})
            time.sleep(step.quiet)
    finally:
        nemesis.heal_all()


def _settle(workload: Workload) -> None:
    """Wait until a write issued after every heal has committed (at most `SETTLE_S`)."""
    deadline = time.monotonic() + SETTLE_S
    healed = time.monotonic_ns()
    while time.monotonic() < deadline:
        with workload._lock:
            if any(op.call_ns > healed and op.outcome == "ok" and op.kind != "read"
                   for op in workload.operations):  # fmt: skip
                return
        threading.Event().wait(0.5)
    log.warning("no write committed within %.0f s after the faults healed", SETTLE_S)


def _check(options: RunOptions, layout: Layout, workload: Workload, result: RunResult) -> None:
    ops = list(workload.operations)
    counts: dict[str, Counter[str]] = {}
    for op in ops:
        label = op.error or "rejected" if op.outcome == "rejected" else op.outcome
        counts.setdefault(op.kind, Counter())[label] += 1
    result.operations = {kind: dict(c) for kind, c in sorted(counts.items())}
    path = history.write(options.out / "history.json", workload.names, ops)
    verdict = history.check(path)
    result.verdict = verdict.result
    result.unknown = verdict.unknown
    result.visualization = None if verdict.visualization is None else str(verdict.visualization)

    topics = Topics(layout.prefix)
    events = [e for e in read_events(layout.direct, topics.events, 0) if e.catalog == CATALOG]
    result.log_events = len(events)
    if [e.resource_version for e in events] != list(range(1, len(events) + 1)):
        result.log_problems.append("resource versions are not dense from 1")
    try:
        verify_chain(events)
    except Exception as exc:  # recorded as an anomaly
        result.log_problems.append(f"hash chain: {exc}")
    ids = [e.command_id for e in events if e.command_id is not None]
    if len(ids) != len(set(ids)):
        result.log_problems.append("a command id was applied twice")
    expected = replay(Image.empty(CATALOG), events)
    equal = True
    for group, follower in workload.followers.items():
        caught_up = follower.wait_caught_up(timeout=SETTLE_S)
        image = follower.current()
        if not caught_up or image != expected:
            log.error("follower of %s differs from the log (rv %s vs %s)", group,
                      image.resource_version, expected.resource_version)  # fmt: skip
            equal = False
    result.followers_equal_log = equal
