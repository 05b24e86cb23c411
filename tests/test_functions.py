"""The DataFrame-facing filters: tag_filter, tag_exact_filter and sql92."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from rocketfilter.functions import sql92, tag_exact_filter, tag_filter
from rocketfilter.selector import SelectorSyntaxError, parse
from rocketfilter.tags import tags_code

TAGS = ["TagA", "TagB", "Aa", "BB", None, "", "f5a5a608", "TagA||TagB"]


@pytest.fixture(scope="module")
def messages(spark):
    rows = [(i, t, tags_code(t)) for i, t in enumerate(TAGS)]
    return spark.createDataFrame(rows, "i int, tags string, tags_code bigint")


def _ids(df):
    return sorted(r.i for r in df.select("i").collect())


@pytest.mark.parametrize(
    "sub_string, broker, delivered",
    [
        ("TagA || Aa", [0, 2, 3], [0, 2]),                # "BB" collides with "Aa" at the broker only
        ("*", list(range(len(TAGS))), list(range(len(TAGS)))),
        (None, list(range(len(TAGS))), list(range(len(TAGS)))),
        ("f5a5a608", [4, 5, 6], [6]),                     # hash 0 == an untagged message's code
        ("   ", [], []),
    ],
)
def test_tag_filters(messages, sub_string, broker, delivered):
    assert _ids(messages.filter(tag_filter(sub_string))) == broker
    both = messages.filter(tag_filter(sub_string, F.col("tags_code"))).filter(tag_exact_filter(sub_string, "tags"))
    assert _ids(both) == delivered


def test_tag_filter_rejects_what_rocketmq_rejects():
    with pytest.raises(ValueError, match="subString split error"):
        tag_filter("||")
    with pytest.raises(ValueError, match="subString split error"):
        tag_exact_filter("||")


def test_sql92_is_the_selector_column(spark):
    text = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL) AND (isGender = TRUE)"
    props = [{"age": "7", "name": "n", "isGender": "true"}, {"age": "7", "isGender": "true"},
             {"age": "x", "name": "n", "isGender": "true"}, {"age": "9", "name": "n", "isGender": "TRUE"}, {}]
    df = spark.createDataFrame(list(enumerate(props)), "i int, properties map<string,string>")
    got = sorted((r.i, r.m) for r in df.select("i", sql92(text).alias("m")).collect())
    want = [(i, parse(text).matches(p)) for i, p in enumerate(props)]
    assert got == want
    assert [m for _, m in got] == [True, False, False, True, False]


def test_sql92_on_top_level_columns(spark):
    df = spark.createDataFrame([(1, 5), (2, 10)], "i int, age int")
    assert _ids(df.filter(sql92("age > 6", properties=None, schema=df.schema))) == [2]


def test_sql92_syntax_error_is_a_value_error():
    with pytest.raises(SelectorSyntaxError):
        sql92("a >")
    assert issubclass(SelectorSyntaxError, ValueError)
