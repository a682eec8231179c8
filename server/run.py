"""Run the API with uvicorn on a socket the caller binds first (a taken port is a clean error)."""

from __future__ import annotations

import socket
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol

from server.broadcast import CONNECTION
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


class Protocol(H11Protocol):
    """uvicorn's h11 protocol whose requests carry their connection in the scope
    (`scope["extensions"][CONNECTION]`): a live watch is written to it directly
    (`server.broadcast`)."""

    def handle_events(self) -> None:
        """Parse what came; a new request's scope gets its connection before its app runs."""
        before = self.cycle
        super().handle_events()
        if self.cycle is not before and self.cycle is not None:
            extensions: dict[str, Any] = self.cycle.scope.setdefault("extensions", {})
            extensions[CONNECTION] = self.cycle


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0: one the system picks).

    Raises:
        PortTaken: The address is in use or refused.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it a response written in two parts waits out the client's delayed ACK (40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PortTaken(host, port, exc.strerror or str(exc)) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def server_for(app: FastAPI, *, log_level: str = "warning", tls_cert: str | None = None,
               tls_key: str | None = None) -> uvicorn.Server:  # fmt: skip
    """A uvicorn server of `app` (run it with `server.run(sockets=[bind(...)])`).

    Args:
        app: The API.
        log_level: uvicorn's log level.
        tls_cert: A PEM file with the certificate chain (and the key, unless `tls_key`):
            the server speaks HTTPS only; None: plain HTTP.
        tls_key: A PEM file with the certificate's key, when `tls_cert` lacks it.
    """
    # h11, even where httptools is installed: uvicorn's httptools protocol drops the body
    # of a request that offers `Upgrade: h2c`, as Java's HttpClient does by default.
    config = uvicorn.Config(app, http=Protocol, log_level=log_level, lifespan="on",
                            access_log=False, timeout_graceful_shutdown=5, ssl_certfile=tls_cert,
                            ssl_keyfile=tls_key)  # fmt: skip
    return uvicorn.Server(config)
