"""``metalog serve``: the HTTP/JSON API with watch (docs/http.md)."""

from __future__ import annotations

import argparse
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from events.topics import Topics
from metalog.cli.args import add_cluster_options, positive_float, positive_int, security
from producers.errors import LeaderUnavailable


def _check_cluster(bootstrap: str, topics: Topics, config: dict[str, Any]) -> None:
    """Refuse to start without the cluster or its commands topic (one clean line, no traceback)."""
    admin = AdminClient({**config, "bootstrap.servers": bootstrap, "log_level": 0})
    try:
        found = admin.list_topics(topics.commands, timeout=10.0).topics.get(topics.commands)
    except KafkaException as exc:
        raise LeaderUnavailable(
            f"the Kafka cluster at {bootstrap} does not answer ({exc.args[0]}): start it "
            "(`metalog up`) or pass --bootstrap"
        ) from None
    if found is None or found.error is not None:
        raise LeaderUnavailable(
            f"topic {topics.commands} is missing on {bootstrap}: run `metalog up` (or create "
            "the topics), or pass the right --prefix"
        )


def _serve(args: argparse.Namespace) -> int:
    # The server (FastAPI, uvicorn, the SQL engine) is the `[serve]` extra: loaded here only.
    from server.app import create_app
    from server.catalogs import ServerSettings
    from server.run import bind, server_for

    topics = Topics(args.prefix)
    settings = ServerSettings(
        bootstrap=args.bootstrap,
        catalogs=tuple(args.catalog) if args.catalog else None,
        topics=topics,
        actor=args.actor,
        write_security=security(args, "client"),
        read_security=security(args, "follower"),
        command_timeout=args.command_timeout,
        wait_timeout=args.wait_timeout,
        max_body=args.max_body,
    )
    _check_cluster(args.bootstrap, topics, settings.read_security.client_config())
    sock = bind(args.host, args.port)
    print(f"metalog serve: listening on http://{args.host}:{sock.getsockname()[1]} "
          f"(catalogs: {', '.join(args.catalog) if args.catalog else 'any'})", flush=True)
    server_for(create_app(settings)).run(sockets=[sock])
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``serve``."""
    parser = subparsers.add_parser(
        "serve", help="serve the catalogs over HTTP/JSON: commands, reads, SQL and watch"
    )
    add_cluster_options(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    parser.add_argument("--catalog", action="append", metavar="NAME",
                        help="a catalog to serve (repeatable; default: any)")  # fmt: skip
    parser.add_argument("--actor", default="http", help="actor stamped on the events written")
    parser.add_argument("--command-timeout", type=positive_float, default=10.0,
                        help="seconds a write waits for its outcome before a 504")
    parser.add_argument("--wait-timeout", type=positive_float, default=10.0,
                        help="the longest ?resourceVersion=N wait, in seconds")
    parser.add_argument("--max-body", type=positive_int, default=1_048_576,
                        help="the largest request body in bytes (larger: 413)")
    parser.set_defaults(func=_serve)
