"""`METALOG_CODEC=fastavro`: the codec without its compiled reader and writer stays correct.

The codec reads the variable when it is first built, so each check runs in a child
process. The child runs this folder's codec tests (golden bytes of every
type both ways, bad input, the hash chain, older schema versions) with the
variable set; the compiled code's own tests, which compare it with fastavro
on random records, and the random round trips are left to the default run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
COMPILED_ONLY = (
    "test_avro_compiled.py",
    "test_avro_read.py",
    "test_avro_models.py",
    Path(__file__).name,
)


def _run(args: list[str], codec: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "METALOG_CODEC": codec}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip


def test_the_codec_tests_pass_with_plain_fastavro() -> None:
    ignored = [f"--ignore={HERE / name}" for name in COMPILED_ONLY]
    done = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not integration and "
                 "not spark", "-k", "not round_trip", *ignored, str(HERE)], "fastavro")  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and " failed" not in done.stdout


def test_plain_fastavro_never_loads_the_compiled_reader_and_writer() -> None:
    probe = (
        "import sys\n"
        "from events.codec import codec, decode_event, encode_event\n"
        "from tests.events.event_samples import EVENTS\n"
        "event = EVENTS['TableCreated']\n"
        "assert decode_event(encode_event(event)) == event\n"
        "names = sorted(m for m in sys.modules if m.startswith('events.compiled.'))\n"
        "print(codec('event').name, names)\n"
    )
    plain = _run(["-c", probe], "fastavro").stdout
    assert plain.split() == ["fastavro", "['events.compiled.shape']"]
    compiled = _run(["-c", probe], "compiled").stdout
    assert "events.compiled.read" in compiled and "events.compiled.write" in compiled


def test_an_unknown_codec_is_refused_on_first_use_naming_the_choices() -> None:
    # Importing reads no environment (issue 44 item 6); the first codec built does.
    assert _run(["-c", "import events.codec"], "fastest").returncode == 0
    done = _run(["-c", "from events.codec import codec; codec('event')"], "fastest")
    assert done.returncode != 0
    assert "UnknownCodec: METALOG_CODEC='fastest' is not one of compiled, fastavro" in done.stderr
