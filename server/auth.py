"""Sign-in over HTTP on a secured cluster: Basic or bearer credentials → the Kafka principals.

The server's users are the principals of the credentials file the cluster's
Kafka clients use (`metalog up --secure` writes one): the same names and
passwords. A request signs in with `Authorization: Basic base64(name:password)`
or `Authorization: Bearer <password>` (each principal's password is its token).
What a principal may do follows its roles' Kafka ACLs (docs/security.md):

| role | may |
|---|---|
| `client`, `admin` | write commands and read |
| `follower`, `projector`, `leader` | read |

A command is sent to Kafka by a client signed in as the caller's principal, so
the cluster's ACLs are checked again there. `/healthz`, `/readyz` and the
OpenAPI document need no sign-in (probes and code generators).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from dataclasses import dataclass, field
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from projector.errors import CredentialsError
from projector.kafka.security import ROLES, KafkaSecurity, load_credentials
from server.errors import PermissionDenied, SignInFailed
from server.problems import problem

WRITERS = frozenset({"client", "admin"})
"""The roles whose principals may write commands (WRITE on the commands topic)."""

OPEN = frozenset({"/healthz", "/readyz", "/openapi.json", "/docs", "/docs/oauth2-redirect",
                  "/redoc"})  # fmt: skip
"""Paths served without a sign-in."""

PRINCIPAL = "metalog.principal"
"""The ASGI scope key the signed-in `Principal` is kept under."""

CHALLENGES = (b'Basic realm="metalog", charset="UTF-8"', b'Bearer realm="metalog"')
"""The `WWW-Authenticate` challenges of a 401."""

_COMMAND = re.compile(r"^/v1/catalogs/[^/]+/commands(/|$)")


@dataclass(frozen=True)
class Principal:
    """A signed-in user: a principal of the credentials file and its roles.

    Attributes:
        name: The user name (the Kafka principal).
        roles: The roles the file gives this user.
        security: How the server signs in to Kafka to send this principal's commands.
    """

    name: str
    roles: frozenset[str]
    security: KafkaSecurity = field(repr=False)

    @property
    def may_write(self) -> bool:
        """The principal may write commands."""
        return bool(self.roles & WRITERS)

    def may(self) -> str:
        """What the principal may do, in words."""
        return "write commands and read" if self.may_write else "read (GET routes, watch, SQL)"


class Users:
    """The principals of a credentials file, by name, for checking HTTP credentials.

    Args:
        principals: Each role's Kafka security settings (from the file).
    """

    def __init__(self, principals: dict[str, KafkaSecurity]) -> None:
        by_name: dict[str, list[str]] = {}
        for role, security in principals.items():
            by_name.setdefault(security.principal, []).append(role)
        self._principals: dict[str, tuple[bytes, Principal]] = {}
        for name, roles in by_name.items():
            pick = next((r for r in ("client", "admin") if r in roles), roles[0])
            security = principals[pick]
            self._principals[name] = (
                (security.password or "").encode(),
                Principal(name, frozenset(roles), security),
            )

    @classmethod
    def from_file(cls, path: str | Path) -> Users:
        """The principals of a credentials file (every role it names).

        Raises:
            CredentialsError: The file is missing or unreadable, or names no principal.
        """
        found: dict[str, KafkaSecurity] = {}
        for role in ROLES:
            try:
                found[role] = load_credentials(path, role)
            except CredentialsError as exc:
                if "names no principal" not in str(exc):
                    raise
        if not found:
            raise CredentialsError(f"the credentials file {path} names no principal: "
                                   "HTTP users are its principals (docs/security.md)")  # fmt: skip
        return cls(found)

    def sign_in(self, authorization: str | None) -> Principal:
        """The principal an `Authorization` header names.

        Raises:
            SignInFailed: No header, a scheme other than Basic or Bearer, a malformed
                header, or a name and password (or token) that match no principal.
        """
        if not authorization:
            raise SignInFailed("no credentials")
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "basic":
            return self._basic(value.strip())
        if scheme.lower() == "bearer":
            return self._bearer(value.strip())
        raise SignInFailed(f"the {scheme!r} scheme")

    def _basic(self, value: str) -> Principal:
        try:
            decoded = base64.b64decode(value, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise SignInFailed("a Basic credential that is not base64 of name:password") from None
        name, colon, password = decoded.partition(":")
        if not colon:
            raise SignInFailed("a Basic credential without a `:` between name and password")
        known = self._principals.get(name)
        if known is not None and hmac.compare_digest(known[0], password.encode()):
            return known[1]
        raise SignInFailed("a wrong name or password")

    def _bearer(self, token: str) -> Principal:
        if not token:
            raise SignInFailed("an empty Bearer token")
        matched = [p for secret, p in self._principals.values()
                   if hmac.compare_digest(secret, token.encode())]  # fmt: skip
        if len(matched) == 1:
            return matched[0]
        raise SignInFailed("a token that names no principal" if not matched else
                           "a token several principals share: sign in with Basic")  # fmt: skip


class Guard:
    """ASGI middleware: a request signs in (else 401) and may do what it asks (else 403).

    A POST under `/v1/catalogs/{c}/commands/` needs a principal that may write;
    every other route one that may read (any principal); `OPEN` paths none.
    The principal is kept in the scope (`PRINCIPAL`) for the route.
    """

    def __init__(self, app: ASGIApp, users: Users) -> None:
        self.app = app
        self.users = users

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on with its principal, or answer 401 / 403."""
        if scope["type"] != "http" or scope["path"] in OPEN:
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization")
        try:
            principal = self.users.sign_in(header.decode("latin-1") if header else None)
        except SignInFailed as exc:
            answer = problem(exc)
            answer.raw_headers.extend((b"www-authenticate", c) for c in CHALLENGES)
            await answer(scope, receive, send)
            return
        path = scope["path"]
        if scope["method"] == "POST" and _COMMAND.match(path) and not principal.may_write:
            await problem(PermissionDenied(principal.name, sorted(principal.roles),
                                           f"POST {path}", principal.may()))(scope, receive, send)
            return
        scope[PRINCIPAL] = principal
        await self.app(scope, receive, send)
