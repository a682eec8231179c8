"""The local stack: a real single-node Apache Kafka broker (KRaft) run from Maven jars.

``up()`` formats the state directory on first use, starts the broker JVM
detached (own session, output to the state directory), waits until it answers
and creates the metalog topics. ``down()`` stops it (SIGTERM, then SIGKILL after
a bounded wait). A restart keeps the data. No Docker engine is needed.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from metalog.errors import StackError
from metalog.stack import secure as stack_secure
from metalog.stack.config import StackConfig, log4j2_properties, server_properties
from projector.kafka.clients import CLIENT_SETTINGS
from projector.kafka.security import PLAINTEXT, KafkaSecurity, secured
from projector.kafka.topics import create_metalog_topics
from streaming.spark import jars

START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
FORMAT_TIMEOUT_S = 120.0


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise StackError("Java is not installed (no `java` on PATH): install Java 17+")
    return java


def _cluster_id() -> str:
    """A random cluster id in Kafka's form (URL-safe base64, no padding, no leading '-')."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _is_our_broker(pid: int, config: StackConfig) -> bool:
    """Whether ``pid`` is the broker JVM of ``config`` (guards against pid reuse)."""
    if not _alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return True  # no /proc (macOS): trust the pid file
    return "kafka.Kafka" in cmdline and str(config.properties_file) in cmdline


def _read_pid(config: StackConfig) -> int | None:
    try:
        return int(config.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _log_tail(config: StackConfig, lines: int = 30) -> str:
    chunks = []
    for path in (config.console_log, config.server_log):
        if path.exists():
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            chunks.append(f"--- {path} ---\n" + "\n".join(tail))
    return "\n".join(chunks) or "(no log written)"


def status(config: StackConfig | None = None) -> dict[str, Any]:
    """Report on the broker of ``config`` (default: from the environment).

    Returns:
        ``{"running", "ready", "bootstrap", "pid", "state_dir"}``; ``ready`` means
        the client port accepts connections.
    """
    config = config or StackConfig.from_env()
    pid = _read_pid(config)
    running = pid is not None and _is_our_broker(pid, config)
    return {
        "running": running,
        "ready": running and _port_open(config.port),
        "bootstrap": config.bootstrap,
        "pid": pid if running else None,
        "state_dir": str(config.state_dir),
    }


def _check_formatted_ports(config: StackConfig) -> None:
    """The controller endpoint is stored at format time: refuse a different one."""
    record = config.state_dir / "stack.json"
    if not record.exists():
        return
    saved = json.loads(record.read_text())
    if saved.get("controller_port") != config.controller_port:
        raise StackError(
            f"{config.state_dir} was formatted with controller port {saved.get('controller_port')}"
            f", not {config.controller_port}: set METALOG_CONTROLLER_PORT="
            f"{saved.get('controller_port')} or remove the state directory")


def _format(config: StackConfig, classpath: str) -> None:
    scram = stack_secure.scram_arguments(config) if config.secure else []
    cmd = [_java(), "-Xmx256m", f"-Dlog4j2.configurationFile={config.log4j_file}",
           "-cp", classpath, "kafka.tools.StorageTool", "format", "--standalone",
           "-t", _cluster_id(), "-c", str(config.properties_file), *scram]
    with stack_secure.argument_file(config, cmd) if scram else nullcontext(cmd) as cmd:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S,
                              check=False)
    if proc.returncode != 0:
        # With --add-scram, stdout lists the users' salted keys: it is never shown.
        shown = proc.stderr if scram else proc.stdout + proc.stderr
        raise StackError(f"formatting {config.data_dir} failed:\n{shown}")
    (config.state_dir / "stack.json").write_text(json.dumps(
        {"port": config.port, "controller_port": config.controller_port}))


_JVM_PERFORMANCE = ("-server", "-XX:+UseZGC", "-Djava.awt.headless=true")  # fmt: skip
"""ZGC (JDK 17): it marks and moves objects while the broker runs, so its stop-the-world
pauses are a few µs of root scanning, and a contended core stretches them to a few ms at
most. Kafka's own options (`KAFKA_JVM_PERFORMANCE_OPTS`: G1, a 20 ms pause goal) stopped
the broker for 20 ms or more 26-59 times per `bench.leader` run on a shared 2-core machine
(up to 330 ms), and every command waiting on it met them as its tail; ZGC, 0-2 times
(docs/benchmarks/leader.md)."""


def _launch(config: StackConfig, classpath: str) -> int:
    """Start the broker JVM detached from this process; return its pid."""
    config.gc_log.parent.mkdir(parents=True, exist_ok=True)
    # Every stop-the-world pause, as Kafka's own launcher logs GC (kafka-run-class.sh):
    # the evidence for or against the JVM when the broker stalls.
    gc_log = f"-Xlog:gc,safepoint:file={config.gc_log}:time,uptime:filecount=3,filesize=10m"
    java_cmd = [_java(), f"-Xmx{config.heap}", f"-Xms{config.heap}", *_JVM_PERFORMANCE, gc_log,
                f"-Dlog4j2.configurationFile={config.log4j_file}",
                "-cp", classpath, "kafka.Kafka", str(config.properties_file)]
    # A shell backgrounds the JVM and exits at once: the JVM is re-parented, so it
    # outlives this process and never lingers as our child (no zombie, no
    # ResourceWarning), and it runs in its own session, away from our signals.
    script = 'log="$1"; shift; "$@" </dev/null >>"$log" 2>&1 & echo $!'
    proc = subprocess.run(["/bin/sh", "-c", script, "sh", str(config.console_log), *java_cmd],
                          capture_output=True, text=True, start_new_session=True,
                          cwd=config.state_dir, check=True)
    pid = int(proc.stdout.strip())
    config.pid_file.write_text(f"{pid}\n")
    return pid


def _wait_ready(config: StackConfig, pid: int, timeout_s: float, security: KafkaSecurity) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            config.pid_file.unlink(missing_ok=True)
            raise StackError(f"the broker exited during startup:\n{_log_tail(config)}")
        if _port_open(config.port):
            try:
                AdminClient(
                    secured({"bootstrap.servers": config.bootstrap, **CLIENT_SETTINGS}, security)
                ).list_topics(timeout=5)
                return
            except KafkaException:
                pass
        time.sleep(0.2)
    raise StackError(f"the broker did not answer on {config.bootstrap} within {timeout_s:.0f} s"
                     f" (it keeps running; `metalog down` stops it):\n{_log_tail(config)}")


def up(config: StackConfig | None = None, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
    """Start the broker (if it is not running) and create the metalog topics.

    Running it twice is harmless: a live broker is reused.

    Args:
        config: where and how to run; default from the environment.
        timeout_s: the bound on the wait for the broker to answer.

    Returns:
        The ``status()`` dict, plus ``"started"`` (whether this call started it).

    Raises:
        StackError: Java is missing, the port is taken by something else, or the
            broker died or did not answer in time (the message holds the log tail).
    """
    config = config or StackConfig.from_env()
    config.state_dir.mkdir(parents=True, exist_ok=True)
    pid = _read_pid(config)
    started = False
    if pid is None or not _is_our_broker(pid, config):
        for port in (config.port, config.controller_port):
            if _port_open(port):
                raise StackError(f"port {port} is already in use by another process: choose "
                                 "other ports with METALOG_PORT / METALOG_CONTROLLER_PORT")
        _check_formatted_ports(config)
        stack_secure.check_mode(config)
        if config.secure:
            stack_secure.prepare(config)
        overrides = stack_secure.broker_properties(config) if config.secure else None
        config.properties_file.touch(mode=0o600)  # with --secure it holds the admin's password
        config.properties_file.chmod(0o600)
        config.properties_file.write_text(server_properties(config, overrides))
        config.log4j_file.write_text(log4j2_properties(config))
        classpath = jars.broker_classpath()
        if not (config.data_dir / "meta.properties").exists():
            _format(config, classpath)
        pid = _launch(config, classpath)
        started = True
    admin = stack_secure.security(config, "admin") if config.secure else PLAINTEXT
    _wait_ready(config, pid, timeout_s, admin)
    create_metalog_topics(config.bootstrap, config.topic_prefix, config.partitions, admin)
    if config.secure:
        stack_secure.grant(config)
    return {**status(config), "started": started}


def down(config: StackConfig | None = None, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """Stop the broker: SIGTERM, a bounded wait, then SIGKILL. The data is kept.

    Returns:
        Whether a running broker was stopped.
    """
    config = config or StackConfig.from_env()
    pid = _read_pid(config)
    if pid is None or not _is_our_broker(pid, config):
        config.pid_file.unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.1)
    config.pid_file.unlink(missing_ok=True)
    return True
