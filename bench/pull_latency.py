"""Single-pull latency of ``MessageStore.get_message``, warm, for a TAG and an SQL92 subscription,
with each pull engine side by side: pyarrow on the driver (the default) and Spark.

Uses a store made by ``bench/ingest.py --keep`` (topic ``BenchTopic``, 8 queues), or builds one
with ``--messages`` messages first. Pulls start at random offsets of random queues (the same ones
for every engine); reports p50 and p95 latency, how many Delta files each pull's window reads,
and each p50 against Spark's one-row query floor measured in the same session.

    python bench/pull_latency.py --store /tmp/rf-bench-store [--pulls 50] [--engines arrow,spark]
    python bench/pull_latency.py --messages 1000000

Targets: p50 <= 200 ms on local[2], and at most 1.5x the one-row floor (issue 23).
"""
from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
TOPIC, QUEUES = "BenchTopic", 8
SQL = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL) AND (isGender = TRUE)"
TARGET_P50 = 0.200


def _files_read(store, offset: int, queue_id: int, end: int) -> int:
    where = [("topic", "=", TOPIC), ("queue_id", "=", queue_id),
             ("queue_offset", ">=", offset), ("queue_offset", "<", end)]
    return len(store.consumequeue.files(where))


def run(store, name: str, message_filter, pulls: int, floor: float, seed: int = 7) -> float:
    rng = random.Random(seed)
    ends = {q: store.get_max_offset_in_queue(TOPIC, q) for q in range(QUEUES)}
    warm = random.Random(seed + 1)
    for _ in range(20):  # warm-up at other offsets: the JIT, footers, reused DataFrames
        q = warm.randrange(QUEUES)
        store.get_message("bench", TOPIC, q, warm.randrange(max(1, ends[q] - 1000)), 32, message_filter)
    times, cq_files, found, jobs = [], [], [], []
    for _ in range(pulls):
        q = rng.randrange(QUEUES)
        offset = rng.randrange(max(1, ends[q] - 1000))
        t0 = time.perf_counter()
        result = store.get_message("bench", TOPIC, q, offset, 32, message_filter)
        times.append(time.perf_counter() - t0)
        cq_files.append(_files_read(store, offset, q, result.next_begin_offset))
        found.append(result.message_count)
        jobs.append(result.spark_jobs)
    times.sort()
    p50, p95 = statistics.median(times), times[int(0.95 * (len(times) - 1))]
    print(f"{name:6s} pulls={pulls} p50={p50 * 1000:7.1f} ms  p95={p95 * 1000:7.1f} ms  "
          f"consumequeue files/pull: max {max(cq_files)} (of {len(store.consumequeue.files())})  "
          f"messages/pull: mean {statistics.mean(found):.1f}  Spark jobs/pull: mean "
          f"{statistics.mean(jobs):.2f} max {max(jobs)}  p50/floor {p50 / floor:.1f}  "
          f"p50 target {'met' if p50 <= TARGET_P50 else 'MISSED'}")
    return p50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--pulls", type=int, default=50)
    parser.add_argument("--engines", default="arrow,spark",
                        help="store.pull_engine values to compare (default arrow,spark)")
    args = parser.parse_args()
    root = args.store
    if root is None:
        root = tempfile.mkdtemp(prefix="rf-bench-pull-")
        subprocess.run([sys.executable, str(REPO / "bench" / "ingest.py"), "--messages",
                        str(args.messages), "--store", root, "--keep"], check=True)

    from pyspark.sql import SparkSession

    from rocketfilter.pull.filter import ExpressionMessageFilter
    from rocketfilter.session import get_spark
    from rocketfilter.store import MessageStore
    from rocketfilter.tags import build_subscription

    spark = get_spark(SparkSession.builder.appName("rocketfilter-bench-pull").master("local[2]")
                      .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    spark.sparkContext.setLogLevel("ERROR")
    store = MessageStore.open(root, spark)
    print(f"store {root}: {sum(store.get_max_offset_in_queue(TOPIC, q) for q in range(QUEUES)):,} entries")
    tag = ExpressionMessageFilter(build_subscription(TOPIC, "Tag1 || Tag3"))
    data = store.filter_manager.build(TOPIC, "bench", SQL, "SQL92", 1)
    sql = ExpressionMessageFilter(build_subscription(TOPIC, SQL, "SQL92"), data)
    floor = _query_floor(spark)
    print(f"Spark floor (spark.range(1).toArrow(), p50 of 20): {floor * 1000:.1f} ms")
    p50s = {}
    for engine in args.engines.split(","):
        store.pull_engine = engine
        print(f"pull_engine={engine}")
        for name, message_filter in (("TAG", tag), ("SQL92", sql)):
            p50s[engine, name] = run(store, name, message_filter, args.pulls, floor)
    engines = args.engines.split(",")
    for other in engines[1:]:
        for name in ("TAG", "SQL92"):
            print(f"{name}: {other} p50 / {engines[0]} p50 = {p50s[other, name] / p50s[engines[0], name]:.1f}")


def _query_floor(spark) -> float:
    """The cost of any Spark query on this machine now: a pull usually makes one."""
    spark.range(1).toArrow()
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        spark.range(1).toArrow()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


if __name__ == "__main__":
    main()
