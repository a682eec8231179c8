"""Resolve the JVM jars once with Maven and reuse them from a local cache.

Two classpaths and a jar of metalog's own, three directories:

- ``broker/``: Apache Kafka (``kafka_2.13``) and a log4j2 backend, run as
  ``java -cp 'broker/*' kafka.Kafka``;
- ``spark/``: what the pinned pyspark lacks (the Kafka source, Delta Lake).
  Any artifact that ``pyspark/jars`` already ships is excluded, so Spark never
  sees two copies of a library;
- ``local-fs/``: ``metalog-local-fs.jar``, compiled from ``jvm/java`` against
  pyspark's Hadoop (``streaming.spark.settings.FORKLESS_FS``).

The cache lives in ``~/.cache/metalog/jars/<key>/`` (root overridable with
``METALOG_CACHE_DIR``), where ``<key>`` is the first 12 hex digits of the
SHA-256 of the POMs, the Maven settings, the Java sources and the pyspark
version. A resolution fills a temporary directory that is renamed into place at
the end, so an interrupted run never leaves a half-filled cache behind.

Run ``python -m streaming.spark.jars`` to resolve and print the paths.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from streaming.errors import JarsError

JVM_DIR = Path(__file__).parent / "jvm"
BROKER_POM = JVM_DIR / "broker-pom.xml"
SPARK_POM = JVM_DIR / "spark-pom.xml"
MAVEN_SETTINGS = JVM_DIR / "settings.xml"
JAVA_DIR = JVM_DIR / "java"
LOCAL_FS_JAR = "metalog-local-fs.jar"
# Pinned so that resolution behaves the same with any Maven 3.x installation.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MAVEN_TIMEOUT_S = 900


def cache_root() -> Path:
    """The root of metalog's cache: ``$METALOG_CACHE_DIR`` or ``~/.cache/metalog``."""
    env = os.environ.get("METALOG_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "metalog"


def cache_key() -> str:
    """The first 12 hex digits of the SHA-256 of everything the jars depend on."""
    digest = hashlib.sha256()
    for path in (BROKER_POM, SPARK_POM, MAVEN_SETTINGS, *_java_sources()):
        digest.update(path.read_bytes())
    digest.update(importlib.metadata.version("pyspark").encode())
    return digest.hexdigest()[:12]


def jars_dir() -> Path:
    """The cache directory holding ``broker/`` and ``spark/`` for the current POMs."""
    return cache_root() / "jars" / cache_key()


def pyspark_jars_dir() -> Path:
    """The ``jars/`` directory of the installed pyspark distribution."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise JarsError("pyspark is not installed: run `pip install -e .[dev]` (or `make jars`)")
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def _java_sources() -> list[Path]:
    """metalog's own Java sources (`_compile_local_fs`), in a stable order."""
    return sorted(JAVA_DIR.rglob("*.java"))


def _compile_local_fs(out: Path) -> None:
    """Compile the Java sources against pyspark's Hadoop into ``out/LOCAL_FS_JAR``."""
    javac = shutil.which("javac")
    if javac is None:
        raise JarsError("the Java compiler (`javac`) is not on PATH: install a JDK 17+")
    hadoop = sorted(pyspark_jars_dir().glob("hadoop-client-api-*.jar"))
    with tempfile.TemporaryDirectory() as built:
        classes = Path(built)
        cmd = [javac, "--release", "17", "-nowarn", "-d", str(classes),
               "-cp", os.pathsep.join(map(str, hadoop)), *map(str, _java_sources())]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise JarsError(f"javac failed on {JAVA_DIR}:\n{proc.stdout}{proc.stderr}")
        out.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out / LOCAL_FS_JAR, "w") as jar:
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())


def _mvn(pom: Path, workdir: Path, goal: str, *props: str) -> None:
    """Run one Maven goal on a copy of ``pom`` inside ``workdir``."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsError("Maven (`mvn`) is not on PATH: install Maven 3.8+ to resolve the jars")
    project = workdir / "pom.xml"
    shutil.copyfile(pom, project)
    cmd = [mvn, "-B", "-q", "-gs", str(MAVEN_SETTINGS), "-f", str(project),
           f"{DEPENDENCY_PLUGIN}:{goal}", "-DincludeScope=runtime", *props]
    try:
        proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True,
                              timeout=MAVEN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise JarsError(f"Maven did not finish within {MAVEN_TIMEOUT_S} s on {pom.name}") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise JarsError(f"Maven failed to resolve {pom.name} (is Maven Central reachable?):\n"
                        f"{tail}")


def _already_in_pyspark(artifact_ids: set[str]) -> list[str]:
    """The artifact ids of which pyspark/jars already holds a version."""
    shipped = [p.name for p in pyspark_jars_dir().glob("*.jar")]
    return sorted(a for a in artifact_ids
                  if any(re.match(re.escape(a) + r"-\d", name) for name in shipped))


def _resolve_spark(workdir: Path, out: Path) -> None:
    """Copy the Spark-side jars that pyspark lacks into ``out``."""
    listing = workdir / "list.txt"
    _mvn(SPARK_POM, workdir, "list", f"-DoutputFile={listing}")
    artifact_ids: set[str] = set()
    for line in listing.read_text().splitlines():
        parts = line.strip().split(" ")[0].split(":")
        if len(parts) >= 5:
            artifact_ids.add(parts[1])
    excluded = _already_in_pyspark(artifact_ids)
    _mvn(SPARK_POM, workdir, "copy-dependencies", f"-DoutputDirectory={out}",
         f"-DexcludeArtifactIds={','.join(excluded)}")


def resolve() -> Path:
    """Resolve both classpaths and compile metalog's jar into the cache unless they are
    already there.

    Returns:
        The cache directory holding ``broker/``, ``spark/`` and ``local-fs/``.

    Raises:
        JarsError: Maven or `javac` is missing, or failed.
    """
    target = jars_dir()
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"metalog: resolving JVM jars with Maven into {target} (once)", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for name, pom in (("broker", BROKER_POM), ("spark", None)):
            work = tmp / f"work-{name}"
            work.mkdir()
            if pom is None:
                _resolve_spark(work, tmp / name)
            else:
                _mvn(pom, work, "copy-dependencies", f"-DoutputDirectory={tmp / name}")
            shutil.rmtree(work)
        _compile_local_fs(tmp / "local-fs")
        try:
            tmp.rename(target)
        except OSError:
            if not target.is_dir():  # not a concurrent resolver winning the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def broker_classpath() -> str:
    """The Java classpath of the Kafka broker (a ``dir/*`` wildcard entry)."""
    return str(resolve() / "broker" / "*")


def local_fs_jar() -> Path:
    """The jar of metalog's local file system for Hadoop (`_compile_local_fs`)."""
    return resolve() / "local-fs" / LOCAL_FS_JAR


def spark_jars() -> list[Path]:
    """The jars to put in ``spark.jars``, sorted by file name."""
    return sorted((resolve() / "spark").glob("*.jar"))


def main() -> int:
    """Resolve the jars and print where they are."""
    try:
        root = resolve()
    except JarsError as exc:
        print(f"metalog: {exc}", file=sys.stderr)
        return 1
    for name in ("broker", "spark"):
        count = len(list((root / name).glob("*.jar")))
        print(f"{name}: {root / name} ({count} jars)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
