"""A record's last fields read from its end, compiled from its schema: the chain fields of an event.

What lies between an event's intent and its chain fields (the intent's other
fields, the requirements, the mutations) is long and varied; the chain fields
are not: `bytes` of a known size (a digest), then, from v2 on, an optional
string (`trace_id`). So the audit reads them from the record's end.
`compile_trailer` turns the record's schema and the sizes of those `bytes`
fields into small straight-line functions that say where each field starts.
Read from the end an optional string is ambiguous (a digest's byte may look
like its marker), so `readings` gives every length it may take, and `likely`
the reading a writer most often leaves (none, or a string of `likely` characters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from events.compiled.partial import Source, branch_name, encode_long

LONGEST_READ = 4096
"""The longest optional string `readings` tries (a longer one is not read from the end)."""


@dataclass(frozen=True, slots=True)
class Trailer:
    """Where a record's trailing fields are, read from its end (`compile_trailer`).

    Attributes:
        names: The fixed-size fields, in order.
        markers: Each one's length as the record holds it (before its content).
        widths: The bytes each one takes (its length's and its content's).
        width: The bytes all of them take.
        optional: Whether an optional string ends the record.
        starts: `(record, tail, after)` → where each fixed field starts when the optional
            string takes `tail` bytes; None when a length is not where it should be or the
            first field would start before `after`.
        likely: `record` → the bytes the optional string takes in the likeliest reading
            (null, or a string of the likely length), -1 when neither fits; 0 without one.
        guess: `likely` without the check: the null reading if the record ends like it,
            else the likely length's.
        likely_read: `(record, after)` → the likeliest reading in one call: `likely`, then
            each fixed field's content, then where each starts (`starts`); None when it
            does not fit.
        likely_source: `likely_read`'s body, for `partial.compile_prefix(then=…)` to run
            after the items it reads (with `after` where they end), in the same function.
            Its values are names its lines bind, in `likely_read`'s order, so statements
            after it can use them (`source_names`).
        null: The optional string's null branch as written (empty: no optional string).
        prefixes: Its string branch and each length below `LONGEST_READ`, as written.
    """

    names: tuple[str, ...]
    markers: tuple[bytes, ...]
    widths: tuple[int, ...]
    width: int
    optional: bool
    starts: Callable[[bytes, int, int], tuple[int, ...] | None]
    likely: Callable[[bytes], int]
    guess: Callable[[bytes], int]
    likely_read: Callable[[bytes, int], tuple[Any, ...] | None]
    likely_source: Source
    null: bytes
    prefixes: tuple[bytes, ...]

    def readings(self, data: bytes) -> Iterator[int]:
        """Every length the optional string may take at the end of `data` (null first)."""
        if not self.optional:
            yield 0
            return
        size = len(data)
        if data.endswith(self.null):
            yield len(self.null)
        for length, prefix in enumerate(self.prefixes[: min(size, LONGEST_READ)]):
            tail = len(prefix) + length
            if tail < size and data[size - tail : size - length] == prefix:
                yield tail

    def content(self, data: bytes, field: int, start: int) -> bytes:
        """The content of fixed field number `field`, which starts at `start`."""
        return data[start + len(self.markers[field]) : start + self.widths[field]]


def compile_trailer(
    record: dict[str, Any], first: str, sizes: Mapping[str, int], likely: int = 0
) -> Trailer:
    """The trailer of a fastavro-parsed record schema from field `first` to its end.

    Args:
        record: The record schema.
        first: The first trailing field.
        sizes: The content size of each trailing `bytes` field (every one but an optional
            string ending the record).
        likely: The length an optional string ending the record most often has.

    Raises:
        ValueError: A trailing field is neither such a `bytes` nor the last field, an
            optional string.
    """
    fields = record["fields"]
    names = [f["name"] for f in fields]
    if first not in names:
        raise ValueError(f"record {record['name']} has no field {first!r}")
    trailing = fields[names.index(first) :]
    null, string = b"", b""
    last = trailing[-1]["type"]
    if isinstance(last, list) and sorted(map(branch_name, last)) == ["null", "string"]:
        branches = list(map(branch_name, last))
        null, string = encode_long(branches.index("null")), encode_long(branches.index("string"))
        trailing = trailing[:-1]
    fixed: list[tuple[str, bytes, int]] = []
    for field in trailing:
        if field["type"] != "bytes" or field["name"] not in sizes:
            raise ValueError(
                f"field {field['name']!r} of {record['name']} cannot be read from the end: "
                "only `bytes` of a known size and a last optional string can"
            )
        fixed.append((field["name"], encode_long(sizes[field["name"]]), sizes[field["name"]]))
    markers = tuple(m for _, m, _ in fixed)
    widths = tuple(len(m) + n for _, m, n in fixed)
    prefix = string + encode_long(likely)
    scope: dict[str, Any] = {"_markers": markers, "_null": null, "_prefix": prefix}
    read = _likely_read_source(markers, widths, null, prefix, likely, scope)
    source = [*_starts_source(markers, widths), *_likely_source(null, prefix, likely),
              "def likely_read(d, after):", "    size = len(d)", *read.lines,
              f"    return ({read.values})"]  # fmt: skip
    exec(compile("\n".join(source), f"<compiled trailer {record['name']}>", "exec"), scope)
    prefixes = tuple(string + encode_long(n) for n in range(LONGEST_READ)) if string else ()
    return Trailer(
        tuple(n for n, _, _ in fixed), markers, widths, sum(widths), bool(string),
        scope["starts"], scope["likely"], scope["guess"], scope["likely_read"], read, null,
        prefixes,
    )  # fmt: skip


def _marker_test(var: str, marker: bytes, index: int) -> str:
    """A test that `marker` is not at `var` (one byte: an index, not a slice)."""
    if len(marker) == 1:
        return f"d[{var}] != {marker[0]}"
    return f"d[{var}:{var} + {len(marker)}] != _markers[{index}]"


def _starts_source(markers: tuple[bytes, ...], widths: tuple[int, ...]) -> list[str]:
    names = "".join(f"a{i}, " for i in range(len(markers)))
    return ["def starts(d, tail, after):", *_starts_body(markers, widths, "len(d)"),
            f"    return ({names})"]  # fmt: skip


def _starts_body(markers: tuple[bytes, ...], widths: tuple[int, ...], end: str) -> list[str]:
    """Set `a0`, `a1`, … to where each fixed field starts before `tail` bytes; return None
    when a length is not where it should be or `a0` is before `after`."""
    lines = [f"    at = {end} - tail"]
    names = [f"a{i}" for i in range(len(markers))]
    for i in reversed(range(len(markers))):
        lines.append(f"    {names[i]} = at = at - {widths[i]}")
    tests = " or ".join(_marker_test(names[i], m, i) for i, m in reversed(list(enumerate(markers))))
    first = names[0] if names else "at"
    lines.append(f"    if {first} < after{' or ' + tests if tests else ''}: return None")
    return lines


def _likely_read_source(
    markers: tuple[bytes, ...], widths: tuple[int, ...], null: bytes, prefix: bytes, likely: int,
    scope: dict[str, Any],
) -> Source:  # fmt: skip
    """`likely`, `starts` and the contents in one body (the audit's hot path)."""
    lines = ["    end = size"]
    if null:
        tail = len(prefix) + likely
        ends_null = f"d[end - 1] == {null[0]}" if len(null) == 1 else "d.endswith(_null)"
        lines += [f"    if {ends_null}: tail = {len(null)}",
                  f"    elif end > {tail} and d[end - {tail} : end - {likely}] == _prefix: "
                  f"tail = {tail}",
                  "    else: return None"]  # fmt: skip
    else:
        lines.append("    tail = 0")
    names = [f"a{i}" for i in range(len(markers))]
    fields = enumerate(zip(names, markers, widths, strict=True))
    contents = [f"    r{i} = d[{n} + {len(m)} : {n} + {w}]" for i, (n, m, w) in fields]
    values = ["tail", *(f"r{i}" for i in range(len(markers))), *names]
    return Source((*lines, *_starts_body(markers, widths, "end"), *contents),
                  "".join(f"{v}, " for v in values), dict(scope))  # fmt: skip


def source_names(source: Source) -> list[str]:
    """The names a `Trailer.likely_source`'s lines bind to its values, in order."""
    return [name for name in source.values.split(", ") if name]


def _likely_source(null: bytes, prefix: bytes, likely: int) -> list[str]:
    if not null:
        return ["def likely(d):", "    return 0", "def guess(d):", "    return 0"]
    tail = len(prefix) + likely
    return [
        "def likely(d):",
        "    if d.endswith(_null): return len(_null)",
        "    end = len(d)",
        f"    if end > {tail} and d[end - {tail} : end - {likely}] == _prefix: return {tail}",
        "    return -1",
        "def guess(d):",
        f"    return len(_null) if d.endswith(_null) else {tail}",
    ]
