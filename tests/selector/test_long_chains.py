"""Flat AND/OR chains are not nesting (issue 19 §6.3): RocketMQ's parser reads a chain in a loop,
so a 1,000-term chain compiles and runs through all three backends (Python evaluator, Spark
Columns, Arrow) with the same answers. Nesting is counted as parentheses, NOT and unary minus.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

from rocketfilter.selector import SelectorSyntaxError, parse
from rocketfilter.selector import ast as A
from rocketfilter.selector.parser import MAX_DEPTH

N = 1000
CHAINS = {
    "or": " OR ".join(f"a = '{i}'" for i in range(N)),
    "and": " AND ".join(f"a <> '{i}'" for i in range(N)),
    "mixed": " OR ".join(f"(a = '{i}' AND b > {i})" for i in range(N)),
}
PROPS = [{}, {"a": "0"}, {"a": "999", "b": "1000"}, {"a": "999", "b": "5"}, {"a": "1000"},
         {"a": "x", "b": "y"}]
EXPECTED = {
    "or": [False, True, True, True, False, False],
    "and": [False, False, False, False, True, True],
    "mixed": [False, False, True, False, False, False],
}


@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_a_long_flat_chain_parses_and_evaluates_in_python(kind):
    selector = parse(CHAINS[kind])
    assert [selector.matches(p) for p in PROPS] == EXPECTED[kind]
    assert selector.lint() is not None  # the lint walk copes with the chain too
    text = A.to_text(selector.ast)   # rendered in a loop (with a parenthesis per step)
    assert text.startswith("(" * (N - 1)) and text.count("'999'") == 1


def test_the_400_term_chain_of_the_report_parses():
    for joiner in (" OR ", " AND "):
        parse(joiner.join(f"a = '{i}'" for i in range(400)))


@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_a_long_flat_chain_through_arrow(kind):
    batch = pa.table({"properties": pa.array([list(p.items()) for p in PROPS],
                                             pa.map_(pa.string(), pa.string()))})
    assert parse(CHAINS[kind]).to_arrow().matches(batch).tolist() == EXPECTED[kind]


def test_a_long_flat_chain_through_spark(spark):
    """One small DataFrame, all three chains in one query (Spark plans long chains slowly), on
    Spark's generated code, as bulk jobs run it (the suite's session interprets by default)."""
    from pyspark.sql import functions as F

    from ..conftest import spark_engine

    df = spark.createDataFrame([(i, p) for i, p in enumerate(PROPS)], "i int, properties map<string,string>")
    with spark_engine(spark, "generated"):
        row = df.select(*[F.collect_list(F.struct("i", parse(CHAINS[k]).to_column("properties")))
                          .alias(k) for k in sorted(CHAINS)]).collect()[0]
    for kind in sorted(CHAINS):
        got = [m for _, m in sorted((r[0], r[1]) for r in row[kind])]
        assert got == EXPECTED[kind], kind


def test_nesting_is_still_counted_in_parentheses_and_not():
    with pytest.raises(SelectorSyntaxError, match="deeper than"):
        parse("(" * (MAX_DEPTH + 1) + "a = 1" + ")" * (MAX_DEPTH + 1))
    with pytest.raises(SelectorSyntaxError, match="deeper than"):
        parse("NOT " * (MAX_DEPTH + 1) + "a")
    # a chain inside parentheses inside a chain: each level of parentheses counts once
    nested = "a = 1"
    for _ in range(MAX_DEPTH // 3):  # two tree levels each: an OR and an AND
        nested = f"b = 2 OR ({nested} AND c = 3)"
    parse(nested)
