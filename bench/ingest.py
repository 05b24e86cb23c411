"""Ingest throughput of ``put_messages`` and the window-scan pruning of the store it builds.

Generates ``--messages`` messages with Spark itself (200-byte bodies, 5 properties, 8 queues),
puts them into a fresh store in one call, and reports:

* messages per second for the put (CommitLog write + commit) and for its dispatch, for a plain
  store and for one with three promoted properties and two registered subscriptions' exact bits
  (``--variants``), in one session, with their ratio;
* peak memory of the Python driver and of the JVM, to show that bodies stay on the executors
  (the Python driver's peak should not grow with the data);
* how many ConsumeQueue files a one-queue, 800-entry window read touches, at a few offsets.

    python bench/ingest.py [--messages 5000000] [--store /tmp/rf-bench-store] [--keep]
                           [--variants plain,promoted+bits]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

QUEUES = 8
WINDOW = 800


class JvmPeak(threading.Thread):
    """Samples the JVM's resident memory (the driver JVM hosts the executors in local mode)."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0, True

    def run(self) -> None:
        while self.running:
            try:
                with open(f"/proc/{self.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            self.peak = max(self.peak, int(line.split()[1]) * 1024)
            except OSError:
                return
            time.sleep(0.2)


def bench_messages(spark, n: int):
    """The bench topic's ``n`` messages as a DataFrame for ``put_messages`` (also used by
    bench/group_replay.py): tags Tag0..Tag4, five properties, 200-byte bodies."""
    from pyspark.sql import functions as F

    return (spark.range(0, n, numPartitions=max(2, n // 500_000))
            .select(F.lit("BenchTopic").alias("topic"),
                    F.concat(F.lit("Tag"), (F.col("id") % 5).cast("string")).alias("tags"),
                    F.create_map(F.lit("age"), (F.col("id") % 20).cast("string"),
                                 F.lit("name"), F.concat(F.lit("user"), (F.col("id") % 97).cast("string")),
                                 F.lit("region"), F.element_at(F.array(*[F.lit(r) for r in ("eu", "us", "ap")]),
                                                               (F.col("id") % 3 + 1).cast("int")),
                                 F.lit("isGender"), F.when(F.col("id") % 2 == 0, "true").otherwise("false"),
                                 F.lit("seq"), F.col("id").cast("string")).alias("properties"),
                    F.encode(F.rpad(F.col("id").cast("string"), 200, "x"), "UTF-8").alias("body")))


def _jvm_pid(spark) -> int:
    return int(spark.sparkContext._jvm.ProcessHandle.current().pid())


VARIANTS = {
    "plain": ({}, []),
    # Three properties promoted and two registered subscriptions' exact bits (SQL92 and TAG):
    # put writes the promoted columns, dispatch computes the bits.
    "promoted+bits": ({"promoted_properties": "age,name,isGender"},
                      [("GID_sql", "(age BETWEEN 6 AND 9) AND name IS NOT NULL", "SQL92"),
                       ("GID_tag", "Tag1 || Tag3", "TAG")]),
}


def ingest(spark, root: str, n: int, variant: str):
    """A fresh store of ``variant``'s settings, one put of ``n`` messages and its dispatch:
    ``(store, put seconds, dispatch seconds, entries)``."""
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store import MessageStore

    settings, subscriptions = VARIANTS[variant]
    shutil.rmtree(root, ignore_errors=True)
    store = MessageStore.open(root, spark, MessageStoreConfig(dispatch_on_put=False, **settings))
    store.create_topic("BenchTopic", read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    for group, expression, kind in subscriptions:
        store.register_subscription_bits(group, "BenchTopic", expression, kind, 1)
    df = bench_messages(spark, n)
    t0 = time.perf_counter()
    store.put_messages(df)
    t_put = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = store.dispatch()
    return store, t_put, time.perf_counter() - t0, report.entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5_000_000)
    parser.add_argument("--store", default=None, help="store directory (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the (last) store for bench/pull_*.py")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated, run in this order in one session: {', '.join(VARIANTS)}")
    args = parser.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not variants or any(v not in VARIANTS for v in variants):
        parser.error(f"--variants: choose from {', '.join(VARIANTS)}, got {args.variants!r}")

    from pyspark.sql import SparkSession

    from rocketfilter.session import get_spark

    spark = get_spark(SparkSession.builder.appName("rocketfilter-bench-ingest").master("local[2]")
                      .config("spark.driver.memory", "4g").config("spark.ui.enabled", "false"))
    spark.sparkContext.setLogLevel("ERROR")
    jvm = JvmPeak(_jvm_pid(spark))
    jvm.start()
    root = args.store or tempfile.mkdtemp(prefix="rf-bench-store-")
    n = args.messages
    driver_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    timings = {}
    for variant in variants:
        store, t_put, t_dispatch, entries = ingest(spark, root, n, variant)
        timings[variant] = (t_put, t_dispatch)
        print(f"[{variant}] put_messages {t_put:8.1f} s {n / t_put:12,.0f} msg/s;  "
              f"dispatch {t_dispatch:8.1f} s {entries / t_dispatch:12,.0f} entries/s", flush=True)
    driver_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    jvm.running = False

    print(f"messages                  {n:,}")
    for variant, (t_put, t_dispatch) in timings.items():
        print(f"{variant:16s} put_messages {t_put:8.1f} s {n / t_put:12,.0f} msg/s   "
              f"dispatch {t_dispatch:8.1f} s {n / t_dispatch:12,.0f} entries/s")
    if "plain" in timings:
        base = timings["plain"]
        for variant, (t_put, t_dispatch) in timings.items():
            if variant != "plain":
                print(f"{variant} / plain: put time {t_put / base[0]:.2f}x, dispatch time {t_dispatch / base[1]:.2f}x")
    print(f"python driver peak RSS    {driver_before / 2**20:8.0f} MiB before, {driver_after / 2**20:.0f} MiB after")
    print(f"JVM peak RSS              {jvm.peak / 2**20:8.0f} MiB (driver JVM + local executors)")
    print(f"commitlog files           {len(store.commitlog.refresh().files())}")
    print(f"consumequeue files        {len(store.consumequeue.refresh().files())}")

    max_offset = store.get_max_offset_in_queue("BenchTopic", 3)
    for offset in (0, max_offset // 3, max_offset // 2, max_offset - WINDOW):
        where = [("topic", "=", "BenchTopic"), ("queue_id", "=", 3),
                 ("queue_offset", ">=", offset), ("queue_offset", "<", offset + WINDOW)]
        files = store.consumequeue.files(where)
        read = store.consumequeue.read(spark, where=where)
        print(f"window queue 3 @ {offset:>9,}: {len(files)} file(s) by statistics, "
              f"{len(read.inputFiles())} in Spark's scan, {read.count()} rows")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"store kept at {root}")


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    main()
