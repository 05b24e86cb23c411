"""The ``rocketmq`` sink's put, side by side: each put in a process of its own, the warm put
server, ``df.write.format("rocketmq")`` end to end (its tasks stage, its commit puts through the
server), and ``store.put_messages(df)`` in the session, the direct call.

    PYTHONPATH=$PWD python bench/sink_puts.py [--puts 5] [--rows 1000]

Each mode makes ``--puts`` puts of ``--rows`` rows into one topic; the table gives the first
put (a server's start), the median of the others, and the median's ratio to the direct call.
The load average is printed, since the machine may be shared.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TOPIC = "SinkBench"


def _rows(tag: str, rows: int) -> pa.Table:
    return pa.table({"tags": ["TagA"] * rows, "keys": [f"{tag}-{i}" for i in range(rows)],
                     "body": [f"body {tag} {i}".encode() for i in range(rows)]})


def _timed(puts: int, one) -> list:
    times = []
    for i in range(puts):
        started = time.perf_counter()
        one(i)
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puts", type=int, default=5)
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from rocketfilter.session import get_spark
    from rocketfilter.source import put_server
    from rocketfilter.source.sink import put_staged
    from rocketfilter.store import MessageStore

    spark = get_spark()
    root = tempfile.mkdtemp(prefix="rf-sink-bench-")
    store = MessageStore.open(f"{root}/store", spark)
    store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
    put_server.stop_servers()   # every server this run uses starts in it

    def staged(mode: str, i: int) -> list:
        path = f"{root}/{mode}-{i}.parquet"
        pq.write_table(_rows(f"{mode}{i}", args.rows), path)
        return [path]

    def own(i):
        os.environ[put_server.IDLE_ENV] = "0"
        put_staged(store.uri, staged("own", i), TOPIC, None)

    def warm(i):
        os.environ[put_server.IDLE_ENV] = "120"
        put_staged(store.uri, staged("warm", i), TOPIC, None)

    def sink(i):
        df = spark.read.parquet(*staged("sink", i))
        df.write.format("rocketmq").mode("append").option("store", store.uri).option("topic", TOPIC).save()

    def direct(i):
        store.put_messages(spark.read.parquet(*staged("direct", i)).withColumn("topic", F.lit(TOPIC)))

    results = {}
    for name, one in (("own process per put", own), ("warm put server", warm),
                      ("format rocketmq save (server)", sink), ("put_messages in the session", direct)):
        results[name] = _timed(args.puts, one)
    os.environ.pop(put_server.IDLE_ENV, None)
    put_server.stop_servers()
    total = sum(store.get_max_offset_in_queue(TOPIC, q) for q in range(4))
    assert total == 4 * args.puts * args.rows, f"stored {total} messages"
    floor = statistics.median(results["put_messages in the session"][1:])
    print(f"{args.puts} puts of {args.rows} rows each; load average {os.getloadavg()[0]:.2f}")
    print(f"{'mode':32s} {'first s':>8s} {'median s':>9s} {'x direct':>9s}")
    for name, times in results.items():
        rest = statistics.median(times[1:]) if len(times) > 1 else times[0]
        print(f"{name:32s} {times[0]:8.2f} {rest:9.2f} {rest / floor:9.1f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
