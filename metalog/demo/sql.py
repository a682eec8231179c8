"""The SQL part of `make demo`: `metalog sql` creating a table and labelling it, then reading.

TiDB's statements run as a user would type them, through the command line itself
(`metalog.cli.main`): a partitioned CREATE TABLE, `ATTRIBUTES` on the table and on a
partition (the partition's own label wins over the inherited one), then
`INFORMATION_SCHEMA.REGION_LABEL`, `SHOW ATTRIBUTES` and `SHOW CREATE TABLE` read back
through a follower's image. `metalog.demo.write` runs it while its leader serves;
`python -m metalog.demo.sql` runs it alone, with a leader of its own.
"""

from __future__ import annotations

import logging
import os
import sys
import uuid

from rich.console import Console

from events.errors import MetalogError
from events.topics import Topics
from metalog.cli import main as metalog
from metalog.stack.config import StackConfig
from producers.leader.leader import Leader

WRITES = """\
CREATE TABLE invoices (
  id BIGINT NOT NULL, customer VARCHAR(64), total DECIMAL(10, 2), PRIMARY KEY (id))
  PARTITION BY RANGE (id) (PARTITION p2025 VALUES LESS THAN (1000),
                           PARTITION p2026 VALUES LESS THAN MAXVALUE);
ALTER TABLE invoices ATTRIBUTES='merge_option=deny';
ALTER TABLE invoices PARTITION p2026 ATTRIBUTES='merge_option=allow';"""

READS = (
    "SELECT * FROM INFORMATION_SCHEMA.REGION_LABEL WHERE RULE_ID LIKE 'schema/public/invoices%'",
    "SHOW ATTRIBUTES FOR TABLE invoices",
    "SHOW CREATE TABLE invoices",
)


def run(bootstrap: str, topics: Topics, catalog: str, console: Console) -> None:
    """Run the demo's statements on `catalog`; a leader must be serving it.

    Raises:
        MetalogError: A statement failed (`metalog sql` has printed why).
    """
    where = ["--bootstrap", bootstrap, "--prefix", topics.prefix, "--catalog", catalog]
    for script in (WRITES, *READS):
        console.print(f"[bold]$ metalog sql[/] {_quoted(script)}", highlight=False)
        code = metalog(["sql", script, *where])
        if code != 0:
            raise MetalogError(f"`metalog sql` exited with {code} on: {script}")


def quiet_kafka() -> None:
    """Keep librdkafka's transient retries (a coordinator still loading…) out of a demo;
    its errors still show."""
    logging.getLogger("metalog.kafka").setLevel(logging.ERROR)


def _quoted(script: str) -> str:
    return '"' + script.replace("\n", "\n    ") + '"'


def main() -> int:
    """Run the SQL part alone on a fresh catalog, with a leader of its own."""
    quiet_kafka()
    config = StackConfig.from_env()
    bootstrap = os.environ.get("METALOG_BOOTSTRAP") or config.bootstrap
    topics = Topics(config.topic_prefix)
    console = Console(width=160)
    catalog = f"sql-{uuid.uuid4().hex[:6]}"
    try:
        with Leader(bootstrap, topics=topics) as leader:
            if not leader.wait_until_serving(1, timeout=60.0):
                raise MetalogError("the demo leader owned no partition within 60 s")
            run(bootstrap, topics, catalog, console)
    except MetalogError as exc:
        print(f"metalog demo: error: {exc} (is the broker up? run `metalog up`)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
