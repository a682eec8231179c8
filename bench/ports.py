"""Fixed port pairs for the brokers benchmarks start: never random, never a running one."""

import socket


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
