"""Run the API with uvicorn on a socket the caller binds first (a taken port is a clean error)."""

from __future__ import annotations

import asyncio
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
    (`server.broadcast`); and whose responses start with one write (`Joined`)."""

    def handle_events(self) -> None:
        """Parse what came; a new request's scope gets its connection before its app runs."""
        before = self.cycle
        super().handle_events()
        if self.cycle is not before and self.cycle is not None:
            extensions: dict[str, Any] = self.cycle.scope.setdefault("extensions", {})
            extensions[CONNECTION] = self.cycle
            self.cycle.transport = Joined(self.transport)  # type: ignore[assignment]


class Joined:
    """One response's transport: its first write (the status line and headers) goes out
    with the next one (the body), in one `send`.

    uvicorn writes a response's head and its body apart: two system calls for every
    answer (an eighth of the server's CPU under load). The head is held until the
    body's write, or until the loop's next turn when the body is not written in the
    same one (a stream's first line may come much later): never longer.
    """

    __slots__ = ("_fresh", "_held", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytes | None = None
        self._fresh = True

    def write(self, data: bytes) -> None:
        """Write `data`; the first write is held until the next or the loop's next turn."""
        if self._fresh:
            self._fresh = False
            self._held = data
            asyncio.get_running_loop().call_soon(self._release)
            return
        if self._held is not None:
            data, self._held = self._held + data, None
        self._transport.write(data)

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        """Write what is held, then close."""
        self._release()
        self._transport.close()

    def is_closing(self) -> bool:
        """Whether the connection is closing or closed."""
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


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
