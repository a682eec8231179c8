"""Parsing and formatting TiDB's `ATTRIBUTES='k=v[, k1=v1…]'` string."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.labels import format_attributes
from events.values import Label
from producers.decide.rules.labels import parse_attributes
from producers.errors import InvalidAttributes


def L(key: str, value: str) -> Label:
    return Label(key=key, value=value)


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("merge_option=allow", (L("merge_option", "allow"),)),
        ("merge_option=deny, a=b", (L("merge_option", "deny"), L("a", "b"))),
        ("  z = 1 ,\ta=2 ,m= x y ", (L("z", "1"), L("a", "2"), L("m", "x y"))),
        ("Key=Value", (L("Key", "Value"),)),
        ("defaults=on", (L("defaults", "on"),)),
        ("tables=3", (L("tables", "3"),)),
        ("select=from", (L("select", "from"),)),
    ],
    ids=[
        "one",
        "two",
        "whitespace-and-order",
        "case-kept",
        "default-prefix",
        "table-prefix",
        "sql-words",
    ],
)
def test_parses_in_the_order_given(text: str, labels: tuple[Label, ...]) -> None:
    assert parse_attributes(text) == labels


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "attributes are empty"),
        ("   ", "attributes are empty"),
        ("'DEFAULT'", "has no `=`"),
        ("default", "reset keyword inside quotes"),
        (" Default ", "reset keyword inside quotes"),
        ("merge_option", "item 1 `merge_option` has no `=`"),
        ("a=1, b", "item 2 `b` has no `=`"),
        ("a=1,", "item 2 is empty"),
        ("a=1,,b=2", "item 2 is empty"),
        (",a=1", "item 1 is empty"),
        ("=1", "empty key"),
        (" = 1", "empty key"),
        ("a=", "empty value"),
        ("a=  ", "empty value"),
        ("a=b=c", "more than one `=`"),
        ("a=1, a=2", "key `a` is given twice"),
        ("a=1, A=1", "key `A` is given twice (already as `a`)"),
        ('a="b"', 'contains reserved `"`'),
        ("it's=x", "contains reserved `'`"),
        ("default=x", "reset keyword DEFAULT"),
        ("a=DEFAULT", "reset keyword DEFAULT"),
        ("db=test", "key `db` is reserved"),
        ("Table=t1", "key `Table` is reserved"),
        ("partition=p0", "key `partition` is reserved"),
    ],
)
def test_rejects_with_the_problem_and_the_fix(text: str, message: str) -> None:
    with pytest.raises(InvalidAttributes) as caught:
        parse_attributes(text)
    assert message in caught.value.message
    assert ": " in caught.value.message  # "<problem>: <fix>"
    assert caught.value.code == "InvalidAttributes"


def test_reserved_value_words_are_allowed_as_values() -> None:
    assert parse_attributes("owner=table") == (L("owner", "table"),)


def test_format_joins_without_spaces() -> None:
    assert format_attributes((L("merge_option", "allow"), L("a", "b"))) == "merge_option=allow,a=b"
    assert format_attributes(()) == ""


_WORD = st.text(
    alphabet=st.characters(codec="ascii", categories=("L", "N"), include_characters="_-.:/"),
    min_size=1,
    max_size=8,
).filter(lambda w: w.lower() not in {"default", "db", "table", "partition"})


@given(st.dictionaries(_WORD.map(str.lower), _WORD, min_size=1, max_size=5))
def test_format_then_parse_round_trips(pairs: dict[str, str]) -> None:
    labels = tuple(L(k, v) for k, v in pairs.items())
    assert parse_attributes(format_attributes(labels)) == labels
