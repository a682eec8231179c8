"""One catalog driven through the pure core, `decide` then `apply`, step by step.

The property tests of issue 15 drive a `Run` and check their property after
every step. Each test checks one property: an exception out of `decide` is
returned as the outcome (a leader would reply `InternalError` and write
nothing), so that only the test about it fails on it.
"""

from collections import Counter
from collections.abc import Iterable, Iterator

import hypothesis
from hypothesis import Phase, currently_in_test_context, note, settings

from events.commands import AdvanceStableEpoch, Command, Publish, SetPublishMode, TableCommand
from events.event import Event
from events.intents import EpochAssigned, StableEpochAdvanced
from events.keys import TABLE_NAME
from events.values import TableNameValue
from producers.decide.core import Rejection, decide, elect
from projector.fold.apply import apply
from projector.fold.image import Image
from projector.fold.view import View
from tests.domain.builders import CATALOG, stamps
from tests.domain.step_commands import build
from tests.domain.steps import PRESET, Step, make

Outcome = Event | Rejection | Exception
"""What one command came to: its event, its rejection, or what `decide` raised."""

settings.register_profile(
    "issue-15-properties",
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    # No explain phase: it reruns every failing example many times over, for little here.
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
)
PROPERTIES = settings.get_profile("issue-15-properties")
"""Bounded and derandomized: the same examples every run, each test a few seconds."""


class Run:
    """A catalog's image and log, from a `LeaderElected`, the preset tables and `mode`.

    Attributes:
        image: The image after every event so far.
        log: Every event so far, in order.
        stats: Counts over the steps (`accepted`, `rejected`, `raised`, `accepted:{kind}`,
            `published`, `released`), for the tests that prove they are not vacuous.
    """

    def __init__(self, mode: str) -> None:
        self._stamps = stamps()
        self.image = Image.empty(CATALOG)
        self.log: list[Event] = []
        self.stats: Counter[str] = Counter()
        self._names: dict[str, int] = {}
        self._write(elect(self.image, "leader-1", self._stamps()))
        if mode == "explicit":
            self.submit(make(SetPublishMode, mode="explicit"))

    def play(self, steps: Iterable[Step]) -> Iterator[tuple[Step, Command, Outcome]]:
        """Build, decide and apply each step (the preset tables first), yielding each outcome."""
        for step in (*PRESET, *steps):
            command = build(self.image, step)
            outcome = self.submit(command)
            self.stats["accepted" if isinstance(outcome, Event) else "rejected"] += 1
            if isinstance(outcome, Event):
                self.stats[f"accepted:{step.kind}"] += 1
            if step.kind != "reload":  # the padding of shrunk examples: keep the story short
                _note(f"{step!r}: {summary(command)} -> {describe(outcome)}")
            yield step, command, outcome
        if currently_in_test_context():  # for --hypothesis-show-statistics
            stats = self.stats
            half = stats["rejected"] <= stats["accepted"]
            hypothesis.event("accepted at least half of the commands", payload=str(half))
            hypothesis.event("released a published change", payload=str(stats["released"] > 0))
            roles = stats["accepted:truncate"] + stats["accepted:exchange"]
            hypothesis.event("an id changed role (truncate, exchange)", payload=str(roles > 0))

    def submit(self, command: Command) -> Outcome:
        """Decide one command and apply its event; an exception out of `decide` is returned."""
        try:
            outcome = decide(self.image, command, self._stamps())
        except Exception as error:  # the property tests report it; a leader must not die of it
            self.stats["raised"] += 1
            return error
        if isinstance(outcome, Event):
            self._write(outcome)
        return outcome

    def _write(self, event: Event) -> None:
        before = self.image
        self.image = apply(before, event)
        self.log.append(event)
        if isinstance(event.intent, EpochAssigned):
            self.stats["published"] += len(event.intent.resource_versions)
        if isinstance(event.intent, StableEpochAdvanced):
            self.stats["released"] += len(before.pending) - len(self.image.pending)
        for m in event.mutations:
            if m.key.startswith(TABLE_NAME + "/") and isinstance(m.value, TableNameValue):
                # A name another table held before: the key-sharing case of publication order.
                owner = self._names.setdefault(m.key, m.value.table_id)
                self.stats["name reused"] += owner != m.value.table_id
                self._names[m.key] = m.value.table_id

    def publish_everything(self) -> Iterator[tuple[Step, Command, Outcome]]:
        """Publish every pending change at one epoch above all, then release it.

        Tables are offered in the order of their oldest unpublished change, round after
        round while one is accepted, since a publish may wait for another table's.
        """
        image = self.image
        if image.publish_mode != "explicit" or not image.pending:
            return
        highest = max(c.schema_epoch for c in image.pending.values())
        final = max(highest, image.stable_epoch) + 1
        progress = True
        while progress:
            progress = False
            for table_id in self._unpublished_by_age():
                publish = make(Publish, table_id=table_id, epoch=final)
                outcome = self.submit(publish)
                progress = progress or isinstance(outcome, Event)
                _note(f"final publish({table_id}, {final}) -> {describe(outcome)}")
                yield Step("final_publish"), publish, outcome
        advance = make(AdvanceStableEpoch, epoch=final)
        outcome = self.submit(advance)
        _note(f"final advance({final}) -> {describe(outcome)}")
        yield Step("final_advance"), advance, outcome

    def _unpublished_by_age(self) -> list[int]:
        oldest: dict[int, int] = {}
        for rv in sorted(self.image.pending):
            change = self.image.pending[rv]
            if change.schema_epoch == 0:
                for table_id in change.table_ids:
                    oldest.setdefault(table_id, rv)
        return sorted(oldest, key=oldest.__getitem__)


def _note(text: str) -> None:
    """A line of the falsifying example's story (printed only for the shrunk failure)."""
    if currently_in_test_context():
        note(text)


def summary(command: Command) -> str:
    """A command in one short line: its type and the fields a step resolved."""
    parts = [type(command).__name__]
    if isinstance(command, TableCommand):
        parts.append(f"{command.schema_name}.{command.table_name}"[:40])
    for name in _SHOWN:
        value = getattr(command, name, None)
        if value is not None:
            parts.append(f"{name}={value if not isinstance(value, str) else value[:20]!r}")
    return " ".join(parts)


_SHOWN = ("partition_name", "new_table_name", "other_table_name", "table_id", "epoch", "mode")


def describe(outcome: Outcome) -> str:
    """An outcome in one line, for hypothesis notes."""
    if isinstance(outcome, Event):
        intent = outcome.intent
        if isinstance(intent, EpochAssigned):
            return (
                f"rv {outcome.resource_version} EpochAssigned epoch {intent.epoch} to the changes "
                f"at rv {list(intent.resource_versions)}"
            )
        tables = [(t.table_id, t.version) for t in outcome.tables]
        return (
            f"rv {outcome.resource_version} {type(intent).__name__} tables={tables} "
            f"schema_epoch={outcome.schema_epoch}"
        )
    if isinstance(outcome, Rejection):
        return f"rejected {outcome.error.code}: {outcome.error.message[:90]}"
    return f"RAISED {type(outcome).__name__}: {str(outcome)[:200]}"


def difference(view: View, expected: View, limit: int = 4) -> str:
    """The keys on which two views differ, with both values (the first `limit`)."""
    mine, theirs = dict(view.items()), dict(expected.items())
    keys = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    shown = [f"{k}: {mine.get(k)!r} != {theirs.get(k)!r}" for k in keys[:limit]]
    return f"{len(keys)} key(s) differ: " + "; ".join(shown)
