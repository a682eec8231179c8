"""The engine builds a relation the first time a query names it, and only then."""

from __future__ import annotations

import json

import pytest

from producers.sql.engine import Engine, QueryError
from producers.sql.relations import RELATIONS, relation, relations
from projector.fold.image import Image
from tests.domain.builders import create, local


def image() -> Image:
    catalog = local()
    for name in ("a", "b"):
        catalog.submit(create(name))
    return catalog.image


def engine() -> Engine:
    return Engine(image())


def test_a_query_builds_the_relations_it_names_and_no_other() -> None:
    lazy = engine()
    assert lazy.tables == {}
    assert lazy.query("SELECT count(*) FROM table_name").rows == ((2,),)
    assert set(lazy.tables) == {"table_name"}
    joined = lazy.query("SELECT n.table_name, count(*) FROM table_name n "
                        "JOIN table_route r USING (table_id) GROUP BY 1 ORDER BY 1")  # fmt: skip
    assert joined.rows == (("a", 1), ("b", 1))
    assert set(lazy.tables) == {"table_name", "table_route"}


def test_each_relation_is_the_one_built_eagerly() -> None:
    lazy, eager = engine(), relations(image().published)
    for name in RELATIONS:
        assert lazy.query(f"SELECT * FROM {name}").rows == tuple(
            tuple(row.values()) for row in eager[name].to_pylist())
    assert set(lazy.tables) == set(RELATIONS)


def test_a_query_that_does_not_parse_is_still_duckdbs_error() -> None:
    with pytest.raises(QueryError, match="the relations are"):
        engine().query("SELEC oops")


def test_table_info_rows_hold_each_tables_fields() -> None:
    catalog = local()
    catalog.submit(create("a", partitions=("p0", "p1"), primary_key=("id",),
                          options={"ttl": "7d"}))  # fmt: skip
    catalog.submit(create("b"))
    view = catalog.image.published
    rows = relation(view, "table_info").to_pylist()
    infos = [view.table_by_name("public", name) for name in ("a", "b")]
    assert sorted(rows, key=lambda r: r["table_name"]) == [{
        "table_id": i.table_id, "schema_name": i.schema_name, "table_name": i.table_name,
        "version": i.version, "columns": [c.model_dump() for c in i.columns],
        "primary_key": list(i.primary_key), "options": json.dumps(i.options, sort_keys=True),
        "partitions": [p.model_dump() for p in i.partitions],
    } for i in infos if i is not None]  # fmt: skip
