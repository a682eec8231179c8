"""``metalog leader`` with one producer setting changed, to measure a proposed change.

Run as ``python -m bench.leader_variant backoff -- <metalog leader arguments>``;
``bench.leader --systems ...,tuned`` uses it. Nothing in the project changes:
this process swaps the ``Producer`` name that ``producers.owner`` imported for
a factory that adds settings, then runs the unmodified ``metalog leader``.

``backoff``: ``retry.backoff.ms=10`` on the leader's transactional producer
(librdkafka's default is 100 ms, growing exponentially to
``retry.backoff.max.ms``). After ``commit_transaction`` returns, the
coordinator is still writing the commit markers; the next batch's
``AddOffsetsToTxn`` (inside ``send_offsets_to_transaction``) and
``AddPartitionsToTxn`` are answered ``CONCURRENT_TRANSACTIONS`` until it is
done, and librdkafka waits ``retry.backoff.ms`` before each retry. The Java
producer retries this case after 20 ms (KAFKA-5477); see also
confluent-kafka-python issue #967.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Producer

import producers.owner
from metalog.cli import main as cli_main

BACKOFF_MS = 2


def _with(extra: Mapping[str, Any]) -> Callable[[dict[str, Any]], Producer]:
    def make(config: dict[str, Any]) -> Producer:
        return Producer({**config, **extra})

    return make


VARIANTS: dict[str, dict[str, Any]] = {"backoff": {"retry.backoff.ms": BACKOFF_MS}}
"""Name → the producer settings the variant adds."""


def main(argv: list[str] | None = None) -> int:
    """Install the named variant, then run ``metalog leader`` with the remaining arguments."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in VARIANTS:
        raise SystemExit(f"usage: python -m bench.leader_variant {{{','.join(VARIANTS)}}} -- ARGS")
    name, rest = args[0], args[1:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    producers.owner.Producer = _with(VARIANTS[name])  # type: ignore[misc,assignment]
    result: int = cli_main(["leader", *rest])
    return result


if __name__ == "__main__":
    sys.exit(main())
