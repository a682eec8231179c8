"""The compiled reader refuses bytes that do not hold a value (agreement: test_avro_compiled)."""

import pytest

from events.compiled.read import compile_reader

SCHEMA = {
    "type": "record", "name": "R",
    "fields": [{"name": "s", "type": "string"}, {"name": "n", "type": "long"},
               {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
               {"name": "u", "type": ["null", "long"]}],
}  # fmt: skip


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", IndexError),  # nothing at all
        (b"\x06ab", ValueError),  # a 3-byte string with 2 bytes left
        (b"\x01", ValueError),  # a negative length
        (b"\x02\xff\x00\x00\x00", UnicodeDecodeError),  # not UTF-8
        (b"\x00\x02\x04", IndexError),  # enum symbol 2 of 2
        (b"\x00\x02\x00\x04", IndexError),  # union branch 2 of 2
        (b"\x00\x80", IndexError),  # a varint that never ends
    ],
)
def test_bytes_that_hold_no_value_raise(data: bytes, problem: type[Exception]) -> None:
    with pytest.raises(problem):
        compile_reader(SCHEMA)(data, 0)
