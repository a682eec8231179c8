"""Where a query's relations come from: a follower's image, or another copy of the state.

`Engine` reads a catalog through a `Source`: the Arrow relations
(`producers.sql.relations.RELATIONS`) and the two lookups that `SHOW CREATE
TABLE` and `SHOW ATTRIBUTES` need. `ImageSource` is a published view; the Spark
projection's Delta tables are another (`producers.sql.delta_source.DeltaSource`).
"""

from __future__ import annotations

from typing import Protocol

import pyarrow as pa

from events.values import LabelRuleValue, TableInfoValue
from producers.sql.relations import relation
from projector.fold.image import Image


class Source(Protocol):
    """One catalog's current state, as relations and lookups."""

    @property
    def catalog(self) -> str:
        """The catalog's name."""
        ...

    def relation(self, name: str) -> pa.Table:
        """The relation `name`, with the columns `relations.relation` gives it."""
        ...

    def table_by_name(self, schema_name: str, table_name: str) -> TableInfoValue | None:
        """The live table of that name, if any."""
        ...

    def rule(self, rule_id: str) -> LabelRuleValue | None:
        """The label rule of that id (`events.labels.rule_id`), if any."""
        ...


class ImageSource:
    """The published view of a follower's (or a replay's) image.

    Args:
        image: The catalog's image.
    """

    def __init__(self, image: Image) -> None:
        self.image = image
        self.catalog = image.catalog

    def relation(self, name: str) -> pa.Table:
        """The relation `name`, built from the published view."""
        return relation(self.image.published, name)

    def table_by_name(self, schema_name: str, table_name: str) -> TableInfoValue | None:
        """The live table of that name in the published view."""
        return self.image.published.table_by_name(schema_name, table_name)

    def rule(self, rule_id: str) -> LabelRuleValue | None:
        """The label rule of that id in the published view."""
        return self.image.published.rules.get(rule_id)
