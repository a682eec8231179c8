"""The HTTP part of `make demo`: one write and one watch through `metalog serve`.

Starts `metalog serve` for the demo's catalog on a fixed loopback port
(`METALOG_DEMO_HTTP_PORT`, default 8645; a free one if that is taken), opens a
watch of the catalog's tables from its current resource_version, creates a
table with a POST, and prints the curl line of each request and what came
back, in metalog's words. The server's own output is shown only if it fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import requests
from rich.console import Console
from rich.markup import escape

from events.errors import MetalogError
from events.topics import Topics
from producers.leader.leader import Leader

PORT_ENV = "METALOG_DEMO_HTTP_PORT"
DEFAULT_PORT = 8645
ROOT = Path(__file__).resolve().parents[1]


class DemoServerFailed(MetalogError):
    """`metalog serve` did not start for the demo."""


def _port() -> int:
    """The fixed demo port if it is free, else 0 (the system picks one)."""
    wanted = int(os.environ.get(PORT_ENV) or DEFAULT_PORT)
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as `metalog serve` binds
        try:
            probe.bind(("127.0.0.1", wanted))
        except OSError:
            return 0
    return wanted


@contextmanager
def serving(bootstrap: str, topics: Topics, catalog: str) -> Iterator[str]:
    """`metalog serve` of `catalog` on loopback until the block ends; yields its base URL.

    Raises:
        DemoServerFailed: It ended before it listened (its stderr says why).
    """
    server = subprocess.Popen(
        [sys.executable, "-m", "metalog.cli", "serve", "--bootstrap", bootstrap,
         "--prefix", topics.prefix, "--catalog", catalog, "--port", str(_port())],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (
            str(ROOT), os.environ.get("PYTHONPATH"))))},
    )  # fmt: skip
    try:
        assert server.stdout is not None and server.stderr is not None
        first = server.stdout.readline()  # "metalog serve: listening on http://host:port (…)"
        if not first.startswith("metalog serve: listening on "):
            server.wait(30)
            raise DemoServerFailed(f"metalog serve did not start: {server.stderr.read().strip()}")
        yield first.split()[4]
    finally:
        server.terminate()
        server.communicate(timeout=30)


def _watch(url: str, seen: Queue[dict[str, Any]], opened: threading.Event) -> None:
    with requests.get(url, stream=True, timeout=60) as answer:
        opened.set()
        for raw in answer.iter_lines():
            if raw:
                item = json.loads(raw)
                seen.put(item)
                if item["type"] != "BOOKMARK":
                    return


def run(bootstrap: str, topics: Topics, catalog: str, console: Console) -> None:
    """A watch of `catalog`'s tables, then a CreateTable over HTTP, as a user would do them."""
    say = console.print
    with (Leader(bootstrap, topics=topics) as leader,
          serving(bootstrap, topics, catalog) as url):  # fmt: skip
        if not leader.wait_until_serving(1, timeout=60.0):
            raise DemoServerFailed("the demo leader owned no partition within 60 s")
        base = f"{url}/v1/catalogs/{catalog}"
        state = requests.get(base, timeout=60).json()
        rv = state["resource_version"]
        say(f"[bold]http[/] metalog serve listens on {url}; {catalog} is at resource_version {rv}")
        watch_url = f"{base}/tables?watch=true&resourceVersion={rv}"
        say(f"  $ curl -N '{watch_url}' &", soft_wrap=True)
        seen: Queue[dict[str, Any]] = Queue()
        opened = threading.Event()
        watcher = threading.Thread(target=_watch, args=(watch_url, seen, opened), daemon=True)
        watcher.start()
        opened.wait(30)
        body: dict[str, Any] = {"schema_name": "public", "table_name": "clicks",
                                "columns": [{"name": "ts", "data_type": "TimestampMillisecond"},
                                            {"name": "url", "data_type": "String"}]}  # fmt: skip
        data = escape(json.dumps(body, separators=(",", ":")))
        say(f"  $ curl -X POST {base}/commands/CreateTable -H 'Content-Type: application/json' "
            f"-H 'Idempotency-Key: demo-clicks' -d '{data}'", soft_wrap=True)
        made = requests.post(f"{base}/commands/CreateTable", json=body, timeout=60,
                             headers={"Idempotency-Key": "demo-clicks"})  # fmt: skip
        if made.status_code != 200:
            raise DemoServerFailed(f"the HTTP write was refused: {made.status_code} {made.text}")
        committed = made.json()
        table = committed["tables"][0]
        say(f"  {made.status_code}: committed public.clicks as table {table['table_id']} "
            f"(version {table['version']}) at resource_version {committed['resource_version']}, "
            f"ETag {made.headers['ETag']}")
        try:
            change = next(item for item in iter(lambda: seen.get(timeout=30), None)
                          if item["type"] != "BOOKMARK")
        except Empty:
            raise DemoServerFailed("the watch saw no change within 30 s") from None
        value = change["object"]["value"]
        say(f"  watch: {change['type']} {change['object']['key']} "
            f"({value['schema_name']}.{value['table_name']}, version {value['version']}) "
            f"at resource_version {change['resourceVersion']}")


def main() -> int:
    """Run the HTTP part alone on a fresh catalog, with a leader of its own."""
    from metalog.demo import sql as demo_sql  # the demo's quiet Kafka logging
    from metalog.stack.config import StackConfig

    demo_sql.quiet_kafka()
    config = StackConfig.from_env()
    bootstrap = os.environ.get("METALOG_BOOTSTRAP") or config.bootstrap
    console = Console(width=160)
    try:
        run(bootstrap, Topics(config.topic_prefix), f"web-{uuid.uuid4().hex[:6]}", console)
    except (MetalogError, requests.RequestException) as exc:
        print(f"metalog demo: error: {exc} (is the broker up? run `metalog up`)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
