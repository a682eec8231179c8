"""Client histories: what each operation asked, when, and what it got; and their check.

A history is a list of `Operation`s, each with its invocation and completion
times (`time.monotonic_ns()` of the process that ran it) and its outcome:
`ok`, `rejected` (a typed rejection: nothing was written) or `unknown` (no
reply: it may or may not have taken effect, and may still take effect at any
later time, as Jepsen treats an indeterminate operation). `write` saves it as
the JSON the checker (`chaos/go/checker`, Porcupine) reads; `check` runs the
checker on it.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chaos import gobuild
from chaos.errors import CheckerError

Outcome = Literal["ok", "rejected", "unknown"]
Kind = Literal["create", "alter", "rename", "drop", "read"]
UNKNOWN = -1
"""The checker's marker for no expected version / no id or version."""


@dataclass(frozen=True, slots=True)
class Seen:
    """One name as a read saw it: whether a live table holds it, its id and version."""

    present: bool = False
    table_id: int = UNKNOWN
    version: int = UNKNOWN

    def to_json(self) -> dict[str, Any]:
        """The checker's `Slot`."""
        return {"present": self.present, "id": self.table_id, "version": self.version}


@dataclass(frozen=True, slots=True)
class Operation:
    """One client operation on one family of two names (see `chaos.workload`).

    Attributes:
        client: The client (thread) that ran it, from 0.
        kind: What it asked.
        family: The family of names it addressed.
        name: Which name of the family (0 or 1); a rename goes from it to the other.
        expected: The `expected_version` it carried (None: none).
        call_ns: Monotonic time just before it was sent.
        return_ns: Monotonic time just after its outcome arrived (None: unknown).
        outcome: `ok`, `rejected` or `unknown`.
        error: The rejection's type, or for an unknown outcome the exception's.
        table_id: An ok write's table id.
        version: An ok write's version; a `VersionConflict`'s current version.
        read: A read's view of the family's two names.
    """

    client: int
    kind: Kind
    family: int
    name: int
    expected: int | None
    call_ns: int
    return_ns: int | None
    outcome: Outcome
    error: str | None = None
    table_id: int = UNKNOWN
    version: int = UNKNOWN
    read: tuple[Seen, Seen] = field(default=(Seen(), Seen()))

    def to_json(self) -> dict[str, Any]:
        """The checker's `Record`."""
        return {
            "client": self.client,
            "input": {"op": self.kind, "family": self.family, "name": self.name,
                      "expected": UNKNOWN if self.expected is None else self.expected},
            "output": {"outcome": self.outcome, "error": self.error or "",
                       "id": self.table_id, "version": self.version,
                       "read": [seen.to_json() for seen in self.read]},
            "call": self.call_ns,
            "return": None if self.outcome == "unknown" else self.return_ns,
        }  # fmt: skip


def write(path: Path, families: list[tuple[str, str]], operations: list[Operation]) -> Path:
    """Save a history as the checker's JSON; returns `path`."""
    body = {"families": [list(f) for f in families],
            "operations": [op.to_json() for op in sorted(operations, key=lambda o: o.call_ns)]}
    path.write_text(json.dumps(body, separators=(",", ":")))
    return path


@dataclass(frozen=True, slots=True)
class Verdict:
    """The checker's answer.

    Attributes:
        result: `ok` (linearizable), `refuted` or `unknown` (the search timed out).
        operations: How many operations it checked.
        unknown: How many of them had an unknown outcome.
        visualization: On `refuted`, Porcupine's HTML page next to the history.
    """

    result: Literal["ok", "refuted", "unknown"]
    operations: int
    unknown: int
    visualization: Path | None


def check(path: Path, timeout_s: float = 300.0) -> Verdict:
    """Run the Porcupine checker on a saved history.

    Raises:
        CheckerError: The checker could not read the history.
        GoToolchainMissing, GoBuildFailed: The checker could not be built.
    """
    binary = gobuild.checker()
    proc = subprocess.run(
        [str(binary), "-timeout", f"{int(timeout_s)}s", str(path)], capture_output=True,
        text=True, timeout=timeout_s + 120.0, check=False,
    )  # fmt: skip
    try:
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError) as exc:
        raise CheckerError(f"the checker gave no verdict on {path}: {proc.stderr.strip()}") from exc
    if answer["result"] == "error":
        raise CheckerError(f"the checker could not read {path}: {answer['error']}")
    page = answer.get("visualization")
    return Verdict(answer["result"], answer["operations"], answer["unknown"],
                   Path(page) if page else None)  # fmt: skip
