"""Bulk filtering of one topic: rocketfilter against the broker's per-thread speed, DuckDB and
Polars, on the same CommitLog parquet files.

Builds (or reuses, ``--store DIR --reuse``) a store with one ``--messages``-message topic
(200-byte bodies; properties age "0".."20", name on ~90 %, isGender "true"/"false" and two
fillers), whose ``age``, ``name`` and ``isGender`` are promoted and whose selector is registered
for exact subscription bits before the put, then counts the messages the subscription
``SELECTOR`` delivers, each way best of ``--repeat`` after a warm-up, in interleaved rounds:

0. today's way: ``parse(SELECTOR).to_column("properties")`` over the CommitLog files;
1. ``read_messages`` over the raw properties map (``promoted=False, bits=False``);
2. ``read_messages`` over the promoted columns (``bits=False``);
3. ``read_consume_queue`` through the registered subscription's bits: the delivered messages'
   ConsumeQueue entries, from the ConsumeQueue alone; beside it (3b) ``read_messages`` through
   the bits (``promoted=False``: with every property promoted it would rather use the promoted
   columns), which joins the entries back to the CommitLog rows;
4. DuckDB and 5. Polars running the hand-written predicate on the same parquet files
   (``pip install -e ".[bench]"``), with as many threads as Spark has cores.

    python bench/bulk_filter.py [--messages 5000000] [--repeat 3] [--store DIR [--reuse]]

Targets: (2) at least 2x faster than (4); (3) at least 10x faster than (1); (1) no slower
than (0). RocketMQ's own evaluator does about 4.2M messages/s on one thread.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)

import _common  # noqa: E402 - bench/ is the script's folder, first on sys.path
from _common import CORES  # noqa: E402

TOPIC = "BenchTopic"
GROUP = "GID_bench"
SELECTOR = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL) AND (isGender = TRUE)"
ROCKETMQ_PER_THREAD = 4.2e6
DUCKDB_SQL = ("SELECT count(*) FROM read_parquet(?) WHERE topic = 'BenchTopic' "
              "AND TRY_CAST(properties['age'] AS INTEGER) BETWEEN 6 AND 9 "
              "AND properties['name'] IS NOT NULL AND lower(properties['isGender']) = 'true'")


def session():
    return _common.session("rocketfilter-bench-bulk")


def build(spark, root: str, n: int):
    """A fresh store: promotion and the group's bits set up first, then one put and dispatch."""
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store import MessageStore

    shutil.rmtree(root, ignore_errors=True)
    store = MessageStore.open(root, spark, MessageStoreConfig(promoted_properties="age,name,isGender"))
    store.create_topic(TOPIC, read_queue_nums=8, write_queue_nums=8)
    store.register_subscription_bits(GROUP, TOPIC, SELECTOR, "SQL92", 1)

    df = _common.bulk_topic_messages(spark, n, TOPIC)
    t0 = time.perf_counter()
    store.put_messages(df)
    seconds = time.perf_counter() - t0
    print(f"built: {n:,} messages put and dispatched in {seconds:.1f} s ({n / seconds:,.0f} msg/s)")
    return store


def ways(spark, store):
    """name -> a function returning the count, all over the same CommitLog files."""
    import rocketfilter
    from rocketfilter.selector import parse

    paths = [f.path for f in store.commitlog.files()]
    local = [p[len("file://"):] if p.startswith("file://") else p for p in paths]
    today = parse(SELECTOR).to_column("properties")
    frame = store.commitlog.read(spark)
    read = lambda **kw: rocketfilter.read_messages(store, TOPIC, SELECTOR, "SQL92", **kw)  # noqa: E731
    out = {
        "(0) today: compiled Column over the map": lambda: frame.where(today).count(),
        "(1) read_messages, raw map": lambda: read(promoted=False, bits=False).count(),
        "(2) read_messages, promoted": lambda: read(bits=False).count(),
        "(3) read_consume_queue, group bits": lambda: rocketfilter.read_consume_queue(
            store, TOPIC, SELECTOR, "SQL92").count(),
        # With every property promoted read_messages prefers the promoted columns; without
        # them (as over a map-only store) it takes the group's bits.
        "(3b) read_messages, group bits": lambda: read(promoted=False).count(),
    }
    try:
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET threads = {CORES}")
        out["(4) DuckDB, hand-written"] = lambda: con.execute(DUCKDB_SQL, [local]).fetchone()[0]
    except ImportError:
        print("DuckDB not installed: pip install -e '.[bench]'")
    try:
        os.environ.setdefault("POLARS_MAX_THREADS", str(CORES))
        import polars as pl

        def prop(name):  # Polars 2 reads a parquet map as a Map column
            return pl.col("properties").map.get(name)

        pred = ((pl.col("topic") == TOPIC) & prop("age").cast(pl.Int32, strict=False).is_between(6, 9)
                & prop("name").is_not_null() & (prop("isGender").str.to_lowercase() == "true"))
        out["(5) Polars, hand-written"] = lambda: pl.scan_parquet(local).filter(pred).select(pl.len()).collect().item()
    except ImportError:
        print("Polars not installed: pip install -e '.[bench]'")
    return out


def timed(fns: dict, repeat: int) -> dict:
    counts = {name: fn() for name, fn in fns.items()}   # warm-up
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            again = fn()
            times[name].append(time.perf_counter() - t0)
            assert again == counts[name], (name, again, counts[name])
    return {name: (min(times[name]), counts[name]) for name in fns}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _common.add_store_arguments(parser, repeat=3)
    args = parser.parse_args(argv)

    spark = session()
    root = args.store or tempfile.mkdtemp(prefix="rf-bench-bulk-")
    try:
        store = _common.open_or_build(spark, args, root, build)
        n = sum(hi - lo for lo, hi in store.consumequeue_state().queues.get(TOPIC, {}).values())
        size = sum(f.size for f in store.commitlog.files())
        print(f"selector: {SELECTOR}")
        print(f"topic: {n:,} messages in {len(store.commitlog.files())} CommitLog files, {size / 2**20:.0f} MiB; "
              f"spark {spark.version} local[{CORES}], best of {args.repeat}; load average before "
              f"{_common.load_average()}")
        results = timed(ways(spark, store), args.repeat)
        print(f"load average after {_common.load_average()}")
        print(f"{'way':44s} {'seconds':>8s} {'count':>10s} {'msg/s':>12s} {'msg/s/core':>12s}")
        for name, (seconds, count) in results.items():
            print(f"{name:44s} {seconds:8.3f} {count:10,d} {n / seconds:12,.0f} {n / seconds / CORES:12,.0f}")
        print(f"{'RocketMQ evaluator (one thread)':44s} {n / ROCKETMQ_PER_THREAD:8.3f} {'':10s} "
              f"{ROCKETMQ_PER_THREAD:12,.0f} {ROCKETMQ_PER_THREAD:12,.0f}")
        counts = {c for _, c in results.values()}
        print(f"counts equal: {len(counts) == 1}")
        t = {k[:3]: v[0] for k, v in results.items()}
        checks = [("(2) at least 2x faster than (4)", "(4)", "(2)", 2.0),
                  ("(3) at least 10x faster than (1)", "(1)", "(3)", 10.0),
                  ("(1) no slower than today (0)", "(0)", "(1)", 1.0)]
        for label, slow, fast, target in checks:
            if slow in t and fast in t:
                ratio = t[slow] / t[fast]
                print(f"{label}: {slow}/{fast} = {ratio:.2f} (target >= {target:g}): "
                      f"{'OK' if ratio >= target else 'MISSED'}")
        if len(counts) != 1:
            raise SystemExit(f"counts differ: {results}")
    finally:
        if not args.store:
            shutil.rmtree(root, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
