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
