"""Run the API with uvicorn on a socket the caller binds first (a taken port is a clean error)."""

from __future__ import annotations

import socket

import uvicorn
from fastapi import FastAPI

from server.errors import ServerError


class PortTaken(ServerError):
    """The address to listen on is taken or not allowed."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        self.host = host
        self.port = port
        super().__init__(
            f"cannot listen on {host}:{port}: {reason}: stop what uses it or pick "
            "another --port"
        )


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0: one the system picks).

    Raises:
        PortTaken: The address is in use or refused.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PortTaken(host, port, exc.strerror or str(exc)) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def server_for(app: FastAPI, *, log_level: str = "warning") -> uvicorn.Server:
    """A uvicorn server of `app` (run it with `server.run(sockets=[bind(...)])`)."""
    config = uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=False,
                            timeout_graceful_shutdown=5)  # fmt: skip
    return uvicorn.Server(config)
