"""``metalog serve``: the HTTP/JSON API with watch (docs/http.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from events.topics import Topics
from metalog.cli.args import add_cluster_options, positive_float, positive_int, security
from producers.errors import LeaderUnavailable
from projector.kafka.security import KafkaSecurity


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


def _certificate(args: argparse.Namespace, reader: KafkaSecurity) -> str:
    """`--tls-cert`, else the secure stack's broker certificate beside its CA file.

    Raises:
        CertificateMissing: Neither is there.
    """
    from server.errors import CertificateMissing

    if args.tls_cert:
        return str(args.tls_cert)
    beside = Path(reader.ca_file).parent / "broker.pem" if reader.ca_file else None
    if beside is None or not beside.is_file():
        raise CertificateMissing(str(beside) if beside else "no --tls-cert and no ca_file")
    return str(beside)


def _serve(args: argparse.Namespace) -> int:
    # The server (FastAPI, uvicorn, the SQL engine) is the `[serve]` extra: loaded here only.
    from server.app import create_app
    from server.auth import Users
    from server.catalogs import ServerSettings
    from server.run import bind, server_for

    topics = Topics(args.prefix)
    users = Users.from_file(args.credentials) if args.credentials else None
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
        users=users,
    )
    cert = _certificate(args, settings.read_security) if users is not None else args.tls_cert
    # The writers may DESCRIBE the commands topic (WRITE implies it); a follower may not.
    _check_cluster(args.bootstrap, topics, settings.write_security.client_config())
    sock = bind(args.host, args.port)
    scheme = "http" if cert is None else "https"
    signed = "" if users is None else ", sign-in: the credentials file's principals"
    print(f"metalog serve: listening on {scheme}://{args.host}:{sock.getsockname()[1]} "
          f"(catalogs: {', '.join(args.catalog) if args.catalog else 'any'}{signed})", flush=True)
    server_for(create_app(settings), tls_cert=cert, tls_key=args.tls_key).run(sockets=[sock])
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
    parser.add_argument("--tls-cert", metavar="FILE",
                        help="PEM certificate chain (with its key, or --tls-key) to serve HTTPS "
                             "with; with --credentials the default is the secure stack's "
                             "tls/broker.pem beside the CA file")  # fmt: skip
    parser.add_argument("--tls-key", metavar="FILE", help="PEM key of --tls-cert")
    parser.set_defaults(func=_serve)
