"""Domain core benchmark: apply throughput vs the codec's decode rate, and memory per table.

Run: `.venv/bin/python -m bench.apply` (defaults: 1,000,000 events over
100,000 tables). The log is generated once, in memory, before timing, by
`bench.workload.Workload.grow` through decide (so every event is what the
leader writes): table creates (8 columns drawn from a pool of common column
definitions), then a mix of alters (set an option), renames and attribute
sets. The target's ratio is the fold over the log as a follower or a replay
reads it (decoded) against the decode; the rate over the leader's own models
is printed beside it.
"""

import argparse
import gc
import time
import tracemalloc

from bench.workload import Workload
from events.codec import decode_event, encode_event
from events.event import Event
from projector.fold.apply import replay
from projector.fold.image import Image

CATALOG = "bench"


def grown_log(tables: int, events: int, seed: int = 7) -> list[Event]:
    """Catalog `CATALOG`'s first `events` events: `tables` creates, then changes to them."""
    return list(Workload([CATALOG], seed, keep_log=False).grow(CATALOG, tables, events))


def throughput(events: int, tables: int, sample: int, chunks: int = 200) -> dict[str, float]:
    """Apply rates over the whole log and decode rate over an evenly spread sample.

    The log is applied twice: as the leader decided it (its own models) and as a
    follower or a replay reads it (each event encoded and decoded once, before
    timing: `decode_event`'s infos come pooled, and the fold keeps them as they
    are). The three are timed in alternating chunks (apply a slice of each log,
    decode the sample's share of it), so load from other processes hits all alike.
    """
    started = time.perf_counter()
    log = grown_log(tables, events)
    generated = time.perf_counter() - started
    read = [decode_event(encode_event(e)) for e in log]
    stride = max(1, events // sample)
    encoded = [encode_event(e) for e in log[::stride]]
    gc.collect()
    gc.freeze()  # the logs are long-lived; keep the collector from rescanning them
    image = read_image = Image.empty(CATALOG)
    applied = applied_read = decoded = 0.0
    step, share = -(-events // chunks), -(-len(encoded) // chunks)
    for chunk in range(chunks):
        started = time.perf_counter()
        image = replay(image, log[chunk * step : (chunk + 1) * step])
        applied += time.perf_counter() - started
        started = time.perf_counter()
        read_image = replay(read_image, read[chunk * step : (chunk + 1) * step])
        applied_read += time.perf_counter() - started
        started = time.perf_counter()
        for data in encoded[chunk * share : (chunk + 1) * share]:
            decode_event(data)
        decoded += time.perf_counter() - started
    assert image.resource_version == events and len(image.head.values) >= 4 * tables
    assert read_image == image
    return {
        "generate_s": generated,
        "apply_s": applied,
        "apply_per_s": events / applied,
        "apply_read_s": applied_read,
        "apply_read_per_s": events / applied_read,
        "decode_per_s": len(encoded) / decoded,
        "decode_sample": len(encoded),
        "bytes_per_event": sum(map(len, encoded)) / len(encoded),
    }


def memory_per_table(tables: int) -> float:
    """Bytes traced per table of an image holding `tables` creates (8 columns each).

    The creates are folded as they are generated and only the image is kept,
    so what stays traced is the image (after one small warm-up run that
    builds the codec and the models' validators, which every image shares).
    """
    grown_log(10, 11)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    work = Workload([CATALOG], seed=11, keep_log=False)
    image = replay(Image.empty(CATALOG), work.grow(CATALOG, tables, tables + 1))
    del work
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert len(image.head.values) == 4 * tables
    return used / tables


def main() -> None:
    """Print the numbers as the BENCHMARKS.md rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tables", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=50_000, help="events decoded")
    args = parser.parse_args()
    per_table = memory_per_table(args.tables)
    result = throughput(args.events, args.tables, args.sample)
    ratio = result["apply_read_per_s"] / result["decode_per_s"]
    print(f"| events applied | {args.events:,} over {args.tables:,} tables |")
    print(f"| generate (excluded) | {result['generate_s']:.1f} s |")
    print(
        f"| apply, the log as read (decoded) | {result['apply_read_per_s']:,.0f} events/s "
        f"({result['apply_read_s']:.1f} s) |"
    )
    print(
        f"| apply, the log as decided (the leader's own models) | {result['apply_per_s']:,.0f} "
        f"events/s ({result['apply_s']:.1f} s) |"
    )
    print(
        f"| decode (events.codec.decode_event, {result['decode_sample']:,} evenly spread events, "
        "timed interleaved with apply,"
        f" {result['bytes_per_event']:.0f} B avg) | {result['decode_per_s']:,.0f} events/s |"
    )
    print(f"| apply (as read) / decode | {ratio:.2f}x (target >= 2x) |")
    decided = result["apply_per_s"] / result["decode_per_s"]
    print(f"| apply (as decided) / decode | {decided:.2f}x |")
    print(f"| image memory per table (8 columns) | {per_table:,.0f} B (target <= 2048) |")


if __name__ == "__main__":
    main()
