"""Single-pull latency of ``get_message`` on Spark Connect against classic, side by side.

One process, one JVM: a classic local[2] session, a Spark Connect server started inside its JVM
(as tests/conftest.py does) and a Connect client of that server. A small store is built, then
every pull runs twice at the same queue and offset, once per session, alternating, so a load
spike on a shared machine hits both alike. The answers must agree (status, next_begin_offset,
offsets). Reports p50/p95 per mode and filter, the Connect/classic ratio, each mode's floor (a
one-row query) and what the pull's setting changes (``small_query_conf``) cost.

    python bench/connect_pull_latency.py [--messages 20000] [--pulls 40]

The server is local, so the ratio is Connect's own overhead (gRPC, plan shipping, analysis on
every query); a remote server adds its network round trips, about three per pull on Connect.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
TOPIC, QUEUES = "BenchTopic", 4
SQL = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL)"


@contextmanager
def connect_mode(on: bool):
    """pyspark.sql.functions builds Connect Columns only while this variable is set."""
    saved = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    if on:
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    else:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        else:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = saved


def start_connect_server(spark) -> str:
    """A Spark Connect server in ``spark``'s JVM on a free port; its ``sc://`` URL."""
    jvm, context = spark._jvm, spark._jsc.sc()
    context.conf().set("spark.connect.grpc.binding.port", "0")
    jvm.org.apache.spark.sql.connect.service.SparkConnectService.start(context)
    service = getattr(jvm.org.apache.spark.sql.connect.service, "SparkConnectService$")
    return f"sc://localhost:{getattr(service, 'MODULE$').localPort()}"


def build_store(spark, root: str, messages: int):
    from pyspark.sql import functions as F

    from rocketfilter.store import MessageStore

    store = MessageStore.open(root, spark)
    store.create_topic(TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    i = F.col("id")
    df = spark.range(messages).select(
        F.lit(TOPIC).alias("topic"), F.concat(F.lit("Tag"), (i % 5).cast("string")).alias("tags"),
        F.create_map(F.lit("age"), (i % 12).cast("string"), F.lit("name"), F.lit("n")).alias("properties"),
        F.lit(b"x" * 200).alias("body"))
    store.put_messages(df)
    return store


def _floor(spark) -> float:
    spark.range(1).toArrow()
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        spark.range(1).toArrow()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _conf_cost(spark) -> float:
    from rocketfilter.pull.scan import small_query_conf

    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        with small_query_conf(spark):
            pass
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _answer(result) -> tuple:
    return result.status, result.next_begin_offset, tuple(result.message_queue_offsets)


def run(stores: dict, name: str, filters: dict, pulls: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    ends = {q: stores["classic"].get_max_offset_in_queue(TOPIC, q) for q in range(QUEUES)}
    times = {mode: [] for mode in stores}
    for i in range(pulls + 5):  # the first 5 warm up (reused DataFrames, footers, the JIT)
        q = rng.randrange(QUEUES)
        offset = rng.randrange(max(1, ends[q] - 64))
        answers = {}
        for mode in (stores if i % 2 else reversed(list(stores))):
            with connect_mode(mode == "connect"):
                t0 = time.perf_counter()
                result = stores[mode].get_message("bench", TOPIC, q, offset, 32, filters[mode])
                elapsed = time.perf_counter() - t0
            answers[mode] = _answer(result)
            if i >= 5:
                times[mode].append(elapsed)
        if answers["classic"] != answers["connect"]:
            raise AssertionError(f"{name} pull at queue {q} offset {offset}: classic {answers['classic']} "
                                 f"!= connect {answers['connect']}")
    p50 = {m: statistics.median(t) for m, t in times.items()}
    p95 = {m: sorted(t)[int(0.95 * (len(t) - 1))] for m, t in times.items()}
    print(f"{name:6s} pulls={pulls}  classic p50={p50['classic'] * 1000:6.1f} ms p95={p95['classic'] * 1000:6.1f} ms"
          f"  connect p50={p50['connect'] * 1000:6.1f} ms p95={p95['connect'] * 1000:6.1f} ms"
          f"  connect/classic p50 ratio {p50['connect'] / p50['classic']:.2f}")
    return p50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--pulls", type=int, default=40)
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    from rocketfilter.pull.filter import ExpressionMessageFilter
    from rocketfilter.session import get_spark
    from rocketfilter.store import MessageStore
    from rocketfilter.tags import build_subscription

    spark = get_spark(SparkSession.builder.appName("rocketfilter-bench-connect").master("local[2]")
                      .config("spark.ui.enabled", "false"))
    remote = RemoteSparkSession.builder.remote(start_connect_server(spark)).getOrCreate()
    root = tempfile.mkdtemp(prefix="rf-bench-connect-")
    t0 = time.perf_counter()
    with connect_mode(False):
        build_store(spark, root, args.messages)
    print(f"store {root}: {args.messages:,} messages in {QUEUES} queues, built in {time.perf_counter() - t0:.1f} s")
    stores, tag, sql = {}, {}, {}
    for mode, session in (("classic", spark), ("connect", remote)):
        with connect_mode(mode == "connect"):
            stores[mode] = MessageStore.open(root, session)
            tag[mode] = ExpressionMessageFilter(build_subscription(TOPIC, "Tag1 || Tag3"))
            data = stores[mode].filter_manager.build(TOPIC, "bench", SQL, "SQL92", 1)
            sql[mode] = ExpressionMessageFilter(build_subscription(TOPIC, SQL, "SQL92"), data)
            floor, conf = _floor(session), _conf_cost(session)
        print(f"{mode:8s} floor (range(1).toArrow(), p50) {floor * 1000:6.1f} ms; "
              f"small_query_conf enter+exit {conf * 1000:5.1f} ms")
    run(stores, "TAG", tag, args.pulls)
    run(stores, "SQL92", sql, args.pulls)
    remote.stop()
    spark.stop()


if __name__ == "__main__":
    main()
