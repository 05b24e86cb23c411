"""What the 5M-message benchmarks share: a local[2] session, the store arguments, a store opened
or built, and the load-average text printed beside every figure."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

CORES = 2


def session(app_name: str):
    """A quiet local[CORES] session with 4 GB of driver memory and no UI."""
    from pyspark.sql import SparkSession

    from rocketfilter.session import get_spark

    spark = get_spark(SparkSession.builder.appName(app_name).master(f"local[{CORES}]")
                      .config("spark.driver.memory", "4g").config("spark.ui.enabled", "false")
                      .config("spark.ui.showConsoleProgress", "false"))
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def bulk_topic_messages(spark, n: int, topic: str = "BenchTopic"):
    """bench/bulk_filter.py's topic as a DataFrame for ``put_messages`` (also bench/scale.py):
    tags Tag0..Tag3, properties age "0".."20", name on ~90 %, isGender "true"/"false", region
    and seq, 200-byte bodies; every value a hash of the row number, so any size has one shape."""
    from pyspark.sql import functions as F

    def pick(salt: str, k: int):
        return F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(k))

    props = F.map_filter(F.create_map(
        F.lit("age"), pick("age", 21).cast("string"),
        F.lit("name"), F.when(pick("name", 10) != 0, F.concat(F.lit("user-"), F.col("id").cast("string"))),
        F.lit("isGender"), F.when(pick("gender", 2) == 0, F.lit("true")).otherwise(F.lit("false")),
        F.lit("region"), F.element_at(F.array(*[F.lit(r) for r in ("eu", "us", "ap")]), (pick("r", 3) + 1).cast("int")),
        F.lit("seq"), F.col("id").cast("string"),
    ), lambda k, v: v.isNotNull())
    return (spark.range(0, n, numPartitions=max(2, n // 500_000))
            .select(F.lit(topic).alias("topic"), F.concat(F.lit("Tag"), pick("tag", 4).cast("string")).alias("tags"),
                    props.alias("properties"),
                    F.encode(F.rpad(F.col("id").cast("string"), 200, "x"), "UTF-8").alias("body")))


def add_store_arguments(parser: argparse.ArgumentParser, repeat: int) -> None:
    parser.add_argument("--messages", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--store", help="store directory (kept); default: a temporary one")
    parser.add_argument("--reuse", action="store_true", help="with --store: use the store already there")


def open_or_build(spark, args: argparse.Namespace, root: str, build):
    """The store at ``root`` when ``--reuse`` finds one there, else ``build(spark, root, n)``."""
    from rocketfilter.store import MessageStore

    if args.reuse and args.store and Path(root, "commitlog").is_dir():
        return MessageStore.open(root, spark, create=False)
    return build(spark, root, args.messages)


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())
