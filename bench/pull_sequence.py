"""Entries per second: ``pull_sequence`` over every queue of a topic in one Spark job, against a
Python loop of ``get_message`` over the same kind of range, side by side in one run.

Uses a store made by ``bench/ingest.py --keep`` (topic ``BenchTopic``, 8 queues). The loop is
timed over ``--loop-pulls`` pulls (it would take hours over millions of entries); both rates are
entries scanned (queue offsets advanced) per second, so the ratio compares like with like.

    python bench/pull_sequence.py --store /tmp/rf-bench-store [--loop-pulls 40]

Target: pull_sequence at least 50x the loop's rate.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
TOPIC, QUEUES, TARGET = "BenchTopic", 8, 50.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--loop-pulls", type=int, default=40)
    parser.add_argument("--tags", default="Tag1 || Tag3")
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from rocketfilter.pull.filter import ExpressionMessageFilter
    from rocketfilter.pull.sequence import pull_sequence
    from rocketfilter.session import get_spark
    from rocketfilter.store import MessageStore
    from rocketfilter.tags import build_subscription

    spark = get_spark(SparkSession.builder.appName("rocketfilter-bench-sequence").master("local[2]")
                      .config("spark.driver.memory", "4g").config("spark.ui.enabled", "false"))
    spark.sparkContext.setLogLevel("ERROR")
    store = MessageStore.open(args.store, spark)
    message_filter = ExpressionMessageFilter(build_subscription(TOPIC, args.tags))
    total = sum(store.get_max_offset_in_queue(TOPIC, q) - store.get_min_offset_in_queue(TOPIC, q)
                for q in range(QUEUES))

    # Warm both paths once (Python workers, JIT) on a small range.
    pull_sequence(store, TOPIC, message_filter, end_offsets={q: 1000 for q in range(QUEUES)},
                  output="pulls").count()
    store.get_message("bench", TOPIC, 0, 0, 32, message_filter)

    t0 = time.perf_counter()
    pulls = pull_sequence(store, TOPIC, message_filter, output="pulls")
    summary = pulls.agg(F.count(F.lit(1)).alias("pulls")).first()
    t_seq = time.perf_counter() - t0

    t0 = time.perf_counter()
    offset, scanned, delivered = 0, 0, 0
    for _ in range(args.loop_pulls):
        result = store.get_message("bench", TOPIC, 3, offset, 32, message_filter)
        scanned += result.next_begin_offset - offset
        delivered += result.message_count
        offset = result.next_begin_offset
    t_loop = time.perf_counter() - t0

    seq_rate, loop_rate = total / t_seq, scanned / t_loop
    print(f"pull_sequence: {total:,} entries, {summary['pulls']:,} pulls, all {QUEUES} queues, "
          f"{t_seq:.1f} s -> {seq_rate:,.0f} entries/s")
    print(f"get_message loop: {args.loop_pulls} pulls, {scanned:,} entries ({delivered} delivered), "
          f"{t_loop:.1f} s -> {loop_rate:,.0f} entries/s")
    ratio = seq_rate / loop_rate
    print(f"ratio {ratio:.1f}x (target >= {TARGET:.0f}x: {'met' if ratio >= TARGET else 'MISSED'})")


if __name__ == "__main__":
    main()
