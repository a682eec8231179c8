"""The optimistic-concurrency hint and the unknown-name errors that name what exists."""

from __future__ import annotations

import pytest

from events import commands as c
from producers.errors import PartitionNotFound, TableNotFound
from producers.sql.errors import SqlError
from producers.sql.names import SHOWN, unknown_name
from producers.sql.translate import Settings, Write, translate
from projector.fold.view import View
from tests.domain.builders import command, create, local

FLAGS = Settings(catalog="greptime", expected_version=7, expected_resource_version=70)


def conditions(text: str, settings: Settings = FLAGS) -> list[tuple[int | None, int | None]]:
    """(expected_version, expected_resource_version) of each command of the script."""
    return [(k.expected_version, k.expected_resource_version)
            for s in translate(text, settings) if isinstance(s, Write)
            for k in s.commands]  # fmt: skip


def test_the_hint_after_the_verb_conditions_its_statement_instead_of_the_flags() -> None:
    assert conditions("ALTER /*+ EXPECTED_VERSION(3) */ TABLE t ADD COLUMN c INT; DROP TABLE u") \
        == [(3, None), (None, None)]  # fmt: skip
    # Without a hint, the flags condition the script's first write.
    assert conditions("ALTER TABLE t ADD COLUMN c INT; DROP TABLE u") == [(7, 70), (None, None)]


@pytest.mark.parametrize("text", [
    "DROP TABLE a; /*+ EXPECTED_VERSION(2) EXPECTED_RESOURCE_VERSION(9) */ DROP TABLE b",
    "DROP TABLE a; DROP /*+ EXPECTED_VERSION(2), EXPECTED_RESOURCE_VERSION(9) */ TABLE b",
    "DROP TABLE a; ALTER TABLE b /*+ expected_version(2) expected_resource_version(9) */ "
    "ATTRIBUTES='k=v'",
])  # fmt: skip
def test_a_hint_anywhere_in_its_statement_counts(text: str) -> None:
    assert conditions(text, Settings(catalog="greptime")) == [(None, None), (2, 9)]


def test_a_prose_comment_is_no_hint_and_a_bad_hint_is_refused() -> None:
    assert conditions("/* the nightly job */ DROP TABLE a", Settings("greptime")) == [(None, None)]
    with pytest.raises(SqlError, match=r"line 2: the hint EXPECTED_VERSION\('x'\) takes one"):
        translate("DROP TABLE a;\nDROP /*+ EXPECTED_VERSION('x') */ TABLE b", FLAGS)
    with pytest.raises(SqlError, match="given twice"):
        translate("DROP /*+ EXPECTED_VERSION(1) EXPECTED_VERSION(2) */ TABLE b", FLAGS)


def catalog_view() -> View:
    catalog = local()
    for name in ("orders", "order_items", "users"):
        catalog.submit(create(name, partitions=("p0", "p1") if name == "orders" else ()))
    catalog.submit(create("events", schema_name="audit"))
    return catalog.image.published


def test_an_unknown_table_names_the_close_ones_first() -> None:
    error = unknown_name(catalog_view(), command(c.DropTable, table_name="ordrs"))
    assert isinstance(error, TableNotFound)
    assert str(error) == ("table `public.ordrs` does not exist; the tables of `public` are "
                          "`orders`, `order_items`, `users`")  # fmt: skip


def test_an_unknown_database_names_the_databases() -> None:
    error = unknown_name(catalog_view(), command(c.TruncateTable, schema_name="audt",
                                                 table_name="events"))  # fmt: skip
    assert isinstance(error, TableNotFound)
    assert str(error) == ("database `audt` does not exist (no table is in it); the databases "
                          "are `audit`, `public`")  # fmt: skip


def test_an_unknown_partition_names_the_partitions() -> None:
    view = catalog_view()
    error = unknown_name(view, command(c.DropPartition, table_name="orders", partition_name="p9"))
    assert isinstance(error, PartitionNotFound)
    assert str(error) == ("table `public.orders` has no partition `p9`; its partitions are "
                          "`p0`, `p1`")
    error = unknown_name(view, command(c.SetAttributes, table_name="users", partition_name="p0",
                                       attributes="k=v"))  # fmt: skip
    assert str(error) == "table `public.users` has no partition `p0`; it is not partitioned"
    error = unknown_name(view, command(c.ExchangePartition, table_name="orders",
                                       partition_name="p0", other_schema_name="public",
                                       other_table_name="user"))  # fmt: skip
    assert isinstance(error, TableNotFound) and "`users`" in str(error)


def test_known_names_and_new_tables_pass_and_long_lists_are_cut() -> None:
    view = catalog_view()
    assert unknown_name(view, command(c.AddPartition, table_name="orders",
                                      partition_name="p9")) is None  # fmt: skip
    assert unknown_name(view, create("brand_new")) is None
    catalog = local()
    for i in range(SHOWN + 5):
        catalog.submit(create(f"t{i:02d}"))
    error = unknown_name(catalog.image.published, command(c.DropTable, table_name="x"))
    assert str(error).endswith("and 5 more (SHOW TABLES / SHOW DATABASES list them)")
