"""The jar cache: two separate classpaths, and no second copy of anything pyspark ships."""

import re

from streaming.spark import jars


def test_broker_classpath_holds_kafka_and_a_log4j_backend() -> None:
    names = {p.name for p in (jars.resolve() / "broker").glob("*.jar")}
    assert "kafka_2.13-4.2.1.jar" in names
    assert any(n.startswith("log4j-slf4j-impl-") for n in names)
    assert jars.broker_classpath().endswith("/broker/*")


def test_spark_jars_add_only_what_pyspark_lacks() -> None:
    names = [p.name for p in jars.spark_jars()]
    assert "spark-sql-kafka-0-10_2.13-4.2.0.jar" in names
    assert "delta-spark_4.2_2.13-4.4.0.jar" in names
    shipped = [p.name for p in jars.pyspark_jars_dir().glob("*.jar")]
    for name in names:
        artifact = re.sub(r"-\d[^-]*(-\d+)?\.jar$", "", name)
        clashes = [s for s in shipped if re.match(re.escape(artifact) + r"-\d", s)]
        assert not clashes, f"{name} duplicates pyspark's {clashes}"
