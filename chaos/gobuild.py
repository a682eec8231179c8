"""The Go parts, built once per source version into a cache: Toxiproxy's server and the checker.

`chaos/go/go.mod` pins both modules (Toxiproxy as a `tool`, Porcupine as a
requirement) and `go.sum` their hashes; `go build` fetches them from the
module proxy the first time. A binary lives under
`$METALOG_CHAOS_CACHE` (default `~/.cache/metalog-chaos`) in a folder named
by a hash of every file under `chaos/go`, so an edit rebuilds and an
unchanged tree never does.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from chaos.errors import GoBuildFailed, GoToolchainMissing

GO_DIR = Path(__file__).resolve().parent / "go"
TOXIPROXY = "github.com/Shopify/toxiproxy/v2/cmd/server"
CHECKER = "./checker"
BUILD_TIMEOUT_S = 600.0


def cache_dir() -> Path:
    """Where built binaries are kept (`METALOG_CHAOS_CACHE`, default `~/.cache/metalog-chaos`)."""
    root = os.environ.get("METALOG_CHAOS_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "metalog-chaos"


def source_hash() -> str:
    """A hash of every file under chaos/go (names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in GO_DIR.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(GO_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def go() -> str:
    """The `go` executable.

    Raises:
        GoToolchainMissing: `go` is not on PATH.
    """
    found = shutil.which("go")
    if found is None:
        raise GoToolchainMissing()
    return found


def _build(package: str, name: str) -> Path:
    target = cache_dir() / source_hash() / name
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    proc = subprocess.run(
        [go(), "build", "-o", str(partial), package], cwd=GO_DIR, capture_output=True,
        text=True, timeout=BUILD_TIMEOUT_S, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise GoBuildFailed(f"`go build {package}` in {GO_DIR} failed (is the module proxy "
                            f"reachable? GOPROXY={os.environ.get('GOPROXY', 'default')}):\n"
                            f"{proc.stderr.strip()}")  # fmt: skip
    partial.replace(target)  # atomic: a concurrent build of the same source is harmless
    return target


def toxiproxy_server() -> Path:
    """Toxiproxy's server binary, built if needed."""
    return _build(TOXIPROXY, "toxiproxy-server")


def checker() -> Path:
    """The Porcupine checker binary, built if needed."""
    return _build(CHECKER, "checker")
