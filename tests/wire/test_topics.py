"""Partitioning agrees with the Java client: Kafka's own murmur2 test vectors."""

import pytest

from events.topics import Topics, murmur2, partition_for

# org.apache.kafka.common.utils.UtilsTest#testMurmur2 (signed int32 in Java).
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "expected"), KAFKA_VECTORS.items())
def test_murmur2_matches_kafkas_test_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected & 0xFFFFFFFF


def test_partition_for_masks_the_sign_bit_like_the_java_partitioner() -> None:
    # foobar hashes negative in Java: toPositive(-790332482) % 7
    assert partition_for("foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7


def test_topics_share_one_prefix() -> None:
    assert Topics("x").all() == ("x.commands", "x.events", "x.replies", "x.dlq")
