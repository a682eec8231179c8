"""The HTTP server's own refusals: bad requests that never reach a leader or a follower."""

from __future__ import annotations

from events.errors import MetalogError


class ServerError(MetalogError):
    """Root of the errors `metalog serve` raises itself."""


class BadRequest(ServerError):
    """The request is malformed (a header, a query parameter, the JSON text)."""


class InvalidResourceVersion(BadRequest):
    """`resourceVersion` is not a whole number of 0 or more.

    Attributes:
        value: What the request carried.
    """

    def __init__(self, value: str) -> None:
        self.value = value
        super().__init__(
            f"resourceVersion={value!r} is not a resource_version: pass a whole number of 0 "
            "or more (a resourceVersion the server returned, or 0 for the whole history)"
        )


class PreconditionInvalid(BadRequest):
    """`If-Match` is not one resource_version, or disagrees with the body's."""


class RequestInvalid(ServerError):
    """The body does not match the operation's schema (wrong types, unknown fields…).

    Attributes:
        errors: One entry per problem: `loc` (where), `msg` (what), `type` (pydantic's code).
    """

    def __init__(self, errors: list[dict[str, object]], *, malformed_json: bool = False) -> None:
        self.errors = errors
        self.malformed_json = malformed_json
        first = errors[0] if errors else {"loc": (), "msg": "invalid"}
        loc = first.get("loc", ())
        where = ".".join(str(p) for p in loc) if isinstance(loc, list | tuple) else ""
        where = where or "body"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(
            f"{where}: {first.get('msg')}{more}: fix the request against /openapi.json"
        )


class BodyTooLarge(ServerError):
    """The request body is larger than the server accepts.

    Attributes:
        limit: The largest body accepted, in bytes.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the request body is larger than {limit} bytes: send a smaller command "
            "(an event must fit the events topic's record limit anyway)"
        )


class CatalogNotServed(ServerError):
    """The catalog is not one this server serves.

    Attributes:
        catalog: The catalog asked for.
    """

    def __init__(self, catalog: str, served: tuple[str, ...] | None, reason: str = "") -> None:
        self.catalog = catalog
        listed = "any catalog" if served is None else ", ".join(served) or "none"
        super().__init__(
            f"catalog `{catalog}` is not served here{reason}: this server serves {listed} "
            "(`metalog serve --catalog NAME`)"
        )


class NotFound(ServerError):
    """No resource at the path (a table, a route, a command kind)."""


class NotAQuery(BadRequest):
    """`POST …/sql` got a statement that writes: only SELECT and SHOW are served there."""


class SlowReader(ServerError):
    """A watcher fell too far behind the changes and was disconnected.

    Attributes:
        limit: The most changes a watcher may lag behind.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"this watcher fell more than {limit} changes behind: read the stream faster, "
            "then watch again from the last resourceVersion received"
        )


class SignInFailed(ServerError):
    """A request to a secured server carries no credentials, or ones that match no principal.

    Attributes:
        reason: What was wrong (never the password).
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(
            f"sign in to use this server ({reason}): send `Authorization: Basic "
            "base64(name:password)` or `Authorization: Bearer <password>` of a principal in "
            "the server's credentials file (docs/security.md)"
        )


class PermissionDenied(ServerError):
    """A signed-in principal asked for something its roles do not allow.

    Attributes:
        principal: The user name.
        wanted: What it asked, e.g. ``POST /v1/catalogs/c/commands/CreateTable``.
        may: What it may do.
    """

    def __init__(self, principal: str, roles: list[str], wanted: str, may: str) -> None:
        self.principal = principal
        self.wanted = wanted
        self.may = may
        super().__init__(
            f"principal {principal} (roles: {', '.join(roles)}) may not {wanted}: it may "
            f"{may}; writing commands takes a principal with the client role"
        )


class CertificateMissing(ServerError):
    """A secured server has no certificate to serve HTTPS with."""

    def __init__(self, looked_at: str) -> None:
        super().__init__(
            f"a server with --credentials serves HTTPS only, and found no certificate (looked "
            f"at {looked_at}): pass --tls-cert FILE (a PEM certificate chain with its key, or "
            "--tls-key FILE), such as the secure stack's tls/broker.pem"
        )
