"""`python -m chaos --minutes N [--seed S]`: a long run of random faults (docs/reliability.md).

Prints the seed first (a failing run is repeated with `--seed`), then the
result; exits 1 when the run found an anomaly.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path

from chaos import cluster, nemesis
from chaos.run import RunOptions, run
from chaos.workload import WorkloadOptions


def main(argv: list[str] | None = None) -> int:
    """Run the harness from the command line."""
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long faults go on")
    parser.add_argument("--seed", type=int, default=None, help="default: a random one, printed")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--families", type=int, default=3,
                        help="families of two table names the clients share")
    parser.add_argument("--out", type=Path, default=None,
                        help="the run's folder (default .metalog/chaos/<seed>)")
    parser.add_argument("--base-port", type=int, default=cluster.DEFAULT_BASE,
                        help="first port of the cluster and its proxies (uses base..base+130)")
    parser.add_argument("--reads", choices=("decided-end", "caught-up"), default="decided-end",
                        help="how a read waits for its follower (chaos.workload.WorkloadOptions)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    print(f"chaos seed {seed}", flush=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    out = args.out or Path(".metalog") / "chaos" / f"{seed}-{int(time.time())}"
    steps = nemesis.schedule(seed, args.minutes * 60.0)
    result = run(RunOptions(out=out.absolute(), steps=steps, seed=seed,
                            workload=WorkloadOptions(clients=args.clients, families=args.families,
                                                     reads=args.reads),
                            base_port=args.base_port))  # fmt: skip
    print(json.dumps({**asdict(result), "anomalies": result.anomalies}, indent=2))
    return 1 if result.anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
