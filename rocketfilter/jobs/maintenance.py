"""``rocketfilter promote`` and ``rocketfilter backfill``: store maintenance from the command line.

Arguments are checked before Spark starts; the store must exist (``create=False``). Progress is
logged by the store operations; a one-line summary is printed at the end.
"""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Optional, TextIO


def add_promote_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, help="the rocketfilter store URI")
    parser.add_argument("--properties", required=True, metavar="NAMES",
                        help="comma-separated property names to promote, e.g. age,region")
    parser.add_argument("--master", default=None, help="Spark master URL (default: local[*])")


def add_backfill_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, help="the rocketfilter store URI")
    parser.add_argument("--topic", action="append", default=None,
                        help="a topic to backfill (repeatable; default: every registered topic)")
    parser.add_argument("--master", default=None, help="Spark master URL (default: local[*])")


def _names(text: str) -> list:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError(f"--properties names no property: {text!r}")
    return names


def _open(args: argparse.Namespace, spark=None):
    from pyspark.sql import SparkSession

    from rocketfilter.config import load_broker_conf
    from rocketfilter.session import get_spark
    from rocketfilter.store import MessageStore
    from rocketfilter.store.tables import store_exists

    if not store_exists(args.store):  # before paying for a Spark start
        raise FileNotFoundError(f"no rocketfilter store at {args.store} (no commitlog Delta table)")
    if spark is None:
        builder = SparkSession.builder.appName("rocketfilter-maintenance")
        spark = get_spark(builder.master(args.master) if args.master else builder)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    broker_config, store_config = load_broker_conf(spark_conf=spark)
    return MessageStore.open(args.store, spark, store_config, broker_config=broker_config, create=False)


def promote_command(args: argparse.Namespace, spark=None, out: Optional[TextIO] = None) -> int:
    names = _names(args.properties)
    report = _open(args, spark).promote(names)
    print(f"promoted {report.promoted or 'nothing new'} (already: {report.already or 'none'}); "
          f"rewrote {report.files_rewritten} of {report.files_scanned} file(s), "
          f"{report.messages_rewritten} messages, in {report.seconds:.1f} s", file=out or sys.stdout)
    return 0


def backfill_command(args: argparse.Namespace, spark=None, out: Optional[TextIO] = None) -> int:
    done = _open(args, spark).backfill(args.topic)
    text = ", ".join(f"{t}: {n} entries" for t, n in done.items()) or "no registered subscription bits"
    print(f"backfilled {text}", file=out or sys.stdout)
    return 0
