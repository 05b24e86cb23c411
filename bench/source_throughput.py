"""A batch read of a topic through the ``rocketmq`` source against ``read_messages``, in one run.

Builds (or reuses, ``--store DIR --reuse``) a store with one ``--messages``-message topic over 8
queues (200-byte bodies, 5 tags, 5 properties: bench/ingest.py's generator), then reads what
three subscriptions deliver, every column of every delivered row, each way best of ``--repeat``
after a warm-up, in interleaved rounds, into Spark's ``noop`` sink (the rows are produced, not
kept):

* ``spark.read.format("rocketmq")`` (Arrow batches from the source's Python reader);
* ``rocketfilter.read_messages`` (a Spark plan over the CommitLog's parquet files);

and checks that both deliver the same number of rows. Prints messages of the topic per second
and the ratio source / read_messages (above 1: the source is faster).

    python bench/source_throughput.py [--messages 5000000] [--repeat 2] [--store DIR [--reuse]]
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
SUBSCRIPTIONS = [("*", "TAG"), ("Tag1 || Tag3", "TAG"), ("age BETWEEN 6 AND 9 AND region = 'eu'", "SQL92")]


def session():
    return _common.session("rocketfilter-bench-source")


def build(spark, root: str, n: int):
    sys.path.insert(0, str(REPO / "bench"))
    from ingest import QUEUES, bench_messages
    from rocketfilter.store import MessageStore

    shutil.rmtree(root, ignore_errors=True)
    store = MessageStore.open(root, spark)
    store.create_topic(TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    t0 = time.perf_counter()
    store.put_messages(bench_messages(spark, n))   # its topic is BenchTopic
    seconds = time.perf_counter() - t0
    print(f"built: {n:,} messages put and dispatched in {seconds:.1f} s ({n / seconds:,.0f} msg/s)")
    return store


def ways(spark, store, sub: str, kind: str):
    """({name: a function that reads every delivered row into the noop sink and returns the
    seconds}, {name: rows delivered}) for the two ways."""
    import rocketfilter

    frames = {"source": rocketfilter.read(spark, store.uri, TOPIC, sub, kind),
              "read_messages": rocketfilter.read_messages(store, TOPIC, sub, kind)}

    def timed(df):
        def fn():
            t0 = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            return time.perf_counter() - t0
        return fn
    return {name: timed(df) for name, df in frames.items()}, {name: df.count() for name, df in frames.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _common.add_store_arguments(parser, repeat=2)
    args = parser.parse_args(argv)

    spark = session()
    root = args.store or tempfile.mkdtemp(prefix="rf-bench-source-")
    try:
        store = _common.open_or_build(spark, args, root, build)
        n = sum(hi - lo for lo, hi in store.consumequeue_state().queues.get(TOPIC, {}).values())
        print(f"topic: {n:,} messages in {len(store.commitlog.files())} CommitLog files; spark {spark.version} "
              f"local[{CORES}], best of {args.repeat} after a warm-up; load average "
              f"{_common.load_average()}")
        print(f"{'subscription':44s} {'way':14s} {'seconds':>8s} {'rows':>10s} {'msg/s':>12s}")
        ratios = []
        for sub, kind in SUBSCRIPTIONS:
            fns, counts = ways(spark, store, sub, kind)
            for fn in fns.values():
                fn()   # warm-up
            best = {name: min(fns[name]() for _ in range(args.repeat)) for name in fns}
            for name, seconds in best.items():
                print(f"{kind + ' ' + sub:44s} {name:14s} {seconds:8.2f} {counts[name]:10,d} {n / seconds:12,.0f}")
            if counts["source"] != counts["read_messages"]:
                raise SystemExit(f"{sub}: the source delivered {counts['source']} rows, read_messages "
                                 f"{counts['read_messages']}")
            ratios.append(best["read_messages"] / best["source"])
            print(f"{'':44s} ratio source/read_messages (speed): {ratios[-1]:.2f}")
        print(f"load average after {_common.load_average()}")
    finally:
        if not args.store:
            shutil.rmtree(root, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
