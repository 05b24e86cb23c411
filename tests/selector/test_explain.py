"""``Selector.explain``: the evaluator's own result on every conformance case (it only adds the
deciding conditions), and the conditions named for each way a selector decides."""
from __future__ import annotations

import pytest

from rocketfilter.selector import SelectorEvaluationError, parse
from rocketfilter.selector.explain import ERROR
from tests.conftest import Conformance


def _string_runs(name):
    """(id, selector, properties as the broker sees them) of the compiled cases of ``name``."""
    for case in Conformance.compiled(name):
        run = case if "props" in case else case.get("as_string")
        if run is not None:
            yield case["id"], case["expr"], run["props"], run


@pytest.mark.parametrize("name", ["sql92_cases.jsonl", "sql92_typed_cases.jsonl"])
def test_the_result_is_the_evaluator_s_on_every_compiled_case(name):
    checked = 0
    for case_id, expr, props, run in _string_runs(name):
        selector = parse(expr)
        try:
            expected = selector.evaluate(props)
        except SelectorEvaluationError:
            expected = ERROR
        explained = selector.explain(props)
        assert explained.result is expected or (explained.result == expected and expected is not ERROR), case_id
        assert explained.matched == run["matched"], case_id
        assert explained.deciding, case_id
        if expected is ERROR:   # the condition that threw is named, with Java's message
            assert any(c.result is ERROR and c.error for c in explained.deciding), case_id
        checked += 1
    assert checked > 300


@pytest.mark.parametrize("text, props, result, deciding", [
    ("a > 4 AND region = 'eu'", {"a": "3", "region": "eu"}, False, [("(a > 4)", ">", False, {"a": "3"})]),
    ("a > 4 AND region = 'eu'", {"a": "5"}, None, [("(region = 'eu')", "=", None, {"region": None})]),
    ("a > 4 OR region = 'eu'", {"a": "2", "region": "eu"}, True, [("(region = 'eu')", "=", True, {"region": "eu"})]),
    ("a > 4 OR region = 'eu'", {"a": "2", "region": "us"}, False,
     [("(a > 4)", ">", False, {"a": "2"}), ("(region = 'eu')", "=", False, {"region": "us"})]),
    # a's error aborts the selector although b = 2 would have been TRUE
    ("a = 1 OR b = 2", {"a": "x", "b": "2"}, ERROR, [("(a = 1)", "=", ERROR, {"a": "x"})]),
    ("a BETWEEN 2 AND 6", {"a": "9"}, False, [("(a <= 6)", "<=", False, {"a": "9"})]),
    ("b IS NOT NULL", {}, False, [("(NOT (b IS NULL))", "IS NOT NULL", False, {"b": None})]),
    ("region NOT IN ('eu', 'us')", {"region": "eu"}, False,
     [("(region NOT IN ('eu', 'us'))", "NOT IN", False, {"region": "eu"})]),
    ("NOT (a > 1 AND b > 1)", {"a": "5", "b": "2"}, False,
     [("(a > 1)", ">", True, {"a": "5"}), ("(b > 1)", ">", True, {"b": "2"})]),
])
def test_the_deciding_conditions(text, props, result, deciding):
    explained = parse(text).explain(props)
    assert explained.result is result or explained.result == result
    got = [(c.text, c.operator, c.result, c.properties) for c in explained.deciding]
    assert got == deciding


def test_text():
    assert str(parse("a = 1").explain({"a": "1.0"})) == (
        "ERROR: (a = 1) throws with a = '1.0' (NumberFormatException: For input string: \"1.0\")")
    assert str(parse("a > 4 AND region = 'eu'").explain({"a": "5"})) == "NULL: (region = 'eu') is NULL with region absent"
