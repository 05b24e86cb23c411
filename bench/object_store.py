"""A store on S3 against the same store on local disk, in one run: put, import, read_messages
and replay_group, each timed on both, with the S3/local ratio.

S3 is a moto server started on 127.0.0.1 (``tests/s3/moto.py``) unless ``--bucket`` names a
bucket of the S3 the AWS environment variables point at. moto keeps objects in its own memory
and answers over loopback, so the ratio measures rocketfilter's request pattern (listings,
HEADs, one PUT per data file and per Delta commit) more than a real network would; against a
real endpoint the per-request latency multiplies it. moto cannot complete multipart uploads
pyarrow sends, so keep data files under pyarrow's 10 MB part size there (the defaults do).

    python bench/object_store.py [--messages 200000] [--import-mb 64] [--repeat 3] [--bucket B]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

TOPIC = "Bench"
QUEUES = 4


def _messages(spark, n: int):
    from pyspark.sql import functions as F

    i = F.col("id")
    return spark.range(n, numPartitions=2).select(
        F.lit(TOPIC).alias("topic"), F.concat(F.lit("Tag"), (i % 5).cast("string")).alias("tags"),
        F.concat(F.lit("k-"), i.cast("string")).alias("keys"),
        F.create_map(F.lit("region"), F.element_at(F.array(F.lit("eu"), F.lit("us"), F.lit("ap")),
                                                   (i % 3 + 1).cast("int"))).alias("properties"),
        F.encode(F.lpad(i.cast("string"), 200, "x"), "UTF-8").alias("body"))


def _timed(work, repeat: int = 1):
    """(median seconds, last result) of ``repeat`` runs."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def _run(spark, root: str, broker: str, args) -> dict:
    import rocketfilter
    from rocketfilter.consumer.group import ConsumerGroup
    from rocketfilter.store import MessageStore

    store = MessageStore.open(f"{root}/put", spark)
    store.create_topic(TOPIC, QUEUES, QUEUES)
    df = _messages(spark, args.messages).cache()
    df.count()
    figures = {"put": _timed(lambda: len(store.put_messages(df).collect()))}
    imported = MessageStore.open(f"{root}/import", spark)
    figures["import"] = _timed(lambda: imported.import_store(broker).messages)
    figures["read_messages"] = _timed(
        lambda: rocketfilter.read_messages(store, TOPIC, "Tag1 || Tag3").count(), args.repeat)
    group = ConsumerGroup("GID_bench")
    group.add_consumer("A", {TOPIC: "Tag1 || Tag3"})
    group.add_consumer("B", {TOPIC: "*"})
    figures["replay_group"] = _timed(lambda: rocketfilter.replay_group(store, group, TOPIC).count(), args.repeat)
    df.unpersist()
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000, help="messages put (and read, replayed)")
    parser.add_argument("--import-mb", type=int, default=64, help="MB of broker commit log imported")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each read (the median is shown)")
    parser.add_argument("--bucket", help="a bucket of the S3 the AWS_* variables describe; default: moto")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    from bench._common import load_average
    from bench.import_store import generate
    from rocketfilter.session import get_spark

    base = Path(tempfile.mkdtemp(prefix="rf-objbench-"))
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, base, True)
        bucket = args.bucket
        if bucket is None:
            from tests.s3.moto import aws_env, create_bucket, moto_server

            endpoint = stack.enter_context(moto_server())
            os.environ.update(aws_env(endpoint))
            bucket = "rf-bench"
            create_bucket(endpoint, bucket)
        messages = generate(base / "broker", args.import_mb * 2**20, 4 * 2**20)
        s3_root = f"s3://{bucket}/bench-{uuid.uuid4().hex[:8]}"
        spark = get_spark(SparkSession.builder.appName("rocketfilter-bench-object-store").master("local[2]")
                          .config("spark.driver.memory", "4g").config("spark.ui.enabled", "false"),
                          store=s3_root)
        spark.sparkContext.setLogLevel("ERROR")
        before = load_average()
        local = _run(spark, str(base / "local"), str(base / "broker"), args)
        s3 = _run(spark, s3_root, str(base / "broker"), args)
        print(f"{args.messages:,} messages put; {messages:,} imported ({args.import_mb} MB of commit log); "
              f"reads: median of {args.repeat}; load average {before} before, {load_average()} after")
        print(f"{'operation':<14}{'local s':>10}{'S3 s':>10}{'S3/local':>10}{'rows':>12}")
        for name in local:
            (lt, rows), (st, s3_rows) = local[name], s3[name]
            assert rows == s3_rows, f"{name}: {rows} rows locally, {s3_rows} on S3"
            print(f"{name:<14}{lt:>10.2f}{st:>10.2f}{st / lt:>10.2f}{rows:>12,}")
        spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
