"""The Spark compiler's output stays linear in the selector's size and shallow enough for the
JVM: long AND/OR chains, nested `=` over booleans, NOT and unary minus at the parser's depth
limit compile and agree with the reference evaluator; selectors nested too deeply for Spark fail
with a ValueError naming the limit.

Sizes are measured as the length of the Columns' text (what Spark parses, analyses and
generates code for), never as a time.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Dict, List

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from rocketfilter.selector import SelectorEvaluationError, SelectorSyntaxError, parse
from rocketfilter.selector.parser import MAX_DEPTH
from rocketfilter.selector.spark import SPARK_DEPTH_LIMIT

from ..conftest import rows_by_ansi_mode

# Property maps with values that make comparisons TRUE, FALSE, null or throw.
PROPS = ({}, {"a": "1", "b": "2", "c": "x"}, {"a": "x", "b": "2"}, {"a": "3", "b": "x", "c": "3"},
         {"a": "1", "b": "1", "c": "1"})
NAMES = ("a", "b", "c")


def _size(text: str) -> int:
    """The length of the text of all three output Columns."""
    columns = parse(text).to_columns("properties")
    return sum(len(str(columns[k])) for k in ("matched", "raw", "error"))


def _linear(build: Callable[[int], str], n: int = 40) -> None:
    """Doubling the selector at most about doubles the Columns (quadratic would be 4x)."""
    small, large = _size(build(n)), _size(build(2 * n))
    assert large <= 2.3 * small, f"{build(2)!r}...: {small} -> {large} characters"


def _chain(op: str, n: int) -> str:
    return f" {op} ".join(f"{NAMES[i % 3]} > {i}" for i in range(n))


def _alternating(n: int, leaf: Callable[[int], str] = lambda i: f"{NAMES[i % 3]} > {i}") -> str:
    """`x0 AND (x1 OR (x2 AND (...)))`: n nested AND/OR levels."""
    text = leaf(n)
    for i in range(n - 1, -1, -1):
        text = f"{leaf(i)} {'AND' if i % 2 else 'OR'} ({text})"
    return text


def _equal_chain(n: int) -> str:
    """`a = 1 = TRUE = FALSE = ...`: `=` over the boolean to its left, n levels."""
    return "a = 1" + "".join(" = FALSE" if i % 2 else " = TRUE" for i in range(n))


def _equal_nested(n: int) -> str:
    """`(c = 0) = ((b = 1) = (... = (a = 1)))`: `=` over two booleans, n levels."""
    text = "a = 1"
    for i in range(n):
        text = f"({NAMES[i % 3]} = {i}) = ({text})"
    return text


@pytest.mark.parametrize("op", ["AND", "OR"])
def test_chains_grow_linearly(spark, op):
    _linear(lambda n: _chain(op, n))
    _linear(lambda n: f" {op} ".join(f"{NAMES[i % 3]} IS NULL" for i in range(n)))


@pytest.mark.parametrize("build", [_alternating, _equal_chain, _equal_nested],
                         ids=["and-or-nesting", "equal-chain", "equal-nesting"])
def test_nesting_grows_linearly(spark, build):
    # `=` over booleans once read each operand about four times: 4^n.
    _linear(build, 5)
    _linear(build, 30)


def test_not_and_minus_add_nothing(spark):
    """NOT is pushed to the leaves and NOT NOT x is x; -(-x) is x for numbers."""
    base = _size("a = 1 AND b > 2")
    assert _size("NOT " * 200 + "(a = 1 AND b > 2)") == base
    assert _size("NOT " * 201 + "(a = 1 AND b > 2)") == _size("NOT (a = 1 AND b > 2)")
    assert _size("-" * 300 + "a = 1") == _size("--a = 1")


# Each comparison carries its own parse of the property (Integer.valueOf, Double.valueOf), so
# the parse's text is paid once per comparison, by every selector of a projection: 63 bit slots
# in one dispatch, a CASE over 150 selectors. Measured when the bounds were set: `a > 5` 601
# characters (1,827 before the short ASCII test and the decimal read of Unicode digits; 1,096
# before the cast-only-where-it-cannot-fail paths), `a > 5.5` 491.
SIMPLE_COMPARISON_BOUNDS = {"a > 5": 650, "a = 5": 650, "5 < a": 650, "a BETWEEN 6 AND 9": 720,
                            "a > 5000000000": 520, "a > 5.5": 520, "a = 'x'": 60}


@pytest.mark.parametrize("text, bound", SIMPLE_COMPARISON_BOUNDS.items(),
                         ids=list(SIMPLE_COMPARISON_BOUNDS))
def test_a_simple_comparison_compiles_small(spark, text, bound):
    size = len(str(parse(text).to_column("properties")))
    assert size <= bound, f"{text!r} compiles to {size} characters of Spark expression (bound {bound})"


# --- the deepest selectors ----------------------------------------------------------------------

def _deepest(build: Callable[[int], str]) -> str:
    """The largest ``build(n)`` the parser accepts (it rejects n + 1 for its depth)."""
    n = 1
    while True:
        assert n <= 4 * MAX_DEPTH, f"{build(3)[:60]}...: no depth limit up to {n} levels"
        try:
            parse(build(2 * n))
        except SelectorSyntaxError:
            break
        n *= 2
    low, high = n, 2 * n  # build(low) parses, build(high) does not
    while high - low > 1:
        mid = (low + high) // 2
        try:
            parse(build(mid))
            low = mid
        except SelectorSyntaxError:
            high = mid
    with pytest.raises(SelectorSyntaxError, match=str(MAX_DEPTH)):
        parse(build(low + 1))
    return build(low)


def _outcome(text: str, props: dict) -> tuple:
    selector = parse(text)
    try:
        raw = selector.evaluate(props)
    except SelectorEvaluationError:
        return (False, None, True)
    return (raw is True, raw, False)


def _check_against_evaluator(spark, texts: List[str], ansi_modes=("true", "false")) -> None:
    table = pa.table({"row": pa.array(range(len(PROPS)), pa.int32()),
                      "properties": pa.array([list(p.items()) for p in PROPS],
                                             type=pa.map_(pa.string(), pa.string()))})
    df = spark.createDataFrame(table)
    columns = []
    for i, text in enumerate(texts):
        c = parse(text).to_columns("properties")
        columns.append(F.struct(c["matched"], c["raw"], c["error"]).alias(f"c{i}"))
    for mode, rows in rows_by_ansi_mode(spark, df, columns, ansi_modes).items():
        for i, text in enumerate(texts):
            for props, row in zip(PROPS, rows):
                assert tuple(row[f"c{i}"]) == _outcome(text, props), (mode, text[:80], props)


DEEPEST: Dict[str, Callable[[int], str]] = {
    # Flat AND/OR chains have no depth limit (parentheses and NOT nest, chain length does not):
    # tests/selector/test_long_chains.py runs 1,000-term chains through all three backends.
    "not": lambda n: "NOT " * n + "(a > 1 OR b = 2)",
    "minus": lambda n: "-" * n + "a = -1",
    "equal-chain": _equal_chain,
    "is-null": lambda n: "a = 1" + " IS NULL" * n,
    "contains": lambda n: "a" + " CONTAINS 'x'" * n,
}


def test_deepest_selectors_compile_and_evaluate(spark):
    """Each shape at the parser's depth limit (MAX_DEPTH) runs in Spark and agrees with the
    reference evaluator. One ANSI mode: the structure is under test here, the comparisons'
    ANSI behaviour is the conformance tests' job (and each mode costs ~30 s of Spark planning
    for the two 400-term chains)."""
    _check_against_evaluator(spark, [_deepest(build) for build in DEEPEST.values()], ("true",))


# Where the search below starts: the depths the compiler allowed when last measured. Only a head
# start (two compiles, about 3 s each at these depths, instead of about ten): the search runs
# whenever they no longer hold.
_LAST_DEEPEST = {("_alternating", "_diagnostics"): 89, ("_alternating", "_decision"): 178,
                 ("_equal_nested", "_diagnostics"): 176}


def _passes(build: Callable[[int], str], compile_: Callable[[str], object], n: int) -> bool:
    try:
        compile_(build(n))
        return True
    except ValueError as e:
        assert f"SPARK_DEPTH_LIMIT = {SPARK_DEPTH_LIMIT}" in str(e)
        return False


@lru_cache(maxsize=None)
def _deepest_for_spark(build: Callable[[int], str], compile_: Callable[[str], object]) -> int:
    """The largest n for which ``compile_(build(n))`` passes SPARK_DEPTH_LIMIT."""
    last = _LAST_DEEPEST.get((build.__name__, compile_.__name__))
    if last and _passes(build, compile_, last) and not _passes(build, compile_, last + 1):
        return last
    good, step = 0, 32
    while step:
        if _passes(build, compile_, good + step):
            good += step
        else:
            step //= 2
    return good


def _diagnostics(text: str) -> dict:
    return parse(text).to_columns("properties")


def _decision(text: str):
    return parse(text).to_column("properties")


def test_nesting_at_the_spark_limit_evaluates(spark):
    """The deepest nesting that passes SPARK_DEPTH_LIMIT really runs: the limit is safe. Spark's
    default ANSI mode only, as above: the depth is under test here, the comparisons' ANSI
    behaviour is the conformance tests' job."""
    texts = [build(_deepest_for_spark(build, _diagnostics))
             for build in (_alternating, _equal_nested)]
    _check_against_evaluator(spark, texts, ("true",))


def test_nesting_too_deep_for_spark_names_the_limit(spark):
    with pytest.raises(ValueError, match=f"SPARK_DEPTH_LIMIT = {SPARK_DEPTH_LIMIT}"):
        _decision(_alternating(MAX_DEPTH - 10))
    # The diagnostics nest deeper than the decision: the decision alone goes further.
    decision_only = _deepest_for_spark(_alternating, _decision)
    assert decision_only > _deepest_for_spark(_alternating, _diagnostics)
    # About one expression level per AND or OR level: a compiler change that deepens each one
    # (an OR over a key lookup once counted two) shows here as a shallower limit.
    assert decision_only >= 170, decision_only
    with pytest.raises(ValueError, match="SPARK_DEPTH_LIMIT"):
        _diagnostics(_alternating(decision_only))
    text = _alternating(decision_only)
    df = spark.createDataFrame(pa.table({
        "row": pa.array(range(len(PROPS)), pa.int32()),
        "properties": pa.array([list(p.items()) for p in PROPS],
                               type=pa.map_(pa.string(), pa.string()))}))
    rows = sorted(df.select("row", _decision(text).alias("m")).collect(), key=lambda r: r.row)
    assert [r.m for r in rows] == [_outcome(text, p)[0] for p in PROPS]


@pytest.mark.parametrize("text, parses", [
    ("a > 5 OR b < 3", {"a": 1, "b": 1}),
    ("NOT (a > 5) OR b = 'x'", {"a": 1}),
    ("a BETWEEN 1 AND 4 OR b > 2", {"a": 1, "b": 1}),
    ("(a > 1 AND c = 'x') OR (a > 2 AND c = 'y') OR b < 2", {"a": 2, "b": 1}),
])
def test_an_or_chain_reads_each_comparison_parse_once(spark, text, parses):
    """A comparison that may throw is read once by an OR chain (through its key), not once for
    its error and once for its value: each Integer parse (one ``rlike`` guard) appears once per
    comparison in the decision Column."""
    decision = str(parse(text).to_column("properties"))
    assert {n: decision.count(f"rlike(properties['{n}']") for n in parses} == parses, decision
