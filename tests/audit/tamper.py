"""What an attacker who can write the events topic does to a log: the tests' tampering tools.

Each takes and returns a catalog's records (single-object encoded events, in
log order). `rechain` re-seals everything after a change, as someone holding
the topic but not the signing key would.
"""

from collections.abc import Sequence
from datetime import timedelta

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from events.chain import seal_record
from events.checkpoint import Signer
from events.codec import decode_event
from events.commands import AlterTable, RenameTable
from events.event import GENESIS_HASH, Event
from events.intents import Reloaded
from producers.leader.local import CheckpointSchedule, LocalCatalog
from tests.domain.builders import CATALOG, command, create, stamps

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))


def signed_log(
    tables: int = 6, every: int = 4, key: Ed25519PrivateKey | None = KEY, elections: int = 1,
    name: str = CATALOG,
) -> list[bytes]:
    """A catalog's records (catalog `name`): elections, creates, alters and renames; a
    checkpoint every `every`."""
    schedule = None if key is None else CheckpointSchedule(Signer(key), every, 3600.0)
    catalog = LocalCatalog(name, stamps(), checkpoints=schedule, leader_id="node-1")
    for round_ in range(elections):
        catalog.elect(f"node-{round_ + 1}")
        for n in range(tables):
            table = f"t{round_}_{n}"
            catalog.submit(create(table, catalog=name))
            catalog.submit(command(AlterTable, table_name=table, set_options={"a": str(n)},
                                   catalog=name))  # fmt: skip
            if n % 3 == 0:
                catalog.submit(command(RenameTable, table_name=table, new_table_name=table + "r",
                                       catalog=name))  # fmt: skip
    return [sealed.record for sealed in catalog.take_new_records()]


def events(records: Sequence[bytes]) -> list[Event]:
    """The records decoded."""
    return [decode_event(record) for record in records]


def rechain(log: Sequence[Event]) -> list[bytes]:
    """Renumber and re-seal `log` from the first event: a chain recomputed without the key."""
    out, prev = [], GENESIS_HASH
    for rv, event in enumerate(log, start=1):
        sealed = seal_record(event.model_copy(update={"resource_version": rv, "prev_hash": prev}))
        out.append(sealed.record)
        prev = sealed.event.hash
    return out


def forged_reload(after: Event) -> Event:
    """A `Reloaded` event as the leader of `after`'s epoch would have written it next."""
    return after.model_copy(
        update={
            "event_id": "forged", "intent": Reloaded(), "command_id": "forged-cmd",
            "tables": (), "requirements": (), "mutations": (), "schema_epoch": 0,
            "occurred_at": after.occurred_at + timedelta(microseconds=1),
        }
    )  # fmt: skip
