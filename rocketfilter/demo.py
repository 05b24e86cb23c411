"""The demo behind ``rocketfilter demo`` and ``spark_jobs/demo.py``: ten messages, one tag
subscription and one SQL92 selector, and what each delivers."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence, TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rocketfilter.functions import sql92, tag_exact_filter, tag_filter
from rocketfilter.message import normalize_properties_column
from rocketfilter.tags import tags_code

DEFAULT_TAGS = "TAG_A || TAG_C"
DEFAULT_SELECTOR = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL) AND (isGender = TRUE)"
_TAG_NAMES = ("TAG_A", "TAG_B", "TAG_C")


def seed_messages(spark: SparkSession) -> DataFrame:
    """Ten messages: msg_id, tags, tags_code (as the broker computes it) and properties."""
    rows = []
    for i in range(10):
        tags = _TAG_NAMES[i % 3]
        properties = {"age": str(i), "isGender": "true" if i % 2 == 0 else "false"}
        if i != 8:  # one message without a name, so IS NOT NULL has something to reject
            properties["name"] = f"user-{i}"
        rows.append((f"msg-{i}", tags, tags_code(tags), properties))
    return spark.createDataFrame(
        rows, "msg_id string, tags string, tags_code bigint, properties map<string,string>"
    )


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain fixed-width text table."""
    cells = [[str(h) for h in header]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[c]) for row in cells) for c in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "-"


def run_demo(
    spark: SparkSession,
    tag_expression: str = DEFAULT_TAGS,
    selector: str = DEFAULT_SELECTOR,
    out: Optional[TextIO] = None,
) -> None:
    """Print what ``tag_expression`` and ``selector`` deliver out of :func:`seed_messages`.

    Raises ValueError (before any Spark job) when either expression is one RocketMQ rejects.
    """
    out = out or sys.stdout
    broker_tag = tag_filter(tag_expression, "tags_code")
    client_tag = tag_exact_filter(tag_expression, "tags")
    selected = sql92(selector, "properties")
    # The broker evaluates selectors on the properties after their string round trip.
    messages = seed_messages(spark).withColumn("properties", normalize_properties_column("properties"))

    rows = messages.select(
        "msg_id", "tags", "tags_code",
        broker_tag.alias("broker"), client_tag.alias("client"),
        F.col("properties")["age"].alias("age"), F.col("properties")["name"].alias("name"),
        F.col("properties")["isGender"].alias("isGender"), selected.alias("sql92"),
    ).orderBy("msg_id").collect()

    tag_rows: List[list] = [
        [r.msg_id, r.tags, r.tags_code, _yes(r.broker), _yes(r.client), _yes(r.broker and r.client)]
        for r in rows
    ]
    print(f"TAG subscription {tag_expression!r}", file=out)
    print(format_table(["msg_id", "tags", "tags_code", "broker", "client", "delivered"], tag_rows), file=out)
    delivered_tags = [r.msg_id for r in rows if r.broker and r.client]
    print(f"delivered: {len(delivered_tags)} of {len(rows)}\n", file=out)

    sql_rows = [[r.msg_id, r.age, r.name, r.isGender, _yes(r.sql92)] for r in rows]
    print(f"SQL92 selector {selector!r}", file=out)
    print(format_table(["msg_id", "age", "name", "isGender", "delivered"], sql_rows), file=out)
    print(f"delivered: {sum(1 for r in rows if r.sql92)} of {len(rows)}", file=out)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tags", default=DEFAULT_TAGS, metavar="EXPR",
                        help=f"tag subscription expression (default: {DEFAULT_TAGS!r})")
    parser.add_argument("--selector", default=DEFAULT_SELECTOR, metavar="SQL92",
                        help="SQL92 selector (default: the age/name/isGender example)")
    parser.add_argument("--master", default=None,
                        help="Spark master URL (default: spark-submit's, else local[*])")


def demo_command(args: argparse.Namespace, spark: Optional[SparkSession] = None) -> int:
    """Run the demo for parsed ``args``; returns the exit code."""
    from rocketfilter.selector import parse
    from rocketfilter.session import get_spark
    from rocketfilter.tags import build_subscription

    # Reject bad expressions before paying for a Spark start.
    build_subscription("", args.tags)
    parse(args.selector)
    if spark is None:
        builder = SparkSession.builder.appName("rocketfilter-demo")
        if args.master:
            builder = builder.master(args.master)
        spark = get_spark(builder, verbose=getattr(args, "verbose", False))
    run_demo(spark, tag_expression=args.tags, selector=args.selector)
    return 0
