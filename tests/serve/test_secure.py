"""`metalog serve` on the secure stack: HTTPS with the stack's CA, sign-in mapped to principals."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from metalog.cli import main
from metalog.stack import secure as stack_secure
from producers.leader.leader import Leader
from server.auth import Users
from server.catalogs import ServerSettings
from tests.fixtures.secure import SecureKafka
from tests.serve.conftest import Served, create_body

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Secured:
    """A secured server of one new catalog, and what a caller needs to reach it."""

    served: Served
    base: str
    ca: str
    signs: dict[str, tuple[str, str]]
    """Each role's user name and password."""

    def call(self, method: str, path: str, role: str | None = None, *,
             bearer: bool = False, **kwargs: object) -> requests.Response:  # fmt: skip
        """`method path` signed in as `role`'s principal (Basic, or its password as a token)."""
        headers: dict[str, str] = {}
        if role is not None:
            name, secret = self.signs[role]
            headers["Authorization"] = f"Bearer {secret}" if bearer else "Basic " + (
                base64.b64encode(f"{name}:{secret}".encode()).decode())
        return requests.request(method, self.served.url + path, headers=headers, verify=self.ca,
                                timeout=60, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def secure_leader(secure_kafka: SecureKafka) -> Iterator[Leader]:
    """A leader of the secure stack's topics, signed in as `leader`."""
    with Leader(secure_kafka.bootstrap, topics=secure_kafka.topics,
                security=secure_kafka.security("leader")) as leader:  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        yield leader


def _settings(kafka: SecureKafka, users: Users) -> ServerSettings:
    return ServerSettings(kafka.bootstrap, catalogs=(f"h{uuid.uuid4().hex[:8]}",),
                          topics=kafka.topics, read_security=kafka.security("follower"),
                          users=users, command_timeout=30.0, wait_timeout=30.0)  # fmt: skip


def _start(kafka: SecureKafka, serve: Callable[..., Served], users: Users) -> Secured:
    settings = _settings(kafka, users)
    assert settings.catalogs is not None
    tls = kafka.config.state_dir / "tls"
    served = serve(settings, tls_cert=str(tls / "broker.pem"))
    signs = {role: (kafka.security(role).principal, kafka.security(role).password or "")
             for role in ("client", "follower", "leader")}  # fmt: skip
    return Secured(served, f"/v1/catalogs/{settings.catalogs[0]}", str(tls / "ca.pem"), signs)


@pytest.fixture
def secured(secure_kafka: SecureKafka, secure_leader: Leader,
            serve: Callable[..., Served]) -> Secured:  # fmt: skip
    """A server signing in the stack's principals, over HTTPS with the broker's certificate."""
    users = Users.from_file(stack_secure.credentials_file(secure_kafka.config))
    return _start(secure_kafka, serve, users)


def test_a_client_writes_and_reads_over_https_with_the_stacks_ca(secured: Secured) -> None:
    """`client` creates a table (Basic) and reads it back (bearer); plain HTTP gets nothing."""
    made = secured.call("POST", f"{secured.base}/commands/CreateTable", "client",
                        json=create_body("s1"))  # fmt: skip
    assert made.status_code == 200, made.text
    rv = made.json()["resource_version"]
    tables = secured.call("GET", f"{secured.base}/tables", "client", bearer=True,
                          params={"resourceVersion": rv})  # fmt: skip
    assert tables.status_code == 200, tables.text
    assert [t["table_name"] for t in tables.json()["items"]] == ["s1"]
    host, port = secured.served.url.removeprefix("https://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as plain:
        plain.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            answer = plain.recv(4096)
        except ConnectionResetError:
            answer = b""
    assert not answer.startswith(b"HTTP/"), answer  # a TLS server: no HTTP answer in clear


def test_a_follower_reads_and_watches_but_a_write_is_403_naming_what_it_may_do(
    secured: Secured,
) -> None:
    """`follower` lists and watches; its command is a PermissionDenied problem, nothing written."""
    assert secured.call("GET", secured.base, "follower").status_code == 200
    with secured.call("GET", f"{secured.base}/tables", "follower", bearer=True, stream=True,
                      params={"watch": "true", "resourceVersion": "0"}) as watch:
        assert watch.status_code == 200
        assert json.loads(next(watch.iter_lines()))["type"] == "BOOKMARK"
    denied = secured.call("POST", f"{secured.base}/commands/Reload", "follower", json={})
    assert denied.status_code == 403
    body = denied.json()
    assert body["error"] == "PermissionDenied"
    assert body["principal"] == secured.signs["follower"][0]
    assert body["may"].startswith("read") and "client role" in body["detail"]
    after = secured.call("GET", secured.base, "follower").json()["resource_version"]
    assert after == secured.call("GET", secured.base, "client").json()["resource_version"]
    assert secured.call("GET", f"{secured.base}/tables", "follower").json()["items"] == []


@pytest.mark.parametrize("authorization", [
    None, "Basic " + base64.b64encode(b"client:wrong").decode(), "Bearer wrong", "Basic !!",
    "Digest x", "Bearer ",
])  # fmt: skip
def test_a_missing_or_wrong_credential_is_401_with_both_challenges(
    secured: Secured, authorization: str | None
) -> None:
    """No write and no read without a principal; probes stay open."""
    headers = {} if authorization is None else {"Authorization": authorization}
    for method, path in (("GET", f"{secured.base}/tables"),
                         ("POST", f"{secured.base}/commands/Reload"), ("GET", "/metrics")):
        answer = requests.request(method, secured.served.url + path, headers=headers, json={},
                                  verify=secured.ca, timeout=30)  # fmt: skip
        assert answer.status_code == 401, (method, path, answer.text)
        assert answer.json()["error"] == "SignInFailed"
        challenges = answer.headers["WWW-Authenticate"]  # requests joins repeated headers
        assert challenges.startswith("Basic realm=") and "Bearer realm=" in challenges
    assert requests.get(secured.served.url + "/healthz", verify=secured.ca,
                        timeout=30).status_code == 200  # fmt: skip


def test_a_command_goes_to_kafka_as_the_callers_principal(
    secure_kafka: SecureKafka, secure_leader: Leader, serve: Callable[..., Served],
    tmp_path: Path,
) -> None:
    """A file that (wrongly) gives `leader` the client role: HTTP lets it write, Kafka does not.

    The server sends the command signed in as `leader`, whose ACLs have no WRITE on the
    commands topic: the answer is the cluster's 403 AccessDenied naming `leader`.
    """
    stack_file = json.loads(stack_secure.credentials_file(secure_kafka.config).read_text())
    mixed = {**stack_file, "principals": {"client": stack_file["principals"]["leader"]}}
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps(mixed))
    path.chmod(0o600)
    secured = _start(secure_kafka, serve, Users.from_file(path))
    denied = secured.call("POST", f"{secured.base}/commands/Reload", "leader", json={})
    assert denied.status_code == 403, denied.text
    body = denied.json()
    assert body["error"] == "AccessDenied"
    assert body["principal"] == secure_kafka.security("leader").principal
    assert body["operation"] == f"WRITE {secure_kafka.topics.commands}"


def test_metalog_serve_with_credentials_serves_https_that_curl_signs_in_to(
    secure_kafka: SecureKafka, secure_leader: Leader,
) -> None:
    """The CLI finds the stack's certificate beside its CA; curl writes as `client` (Basic)."""
    credentials = stack_secure.credentials_file(secure_kafka.config)
    catalog = f"h{uuid.uuid4().hex[:8]}"
    server = subprocess.Popen(
        [sys.executable, "-m", "metalog.cli", "serve", "--bootstrap", secure_kafka.bootstrap,
         "--prefix", secure_kafka.topics.prefix, "--credentials", str(credentials),
         "--catalog", catalog, "--port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        if not first:
            server.wait(60)
            assert server.stderr is not None
            pytest.fail(f"metalog serve ended: {server.stderr.read()}")
        assert first.startswith("metalog serve: listening on https://127.0.0.1:"), first
        url = first.split()[4]
        client = secure_kafka.security("client")
        ca = str(secure_kafka.config.state_dir / "tls" / "ca.pem")
        made = _curl("--cacert", ca, "-u", f"{client.principal}:{client.password}",
                     "-H", "Content-Type: application/json", "--data", json.dumps(
                         create_body("by_curl")),
                     f"{url}/v1/catalogs/{catalog}/commands/CreateTable")  # fmt: skip
        assert made.returncode == 0, made.stderr
        assert json.loads(made.stdout)["tables"], made.stdout
        anonymous = _curl("--cacert", ca, "-o", "/dev/null", "-w", "%{http_code}",
                          f"{url}/v1/catalogs/{catalog}/tables")  # fmt: skip
        assert anonymous.stdout == "401"
    finally:
        server.terminate()
        server.communicate(timeout=60)


def test_credentials_without_a_certificate_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --tls-cert and no broker.pem beside the CA: refuse to serve passwords in clear."""
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps({"ca_file": str(tmp_path / "ca.pem"),
                                "username": "app", "password": "p"}))  # fmt: skip
    path.chmod(0o600)
    code = main(["serve", "--bootstrap", "127.0.0.1:1", "--credentials", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert err[-1].startswith("metalog: error: a server with --credentials serves HTTPS only")
    assert "--tls-cert" in err[-1]


def _curl(*args: str) -> subprocess.CompletedProcess[str]:
    curl = shutil.which("curl")
    assert curl, "curl is a requirement of the tests (apt-get install curl)"
    return subprocess.run([curl, "-sS", *args], capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
