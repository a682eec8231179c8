"""``--json`` for the subcommands: the flag, the printer and the documented shapes.

Every shape here is documented in docs/cli.md; a test parses each command's output
and checks those keys, so change both together.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the shapes only read attributes: `metalog status` stays light
    from projector.fold.image import Image
    from projector.follower.watch import WatchEvent
    from projector.snapshot.store import SnapshotInfo


def add_json_flag(parser: argparse.ArgumentParser, what: str = "a JSON object") -> None:
    """Give `parser` the ``--json`` option (``args.json``)."""
    parser.add_argument("--json", action="store_true", help=f"print {what}")


def print_json(document: Any) -> None:
    """Print one JSON document on one line of stdout, flushed (a script may be waiting)."""
    print(json.dumps(document, sort_keys=True), flush=True)


def image_document(image: Image) -> dict[str, Any]:
    """`metalog show --json`: a catalog's published view.

    Keys: catalog, resource_version, stable_epoch, publish_mode, pending, tables
    (table_id, schema, table, version, columns [{name, type}], partitions [names],
    regions [{region_id, leader_datanode}]) and label_rules (rule_id, labels {k: v},
    ranges: how many).
    """
    view = image.published
    tables = []
    # Keys only: a value loaded from a snapshot is built when it is read.
    for key in sorted(k for k in view.values if k.startswith("__table_info/")):
        info = view.table(int(key.rsplit("/", 1)[1]))
        if info is None:
            continue
        route = view.route(info.table_id)
        tables.append({
            "table_id": info.table_id, "schema": info.schema_name, "table": info.table_name,
            "version": info.version,
            "columns": [{"name": c.name, "type": c.data_type} for c in info.columns],
            "partitions": [p.name for p in info.partitions],
            "regions": [{"region_id": r.region_id, "leader_datanode": r.leader_datanode}
                        for r in (route.region_routes if route else ())],
        })  # fmt: skip
    rules = [{"rule_id": rule.rule_id, "labels": {x.key: x.value for x in rule.labels},
              "ranges": len(rule.ranges)} for rule in view.label_rules()]  # fmt: skip
    return {"catalog": image.catalog, "resource_version": image.resource_version,
            "stable_epoch": image.stable_epoch, "publish_mode": str(image.publish_mode),
            "pending": len(image.pending), "tables": tables, "label_rules": rules}  # fmt: skip


def change_document(change: WatchEvent) -> dict[str, Any]:
    """One line of `metalog follow --json`.

    Keys: resource_version, change_resource_version, schema_epoch, op (PUT/DELETE),
    key, value (the value's fields, or null for a DELETE).
    """
    return {
        "resource_version": change.resource_version,
        "change_resource_version": change.change_resource_version,
        "schema_epoch": change.schema_epoch, "op": str(change.op), "key": change.key,
        "value": None if change.value is None else change.value.model_dump(mode="json"),
    }  # fmt: skip


def snapshot_document(info: SnapshotInfo) -> dict[str, Any]:
    """One good entry of `metalog snapshot list/verify --json` (``ok`` true).

    Keys: path, ok, catalog, resource_version, keys, size (bytes), next_offset.
    """
    return {"path": str(info.path), "ok": True, "catalog": info.catalog,
            "resource_version": info.resource_version, "keys": info.keys, "size": info.size,
            "next_offset": info.position.next_offset}  # fmt: skip


class JsonLines(logging.Formatter):
    """Log records as JSON lines: time (ISO 8601, UTC), level, logger, message."""

    def format(self, record: logging.LogRecord) -> str:
        """One record as one JSON object (an exception's text under ``error``)."""
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
        }  # fmt: skip
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, sort_keys=True)


def log_status(as_json: bool) -> None:
    """Configure the root logger of a long-running command (``leader``).

    Text lines go to stderr as before; with `as_json`, JSON lines (`JsonLines`) go to
    stdout, where a script reads them.
    """
    if not as_json:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        return
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonLines())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
