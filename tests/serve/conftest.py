"""A `metalog serve` app on the test's topics, run by uvicorn on a loopback port in a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import pytest
import requests

from producers.leader.leader import Leader
from server.app import create_app
from server.catalogs import ServerSettings
from server.run import bind, server_for
from tests.fixtures.kafka import TopicSet


@dataclass(frozen=True)
class Served:
    """A running server: its base URL and settings."""

    url: str
    settings: ServerSettings

    def get(self, path: str, **kwargs: object) -> requests.Response:
        """GET `path`."""
        return requests.get(self.url + path, timeout=30, **kwargs)  # type: ignore[arg-type]

    def post(self, path: str, **kwargs: object) -> requests.Response:
        """POST `path`."""
        return requests.post(self.url + path, timeout=30, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    """A factory: `serve(settings, tls_cert=None, http=None)` runs an app until the test
    ends (`http`: uvicorn's protocol, such as "h11", instead of `server.run.Protocol`)."""
    running: list[tuple[object, threading.Thread]] = []

    def start(settings: ServerSettings, tls_cert: str | None = None,
              http: str | None = None) -> Served:  # fmt: skip
        sock = bind("127.0.0.1", 0)
        server = server_for(create_app(settings), tls_cert=tls_cert)
        if http is not None:  # another of uvicorn's protocols than `metalog serve`'s
            server.config.http = http
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread))
        scheme = "http" if tls_cert is None else "https"
        url = f"{scheme}://127.0.0.1:{sock.getsockname()[1]}"
        for _ in range(200):
            if server.started:
                break
            threading.Event().wait(0.05)
        assert server.started, "uvicorn did not start"
        return Served(url, settings)

    yield start
    for server, thread in running:
        server.should_exit = True  # type: ignore[attr-defined]
        thread.join(30)


def settings_for(wire: TopicSet, **overrides: object) -> ServerSettings:
    """Settings serving catalog `greptime` on the test's topics, with short waits."""
    base = ServerSettings(wire.bootstrap, catalogs=("greptime",), topics=wire.topics,
                          command_timeout=20.0, wait_timeout=20.0)  # fmt: skip
    return replace(base, **overrides)  # type: ignore[arg-type]


@pytest.fixture
def served(leader: Leader, wire: TopicSet,
           serve: Callable[[ServerSettings], Served]) -> Served:  # fmt: skip
    """A server of catalog `greptime` with a leader serving the test's topics."""
    return serve(settings_for(wire))


COLUMNS = [{"name": "ts", "data_type": "TimestampMillisecond"},
           {"name": "v", "data_type": "Float64"}]  # fmt: skip


def create_body(table: str, **more: object) -> dict[str, object]:
    """A CreateTable body for `public.{table}`."""
    return {"schema_name": "public", "table_name": table, "columns": COLUMNS, **more}
