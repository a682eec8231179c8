"""The server's connections: a response is not held back by Nagle's algorithm, and its
head goes out with its body (`server.run.Joined`)."""

from __future__ import annotations

import asyncio
import http.client
import socket
import threading

from server.app import create_app
from server.catalogs import ServerSettings
from server.run import Joined, bind, server_for


def test_every_connection_the_server_accepts_has_tcp_nodelay() -> None:
    """asyncio sets TCP_NODELAY only on sockets that say they are TCP; `bind` makes one so.

    Without it, a response written in two parts (headers, then body) waits for the
    client's delayed ACK: 40 ms on Linux for every request on a kept-alive connection.
    """
    sock = bind("127.0.0.1", 0)
    server = server_for(create_app(ServerSettings("127.0.0.1:1")))  # /healthz needs no Kafka
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            threading.Event().wait(0.05)
        connection = http.client.HTTPConnection("127.0.0.1", sock.getsockname()[1], timeout=30)
        try:
            connection.request("GET", "/healthz")
            answer = connection.getresponse()
            assert answer.status == 200 and answer.read() == b'{"status":"ok"}'
            accepted = [c.transport.get_extra_info("socket")
                        for c in server.server_state.connections]  # fmt: skip
            assert accepted, "the kept-alive connection is open"
            assert all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in accepted)
        finally:
            connection.close()
    finally:
        server.should_exit = True
        thread.join(30)


class Recorded(asyncio.Transport):
    """A transport that keeps what is written to it, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def test_a_response_head_goes_out_with_its_body_in_one_write() -> None:
    async def respond() -> list[bytes]:
        wire = Recorded()
        joined = Joined(wire)
        joined.write(b"HTTP/1.1 200 OK\r\n\r\n")
        assert wire.writes == []
        joined.write(b"{}")
        joined.write(b"")  # h11's end of a sized body
        await asyncio.sleep(0)  # the head's release, had it stayed held, would run here
        return wire.writes

    assert asyncio.run(respond()) == [b"HTTP/1.1 200 OK\r\n\r\n{}", b""]


def test_a_head_whose_body_is_late_goes_out_on_the_loops_next_turn() -> None:
    """A stream's first line may come much later: its head is not held for it."""
    async def stream() -> list[bytes]:
        wire = Recorded()
        joined = Joined(wire)
        joined.write(b"head")
        await asyncio.sleep(0)
        assert wire.writes == [b"head"]
        joined.write(b"line")
        return wire.writes

    assert asyncio.run(stream()) == [b"head", b"line"]


def test_a_connection_closed_with_its_head_held_writes_the_head_first() -> None:
    async def close_at_once() -> Recorded:
        wire = Recorded()
        joined = Joined(wire)
        joined.write(b"head")
        joined.close()
        await asyncio.sleep(0)
        return wire

    wire = asyncio.run(close_at_once())
    assert wire.writes == [b"head"] and wire.closed
