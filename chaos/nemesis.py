"""The nemesis: a seeded schedule of faults, each injected and then healed.

Network faults act on the proxies of one process group (or of all); process
faults on a leader process or a broker. Every fault heals: a cut proxy is
enabled again, a toxic removed, a killed process restarted, a paused one
resumed. `schedule` draws the order, targets and durations from a seed, so a
run is repeatable up to the operating system's timing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from chaos import cluster
from chaos.cluster import BROKERS, GROUPS, Layout
from chaos.leaders import LeaderProcess
from chaos.toxiproxy import Toxiproxy

Fault = Literal[
    "latency", "bandwidth", "reset", "partition-leader", "client-cut",
    "kill-leader", "pause-leader", "restart-broker",
]  # fmt: skip
FAULTS: tuple[Fault, ...] = (
    "latency", "bandwidth", "reset", "partition-leader", "client-cut",
    "kill-leader", "pause-leader", "restart-broker",
)  # fmt: skip
LEADER_GROUPS = tuple(g for g in GROUPS if g.startswith("leader"))
CLIENT_GROUPS = tuple(g for g in GROUPS if g.startswith("clients"))


@dataclass(frozen=True, slots=True)
class Step:
    """One fault of a schedule.

    Attributes:
        fault: Its kind.
        target: A process group (network faults, leader faults), `all`, or a broker (`b2`).
        seconds: How long it lasts before it heals.
        quiet: Seconds of no fault after it heals.
    """

    fault: Fault
    target: str
    seconds: float
    quiet: float


def _target(fault: Fault, rng: random.Random) -> str:
    if fault == "latency":
        return "all"
    if fault in ("partition-leader", "kill-leader", "pause-leader"):
        return rng.choice(LEADER_GROUPS)
    if fault == "restart-broker":
        return f"b{rng.randint(1, BROKERS)}"
    return rng.choice(CLIENT_GROUPS)


def schedule(seed: int, total_seconds: float, every_fault_once: bool = True) -> list[Step]:
    """Faults for about `total_seconds`: each kind once (in a seeded order), then random ones.

    A pause outlasts the leaders' session timeout (6 s), so the group moves
    the paused leader's partition and the paused process wakes up fenced.
    """
    rng = random.Random(seed)
    steps: list[Step] = []
    kinds = list(FAULTS)
    rng.shuffle(kinds)
    elapsed = 0.0
    while elapsed < total_seconds:
        fault = kinds.pop(0) if every_fault_once and kinds else rng.choice(FAULTS)
        seconds = 9.0 if fault in ("pause-leader", "partition-leader") else rng.uniform(3.0, 7.0)
        step = Step(fault, _target(fault, rng), round(seconds, 1), round(rng.uniform(2.0, 5.0), 1))
        steps.append(step)
        elapsed += step.seconds + step.quiet
        if not every_fault_once and not kinds:
            break
    return steps


class Nemesis:
    """Injects and heals the faults of a schedule on a running cluster.

    Args:
        layout: The cluster.
        proxy: Its Toxiproxy.
        leaders: The leader processes, by process group.
    """

    def __init__(self, layout: Layout, proxy: Toxiproxy, leaders: dict[str, LeaderProcess]) -> None:
        self.layout = layout
        self.proxy = proxy
        self.leaders = leaders

    def _proxies(self, target: str) -> list[str]:
        groups = GROUPS if target == "all" else (target,)
        return [Layout.proxy(n, g) for g in groups for n in range(1, BROKERS + 1)]

    def inject(self, step: Step) -> None:
        """Start the step's fault."""
        fault, target = step.fault, step.target
        if fault == "latency":
            for name in self._proxies(target):
                self.proxy.add_toxic(name, "latency", "latency", "downstream",
                                     latency=60, jitter=40)
        elif fault == "bandwidth":
            for name in self._proxies(target):
                self.proxy.add_toxic(name, "bandwidth", "bandwidth", "downstream", rate=8)
        elif fault == "reset":
            for name in self._proxies(target):
                self.proxy.add_toxic(name, "reset", "reset_peer", "upstream", timeout=0)
        elif fault == "partition-leader":
            for name in self._proxies(target):
                self.proxy.enable(name, False)
        elif fault == "client-cut":  # requests still arrive; replies never come back
            for name in self._proxies(target):
                self.proxy.add_toxic(name, "cut", "timeout", "downstream", timeout=0)
        elif fault == "kill-leader":
            self.leaders[target].kill9()
        elif fault == "pause-leader":
            self.leaders[target].pause()
        elif fault == "restart-broker":
            cluster.kill_broker(self.layout, int(target[1:]))

    def heal(self, step: Step) -> None:
        """End the step's fault; a leader that exited meanwhile is restarted."""
        fault, target = step.fault, step.target
        toxic = {"latency": "latency", "bandwidth": "bandwidth", "reset": "reset",
                 "client-cut": "cut"}.get(fault)  # fmt: skip
        if toxic is not None:
            for name in self._proxies(target):
                self.proxy.remove_toxic(name, toxic)
        elif fault == "partition-leader":
            for name in self._proxies(target):
                self.proxy.enable(name, True)
        elif fault == "kill-leader":
            self.leaders[target].start()
        elif fault == "pause-leader":
            self.leaders[target].resume()
        elif fault == "restart-broker":
            cluster.start_broker(self.layout, int(target[1:]))
        for leader in self.leaders.values():
            leader.ensure_running()

    def heal_all(self) -> None:
        """Every proxy enabled without toxics, every leader and broker running."""
        self.proxy.reset()
        for n in range(1, BROKERS + 1):
            cluster.start_broker(self.layout, n)
        for leader in self.leaders.values():
            leader.resume()
            leader.ensure_running()
