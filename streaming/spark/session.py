"""Build the Spark session every metalog job uses: Kafka source, Delta, Avro.

Its confs are in `streaming.spark.settings`; this module starts the JVM with them.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from streaming.errors import SparkStartError
from streaming.spark.jars import local_fs_jar, spark_jars
from streaming.spark.settings import BASE_CONF, FORKLESS_FS, LOCAL_CONF, LOG4J_CONFIG


def log_file() -> Path:
    """Where Spark's own log lines go: `spark.log` in the local stack's state folder."""
    return Path(os.environ.get("METALOG_STATE_DIR") or ".metalog").absolute() / "spark.log"


def is_loopback(master: str) -> bool:
    """Whether the driver's executors run on this machine (`local[…]`, `spark://127.0.0.1:…`)."""
    return master.startswith(("local", "spark://127.0.0.1:", "spark://localhost:"))


def session_conf(master: str, extra_conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every Spark conf a metalog job sets for `master` (also what `--print-submit` prints)."""
    log = log_file()
    logging = {
        # A driver JVM option: read when spark-submit starts the driver, so it
        # also quiets the lines Spark logs before `setLogLevel` can run.
        "spark.driver.extraJavaOptions": (
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()} -Dmetalog.spark.log={log}"
        ),
    }
    local = LOCAL_CONF if is_loopback(master) else {}
    if master.startswith("local"):
        local = {**local, **FORKLESS_FS, "spark.driver.extraClassPath": str(local_fs_jar())}
    return {**BASE_CONF, **local, **logging,
            "spark.jars": ",".join(str(p) for p in spark_jars()), **(extra_conf or {})}  # fmt: skip


def spark_session(
    master: str = "local[2]",
    app_name: str = "metalog",
    extra_conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Create (or return the running) Spark session with the metalog jars and Delta.

    Args:
        master: the Spark master URL.
        app_name: the application name.
        extra_conf: more Spark confs; they override the defaults.

    Returns:
        The session, with the log level at WARN. Spark's log lines and whatever
        its JVM prints go to `log_file()`: a failed job reaches the caller as
        an exception, which metalog tells in its own words.
    """
    if is_loopback(master):
        # Local Python workers (the projection's fold runs in them) use this
        # interpreter and its packages, not whatever `python3` is on the PATH.
        # PySpark reads it once, when the context starts.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log_file().parent.mkdir(parents=True, exist_ok=True)
    # py4j logs every callback connection (foreachBatch, the fold) at INFO.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    conf = session_conf(master, extra_conf)
    _start_jvm(master, app_name, conf)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def _start_jvm(master: str, app_name: str, conf: Mapping[str, str]) -> None:
    """Start the driver's JVM with its stdout and stderr appended to `log_file()`.

    PySpark would start it with ours, and the JVM copies its Python workers'
    output there: the `transformWithStateInPandas` driver worker prints five
    lines at every query start. Nothing to do when this process already has a
    JVM (a session started before, or `spark-submit` started us).
    """
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    spark_conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(app_name)
    spark_conf.setAll(list(conf.items()))
    with log_file().open("ab") as out:  # the JVM keeps its own copy of the descriptor
        try:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": out, "stderr": out})
        except PySparkRuntimeError as exc:
            raise SparkStartError(
                f"Spark's JVM did not start ({exc.getCondition()}); why is at the end of "
                f"{log_file()} (is Java 17 on the PATH or in JAVA_HOME?)") from exc
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm
