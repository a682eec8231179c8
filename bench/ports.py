"""Fixed port pairs for the brokers benchmarks start: never random, never a running one."""

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port_pair(candidates: tuple[int, ...]) -> int:
    """The first `port` of `candidates` such that `port` and `port + 1` are both unused."""
    for port in candidates:
        taken = False
        for p in (port, port + 1):
            with socket.socket() as sock:
                taken = taken or sock.connect_ex(("127.0.0.1", p)) == 0
        if not taken:
            return port
    raise SystemExit(f"no free port pair among {candidates}: stop what runs there first")


@contextmanager
def broker(bootstrap: str | None, candidates: tuple[int, ...],
           scratch: Path) -> Iterator[str]:  # fmt: skip
    """`bootstrap` when given; else a broker of its own, on the first free pair of
    `candidates`, its state under `scratch`, stopped after the block. Yields the bootstrap."""
    if bootstrap:
        yield bootstrap
        return
    from metalog.stack import broker as stack  # the JVM stack, only when one is started
    from metalog.stack.config import StackConfig

    port = free_port_pair(candidates)
    config = StackConfig(state_dir=scratch / "broker", port=port, controller_port=port + 1)
    stack.up(config)
    try:
        yield config.bootstrap
    finally:
        stack.down(config)
