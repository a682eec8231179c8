"""The verifier: feed it a log's records in partition order; it names the first bad one.

Per catalog it checks, in this order, each record's bytes against its own hash
(`projector.audit.raw`), the resource_version sequence, the chain
(`prev_hash`), the leader_epoch (only the elected one writes; elections only
go up), the per-table version sequence, and every checkpoint: its signature
(with a public key), that it signs the chain where it stands, and, with a key,
that every leader_epoch holds one (its leader signs right after its election).
With `fold` on, every event then goes through the Python fold, which re-checks
its requirements and the publication order. Every kept checkpoint note must still be in
the log, and a bundle's records must be all its manifest says (`projector.audit.complete`).

Kinds of fault are told apart by what the log shows (docs/audit.md): a jump
in resource_versions is `deleted`, or `reordered` when the missing one turns
up within `LOOKAHEAD` records; a chain recomputed over rewritten history is
caught by the next checkpoint, which the rewrite moved: moved up = `inserted`
(`projector.audit.inserted` finds the record), moved down = `deleted`, not
moved = `modified`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from events.checkpoint import Checkpoint
from events.errors import DecodeError
from projector.audit.complete import UNKNOWN, Expected, Reached, shortfall
from projector.audit.fast import checked
from projector.audit.faults import CatalogSummary, Fault, FaultKind, Report
from projector.audit.inserted import SEARCH_LIMIT, Seen, rewritten
from projector.audit.manifest import Contents, Extent
from projector.audit.raw import NotAnEvent, RawEvent, parse
from projector.audit.state import CatalogState
from projector.errors import ApplyError, SequenceGap, StaleLeader
from projector.fold.apply import Folding
from projector.fold.image import Image
from projector.replay.source import packed_decoder

LOOKAHEAD = 10_000
"""Records read past a jump in resource_versions to tell `reordered` from `deleted`."""

_CONTROL = frozenset({"LeaderElected", "CheckpointSigned"})
"""The intents the checks read further than the envelope (`feed` reads them with `parse`)."""
NAME_TAKING_INTENTS = frozenset(
    {"TableCreated", "TableRecovered", "TableRenamed", "TableTruncated", "PartitionExchanged"}
)
"""The intents that may give a table id a name: its version may jump to the name's next
(docs/design.md, "version"); the fold checks the number."""


class Verifier:
    """Checks one log, record by record (`feed`), then `finish`.

    Args:
        public_key: Checks every checkpoint's signature, and requires every
            leader_epoch to be signed at its election; None checks no signature.
        kept: Checkpoint notes kept (an outsider's, a bundle's own), by where each came
            from: the log must still contain each.
        catalog: Verify this catalog only (the others' records are skipped).
        fold: Re-check every event through the fold (requirements, publication order).
        contents: What a bundle's manifest says its records hold: they must hold it all.
        ends: Each partition's end offset, read at `finish` (a reader may fill it as the
            records stream): places a catalog with no record by its name.
    """

    def __init__(
        self,
        public_key: Ed25519PublicKey | None = None,
        kept: Mapping[str, Checkpoint] | None = None,
        catalog: str | None = None,
        fold: bool = True,
        contents: Contents | None = None,
        ends: Mapping[int, int] | None = None,
    ) -> None:
        self._key = public_key
        self._expected = Expected(contents, kept, ends, catalog)
        self._only = catalog
        self._fold = fold
        self._catalogs: dict[str, CatalogState] = {}
        self._by_name: dict[bytes, CatalogState] = {}  # the same, by the name's bytes (fast path)
        self._others: set[bytes] = set()  # catalogs not verified (`catalog`), by name's bytes
        self.report = Report(signatures_checked=public_key is not None, fold_checked=fold)
        self._gap: tuple[str, int, Fault, Seen] | None = None
        self._lookahead = 0
        self._read: dict[int, list[int]] = {}  # per partition: records, first, last offset
        for source, note in (kept or {}).items():
            if public_key is not None and not note.verifies(public_key):
                self.report.fault = Fault(  # a note, not a record: no partition nor offset
                    "forged", note.catalog, -1, -1, note.resource_version,
                    f"the kept checkpoint note {source} is not signed by this public key",
                )  # fmt: skip
                break

    @property
    def done(self) -> bool:
        """Whether the outcome is known: reading further changes nothing."""
        return self.report.fault is not None

    def feed(self, partition: int, offset: int, data: bytes, hashed: bool = False) -> None:
        """Check the next record of `partition` (records of a partition in offset order).

        Args:
            partition: Its partition.
            offset: Its offset.
            data: Its bytes.
            hashed: The reader found `fast.matches(data)` true (its hash is not recomputed).
        """
        if self.report.fault is not None:
            return
        self._count(partition, offset, offset, 1)
        if not self._fold and self._gap is None and self._quick(
            partition, (offset,), (data,), b"\x01" if hashed else b"\x00", 0
        ) == 1:  # fmt: skip
            return  # with the fold on, a record at a time takes every check step by step
        self._one(partition, offset, data)

    def feed_batch(self, partition: int, offsets: Sequence[int], values: Sequence[bytes],
                   hashed: bytes) -> None:  # fmt: skip
        """`feed` for consecutive records of `partition`, in one call (a reader's batch).

        Args:
            partition: Their partition.
            offsets: Their offsets.
            values: Their bytes.
            hashed: Per record, 1: the reader found `fast.matches` true; else 0.
        """
        index, count = 0, len(values)
        if count:
            self._count(partition, offsets[0], offsets[-1], count)
        while index < count and self.report.fault is None:
            if self._gap is None:
                index = self._quick(partition, offsets, values, hashed, index)
                if index == count or self.report.fault is not None:
                    return
            self._one(partition, offsets[index], values[index])
            index += 1

    def _count(self, partition: int, first: int, last: int, records: int) -> None:
        read = self._read.get(partition)
        if read is None:
            self._read[partition] = [records, first, last]
        else:
            read[0] += records
            read[2] = last

    def _one(self, partition: int, offset: int, data: bytes) -> None:
        """Check a record step by step (`feed`'s exact path, which names a fault)."""
        self.report.records += 1
        try:
            raw = parse(data)
        except NotAnEvent as exc:
            if self._gap is None:
                self.report.fault = Fault("modified", UNKNOWN, partition, offset, -1,
                                          f"not an event: {exc}")  # fmt: skip
            return
        if self._only is not None and raw.catalog != self._only:
            self._others.add(raw.catalog.encode())
            return
        if self._gap is not None:
            self._look_for_missing(raw)
            return
        seen = Seen(partition, offset, data, raw)
        state = self._catalogs.get(raw.catalog) or self._start(seen)
        if state is None:
            return
        self._check(state, seen)
        state.partition, state.next_offset = partition, offset + 1

    def _start(self, seen: Seen) -> CatalogState | None:
        """The state of a catalog at its first record; None (a fault) when the bundle's
        manifest lists every catalog and not this one."""
        catalog, contents = seen.raw.catalog, self._expected.contents
        extent = None if contents is None else contents.catalogs.get(catalog)
        if contents is not None and contents.detailed and extent is None:
            self._at(seen, "inserted", f"the bundle's manifest names no catalog `{catalog}`")
            return None
        state = self._catalogs[catalog] = CatalogState(
            CatalogSummary(catalog), Folding(Image.empty(catalog))
        )
        for note in (self._expected.kept or {}).values():
            if note.catalog == catalog:
                state.kept.setdefault(note.resource_version, []).append(note)
        state.end = None if extent is None else extent.resource_version
        state.stops = frozenset(
            [*state.kept, *(() if state.end is None else (state.end + 1,))]
        )
        self.report.catalogs[catalog] = state.summary
        self._by_name[catalog.encode()] = state
        return state

    def _quick(self, partition: int, offsets: Sequence[int], values: Sequence[bytes],
               hashed: bytes, index: int) -> int:  # fmt: skip
        """The common case, checked from `fast.checked`: take records from `index` on while
        each is an event (no election, no checkpoint) that passes every check; the index of
        the first not taken. `feed` reads that one again with `parse` and runs the checks one
        by one, which name the fault if there is one. One loop over a batch: a call per
        record would cost a fifth of the pass. With `fold` on, a record that passes goes
        through the fold too; if the fold fails, that names the fault (the batch's end is
        returned)."""
        report, by_name, others = self.report, self._by_name, self._others
        fold = self._fold
        for index in range(index, len(values)):  # noqa: B020  # returns the index it stops at
            data = values[index]
            read = checked(data, hashed[index] == 1)
            if read is None:
                return index
            catalog, rv, epoch, tables, intent, prev, recorded = read
            state = by_name.get(catalog)
            if state is None:  # a catalog not verified is skipped; a new one starts in `feed`
                if catalog in others and intent not in _CONTROL:
                    report.records += 1
                    continue
                return index
            summary, versions = state.summary, state.versions
            if (
                rv != summary.resource_version + 1 or epoch != summary.leader_epoch
                or prev != state.last_hash or intent in _CONTROL or rv in state.stops
            ):  # fmt: skip
                return index
            for table_id, version in tables:
                if version != versions.get(table_id, 0) + 1:
                    return index
            if len(tables) > 1 and len({t for t, _ in tables}) < len(tables):
                return index  # a table named twice: the checks one by one say which is wrong
            if fold and not self._folds(state, partition, offsets[index], data):
                report.records += 1
                return len(values)
            for table_id, version in tables:
                versions[table_id] = version
            report.records += 1
            summary.events += 1
            summary.resource_version = rv
            state.last_hash = recorded
            if len(state.window) <= SEARCH_LIMIT:
                state.window.append((partition, offsets[index], data))
            state.partition, state.next_offset = partition, offsets[index] + 1
        return len(values)

    def finish(self) -> Report:
        """The outcome once every record was fed."""
        if self._gap is not None and self.report.fault is None:
            self.report.fault = self._gap[2]
        for state in self._catalogs.values():
            state.summary.chain_hash = state.last_hash.hex()
        if self.report.fault is None:
            for state in self._catalogs.values():
                if state.unsigned_election is not None:
                    self._unsigned(state.unsigned_election)
                    break
        if self.report.fault is None:
            reached = {name: Reached(s.partition, s.next_offset, s.summary.resource_version,
                                     frozenset(s.kept_found))
                       for name, s in self._catalogs.items()}  # fmt: skip
            read = {p: Extent(p, *r) for p, r in self._read.items()}
            self.report.fault = shortfall(self._expected, reached, read, self.report.records)
        return self.report

    def latest_checkpoint(self, catalog: str) -> Checkpoint | None:
        """The newest checkpoint of `catalog` that passed its checks, if any."""
        state = self._catalogs.get(catalog)
        return None if state is None else state.latest

    # -- the checks -------------------------------------------------------------

    def _check(self, state: CatalogState, seen: Seen) -> None:
        raw, summary = seen.raw, state.summary
        expected = summary.resource_version + 1
        at = raw.resource_version
        if raw.computed != raw.hash:
            return self._at(seen, "modified", "its bytes are not what its hash was computed over")
        if at > expected:
            fault = seen.fault("deleted", f"resource_version {expected}..{at - 1} is "
                              f"missing before it", expected)  # fmt: skip
            self._gap, self._lookahead = (raw.catalog, expected, fault, seen), 0
            return None
        if at < expected:
            return self._at(seen, "inserted", f"resource_version {at} again, after {expected - 1}")
        if state.end is not None and at > state.end:
            return self._at(seen, "inserted", f"the bundle's manifest says catalog "
                            f"`{raw.catalog}` ends at resource_version {state.end}")  # fmt: skip
        if raw.prev_hash != state.last_hash:
            return self._at(seen, "modified", "its prev_hash is not the previous event's hash")
        if not self._leader_ok(state, seen):
            return None
        for table_id, version in raw.tables:
            current = state.versions.get(table_id, 0)
            if version != current + 1 and not (
                version > current and raw.intent in NAME_TAKING_INTENTS
            ):
                # A jump means a change of the table is missing; anything else, a change redone.
                kind: FaultKind = "deleted" if version > current + 1 else "modified"
                return self._at(seen, kind, f"table {table_id} goes to version {version} but is "
                                f"at {current}")  # fmt: skip
            state.versions[table_id] = version
        if raw.intent == "CheckpointSigned" and not self._checkpoint_ok(state, seen):
            return None
        if self._fold and not self._folds(state, *seen):
            return None
        summary.events += 1
        summary.resource_version = at
        state.last_hash = raw.hash
        for kept in state.kept.get(at, ()):
            if raw.hash != kept.chain_hash:
                state.window.append((seen.partition, seen.offset, seen.data))
                self.report.fault = rewritten(state.base, state.window, kept.resource_version,
                                              kept.chain_hash, None)  # fmt: skip
                return None
            state.kept_found.add(at)
        if raw.intent == "CheckpointSigned":
            state.base, state.window = (at, raw.hash), []
        elif len(state.window) <= SEARCH_LIMIT:
            state.window.append((seen.partition, seen.offset, seen.data))
        return None

    def _leader_ok(self, state: CatalogState, seen: Seen) -> bool:
        raw, summary = seen.raw, state.summary
        if raw.intent == "LeaderElected":
            if state.unsigned_election is not None:  # the epoch before ended unsigned
                self._unsigned(state.unsigned_election)
                return False
            if raw.leader_epoch <= summary.leader_epoch:
                self._at(seen, "stale leader", f"elects leader_epoch {raw.leader_epoch}, not above "
                         f"{summary.leader_epoch}")  # fmt: skip
                return False
            summary.leader_epoch = raw.leader_epoch
            if self._key is not None:
                state.unsigned_election = seen
            return True
        if raw.leader_epoch != summary.leader_epoch:
            fenced = raw.leader_epoch < summary.leader_epoch
            self._at(seen, "stale leader", f"written at leader_epoch {raw.leader_epoch} while "
                     f"{summary.leader_epoch} is elected"
                     + (" (a fenced leader)" if fenced else " (never elected)"))  # fmt: skip
            return False
        return True

    def _checkpoint_ok(self, state: CatalogState, seen: Seen) -> bool:
        raw = seen.raw
        checkpoint = raw.checkpoint()
        state.summary.checkpoints += 1
        if self._key is not None and not checkpoint.verifies(self._key):
            self._at(seen, "forged", f"the checkpoint's signature (key id "
                     f"{checkpoint.key_id.hex()}) does not verify with the public key")  # fmt: skip
            return False
        covered = raw.resource_version - 1
        if checkpoint.resource_version != covered or checkpoint.chain_hash != raw.prev_hash:
            self.report.fault = rewritten(state.base, state.window, checkpoint.resource_version,
                                          checkpoint.chain_hash, seen)  # fmt: skip
            return False
        if self._key is not None:
            state.summary.signed_through = covered
        state.latest, state.unsigned_election = checkpoint, None
        return True

    def _folds(self, state: CatalogState, partition: int, offset: int, data: bytes,
               raw: RawEvent | None = None) -> bool:  # fmt: skip
        """Fold the record; False, with its fault named, when it does not fit (the
        record is parsed then, if `raw` is not given)."""
        kind: FaultKind
        try:
            state.folding.apply(packed_decoder()(data))  # folded only: values read packed
            return True
        except DecodeError as exc:
            kind, reason = "modified", f"it does not decode: {exc.reason}"
        except StaleLeader as exc:
            kind, reason = "stale leader", str(exc)
        except SequenceGap as exc:
            kind, reason = "deleted", str(exc)
        except ApplyError as exc:  # a requirement, a version, the publication order
            kind, reason = "modified", f"it does not fit the log before it: {exc}"
        self._at(Seen(partition, offset, data, raw or parse(data)), kind, reason)
        return False

    def _unsigned(self, election: Seen) -> None:
        self._at(election, "unsigned", f"leader_epoch {election.raw.leader_epoch}, elected here, "
                 "holds no checkpoint signed with the public key")  # fmt: skip

    def _look_for_missing(self, raw: RawEvent) -> None:
        assert self._gap is not None
        catalog, missing, fault, first = self._gap
        self._lookahead += 1
        if raw.catalog == catalog and raw.resource_version == missing:
            self._at(first, "reordered", f"it comes before resource_version {missing}")
        elif self._lookahead >= LOOKAHEAD:
            self.report.fault = fault

    # -- faults -----------------------------------------------------------------

    def _at(self, seen: Seen, kind: FaultKind, reason: str) -> None:
        self.report.fault = seen.fault(kind, reason)
