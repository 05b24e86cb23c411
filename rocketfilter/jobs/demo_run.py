"""The demo behind ``rocketfilter demo`` and ``spark_jobs/demo.py`` (:mod:`rocketfilter.jobs.demo`, whose
parser stays free of Spark): ten messages, one tag subscription and one SQL92 selector, and what
each delivers."""
from __future__ import annotations

import sys
from typing import Dict, List, Optional, TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rocketfilter.functions import sql92, tag_exact_filter, tag_filter
from rocketfilter.message_columns import normalize_properties_column
from rocketfilter.tags import tags_code
from rocketfilter.text_table import format_table

DEFAULT_TAGS = "TAG_A || TAG_C"
DEFAULT_SELECTOR = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL) AND (isGender = TRUE)"
_TAG_NAMES = ("TAG_A", "TAG_B", "TAG_C")


def _seed_properties(i: int) -> Dict[str, str]:
    properties = {"age": str(i), "isGender": "true" if i % 2 == 0 else "false"}
    if i != 8:  # one message without a name, so IS NOT NULL has something to reject
        properties["name"] = f"user-{i}"
    return properties


def seed_properties() -> Dict[str, List[str]]:
    """The seed messages' property names and values, for ``Selector.lint(known_properties=...)``."""
    known: Dict[str, List[str]] = {}
    for i in range(10):
        for name, value in _seed_properties(i).items():
            known.setdefault(name, []).append(value)
    return known


def seed_messages(spark: SparkSession) -> DataFrame:
    """Ten messages: msg_id, tags, tags_code (as the broker computes it) and properties."""
    rows = []
    for i in range(10):
        tags = _TAG_NAMES[i % 3]
        rows.append((f"msg-{i}", tags, tags_code(tags), _seed_properties(i)))
    return spark.createDataFrame(
        rows, "msg_id string, tags string, tags_code bigint, properties map<string,string>"
    )


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
