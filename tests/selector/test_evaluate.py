"""The reference evaluator: hand-built ASTs for each rule of SEMANTICS §5, then every
conformance case (compile outcome, raw result, error, broker decision on the map and the wire)."""
from __future__ import annotations

import math
from functools import lru_cache

import pytest

from rocketfilter.javalang import Integer, Long
from rocketfilter.selector import ast as A
from rocketfilter.selector.errors import SelectorEvaluationError, SelectorSyntaxError
from rocketfilter.selector.evaluate import evaluate, matches
from rocketfilter.selector.parser import parse_ast

ERROR = "<evaluation error>"

a, b = A.Property("a"), A.Property("b")
NULL, TRUE, FALSE = A.BoolConstant(None), A.BoolConstant(True), A.BoolConstant(False)


def s(value):
    return A.Constant(value, A.STRING)


def i(value):
    return A.Constant(value, A.INTEGER)


def d(value):
    return A.Constant(value, A.DOUBLE)


def outcome(node, props):
    """The raw result, or ERROR where Java's evaluation throws."""
    try:
        return evaluate(node, props)
    except SelectorEvaluationError:
        return ERROR


# --- §5.10's truth table, on hand-built trees -------------------------------------------------

TABLE = [  # selector, then the result for: a missing, "x", "5"
    ("a = 'x'", A.Equal(a, s("x")), None, True, False),
    ("'x' = a", A.Equal(s("x"), a), False, True, False),
    ("a <> 'x'", A.Not(A.Equal(a, s("x"))), None, False, True),
    ("'x' <> a", A.Not(A.Equal(s("x"), a)), True, False, True),
    ("a IS NULL", A.Equal(a, NULL), True, False, False),
    ("a > 4", A.Compare(">", a, i(4)), None, ERROR, True),
    ("a = 5", A.Equal(a, i(5)), None, ERROR, True),
    ("a IN ('x')", A.In(a, ("x",), False), None, True, False),
    ("a NOT IN ('x')", A.In(a, ("x",), True), None, False, True),
    ("a CONTAINS 'x'", A.StringOp("CONTAINS", a, "x", False), False, True, False),
    ("a NOT CONTAINS 'x'", A.StringOp("CONTAINS", a, "x", True), False, False, True),
    ("a", A.BoolCast(a), None, False, False),
    ("NOT a", A.Not(A.BoolCast(a)), None, True, True),
    ("a = TRUE", A.Equal(a, TRUE), None, False, False),
    ("a = FALSE", A.Equal(a, FALSE), None, True, True),
]


@pytest.mark.parametrize("text,node,missing,x,five", TABLE, ids=[row[0] for row in TABLE])
def test_truth_table(text, node, missing, x, five):
    assert [outcome(node, {}), outcome(node, {"a": "x"}), outcome(node, {"a": "5"})] == \
        [missing, x, five]


# --- logic ------------------------------------------------------------------------------------

A_IS_1 = A.Equal(a, i(1))  # an error when a = "x"
B_IS_2 = A.Equal(b, i(2))


def test_or_short_circuit_depends_on_operand_order():
    props = {"a": "x", "b": "2"}
    assert outcome(A.Or(A_IS_1, B_IS_2), props) == ERROR
    assert outcome(A.Or(B_IS_2, A_IS_1), props) is True
    assert matches(A.Or(A_IS_1, B_IS_2), props) is False


def test_and_short_circuits_on_false_only():
    props = {"a": "x", "b": "3"}
    assert outcome(A.And(B_IS_2, A_IS_1), props) is False
    assert outcome(A.And(A.Equal(b, NULL), A_IS_1), props) is False  # b present: FALSE first
    assert outcome(A.And(A.Equal(A.Property("c"), i(1)), A_IS_1), props) == ERROR  # null goes on


@pytest.mark.parametrize("left,right,and_,or_", [
    (True, True, True, True), (True, False, False, True), (True, None, None, True),
    (False, None, False, None), (None, False, False, None), (None, None, None, None),
    (None, True, None, True), (False, False, False, False),
])
def test_three_valued_logic(left, right, and_, or_):
    node_l, node_r = A.BoolConstant(left), A.BoolConstant(right)
    assert evaluate(A.And(node_l, node_r), {}) is and_
    assert evaluate(A.Or(node_l, node_r), {}) is or_
    assert evaluate(A.Not(node_l), {}) is (None if left is None else not left)


def test_boolcast_only_a_java_boolean_is_true():
    assert evaluate(A.BoolCast(a), {"a": True}) is True
    assert evaluate(A.BoolCast(a), {"a": False}) is False
    assert evaluate(A.BoolCast(a), {"a": "true"}) is False
    assert evaluate(A.BoolCast(a), {"a": 1}) is False


def test_not_of_a_non_boolean_is_a_class_cast_error():
    assert outcome(A.Not(i(1)), {}) == ERROR


# --- equality ---------------------------------------------------------------------------------

@pytest.mark.parametrize("left,right,expected", [
    (math.nan, math.nan, True),            # Double.equals is bitwise
    (0.0, -0.0, False),
    (Integer(0), -0.0, False),             # Integer -> double, then Double.compareTo
    (Integer(0), 0.0, True),
    (Integer(5), Long(5), True),
    (Long(2 ** 53 + 1), float(2 ** 53), True),  # the long is rounded to a double first
    ("5", Integer(5), True),
    ("+5", Long(5), True),
    ("1.0", Integer(1), ERROR),            # Integer.valueOf("1.0") throws
    ("1", 1.0, True),
    ("abc", False, True),                  # Boolean.valueOf("abc") is false
    ("TRUE", True, True),
    (True, "true", ERROR),                 # RocketMQ casts the Boolean to String
    (True, Integer(1), False),             # incomparable
    (Integer(1), True, False),
    ("\U0001F600", "\ud83d\ude00", True),  # one string for Java: the same UTF-16 units
])
def test_equal_coercions(left, right, expected):
    assert outcome(A.Equal(a, b), {"a": left, "b": right}) == expected


def test_equal_with_nulls_is_asymmetric():
    assert evaluate(A.Equal(a, b), {"b": "x"}) is None
    assert evaluate(A.Equal(a, b), {"a": "x"}) is False
    assert evaluate(A.Equal(a, b), {}) is True


def test_equal_on_opaque_objects_is_identity():
    thing = object()
    assert evaluate(A.Equal(a, b), {"a": thing, "b": thing}) is True
    assert evaluate(A.Equal(a, b), {"a": thing, "b": object()}) is False
    assert evaluate(A.Equal(a, b), {"a": thing, "b": "x"}) is False
    assert evaluate(A.Equal(a, b), {"a": "x", "b": thing}) is False


# --- relational -------------------------------------------------------------------------------

def test_rel_null_left_skips_the_right_side():
    assert evaluate(A.Compare(">", a, b), {"b": object()}) is None
    assert outcome(A.Compare(">", i(1), b), {"b": object()}) == ERROR
    assert outcome(A.Compare(">", a, i(1)), {"a": object()}) == ERROR
    assert evaluate(A.Compare(">", i(1), b), {}) is None


@pytest.mark.parametrize("op,left,right,expected", [
    (">", "10", "9", True),                # two strings compare as doubles
    (">", "2", "10", False),
    ("<", "x", "1", ERROR),
    (">", "NaN", "Infinity", True),        # NaN is above everything
    (">=", "NaN", "NaN", True),
    ("<", -0.0, 0.0, True),
    ("<", Integer(-1), -0.0, True),
    (">", Long(3_000_000_000), Integer(5), True),
    (">", 4.5, "NaN", False),              # R := Double.valueOf("NaN")
    (">", Integer(4), "NaN", ERROR),       # R := Integer.valueOf("NaN")
    (">", Integer(1), True, False),        # incomparable: -1
    ("<", Integer(1), True, True),
    ("<", "1", True, True),                # L := Boolean.valueOf("1"), false < true
    (">", True, False, True),              # false < true
])
def test_rel_coercions(op, left, right, expected):
    assert outcome(A.Compare(op, a, b), {"a": left, "b": right}) == expected


def test_between_shapes_inherit_null_and_errors():
    between = A.And(A.Compare(">=", a, i(1)), A.Compare("<=", a, i(2)))
    not_between = A.Or(A.Compare("<", a, i(1)), A.Compare(">", a, i(2)))
    assert [outcome(between, {}), outcome(between, {"a": "x"}), outcome(not_between, {"a": "0"})] \
        == [None, ERROR, True]


# --- IN, string operators, NEG ----------------------------------------------------------------

def test_in_is_exact_string_membership():
    node = A.In(a, ("1", "x"), False)
    assert [evaluate(node, {"a": v}) for v in ("1", "1.0", "X", Integer(1), True)] == \
        [True, False, False, None, None]
    assert evaluate(A.In(a, ("1",), True), {"a": Integer(1)}) is None


def test_string_ops_empty_search_skips_the_operand():
    erroring = A.Equal(a, i(1))  # a Boolean-valued operand that throws for a = "x"
    assert evaluate(A.StringOp("CONTAINS", erroring, "", False), {"a": "x"}) is False
    assert evaluate(A.StringOp("ENDSWITH", erroring, "", True), {"a": "x"}) is False
    assert outcome(A.StringOp("CONTAINS", erroring, "x", False), {"a": "x"}) == ERROR


@pytest.mark.parametrize("op,value,search,expected", [
    ("CONTAINS", "abc", "b", True),
    ("STARTSWITH", "abc", "ab", True),
    ("ENDSWITH", "abc", "ab", False),
    ("STARTSWITH", "\U0001F600x", "\ud83d", True),  # Java matches half a surrogate pair
    ("ENDSWITH", "x\U0001F600", "\ude00", True),
    ("CONTAINS", "x\U0001F600x", "\ude00x", True),
    ("CONTAINS", "\u3d00\ud83d", "\ud800", False),  # no match across unit boundaries
    ("CONTAINS", Integer(12), "1", False),
    ("CONTAINS", True, "t", False),
])
def test_string_ops(op, value, search, expected):
    assert evaluate(A.StringOp(op, a, search, False), {"a": value}) is expected
    negated = (not expected) if isinstance(value, str) else False  # non-Strings: FALSE both ways
    assert evaluate(A.StringOp(op, a, search, True), {"a": value}) is negated


@pytest.mark.parametrize("value,expected", [
    (Integer(5), Integer(-5)),
    (Integer(-2 ** 31), Integer(-2 ** 31)),  # wraps, like Java's -x
    (Long(-2 ** 63), Long(-2 ** 63)),
    (Long(2 ** 40), Long(-2 ** 40)),
    (0.0, -0.0),
    ("5", None),
    (True, None),
    (None, None),
])
def test_neg_keeps_the_java_type(value, expected):
    result = evaluate(A.Neg(a), {"a": value})
    assert (type(result), repr(result)) == (type(expected), repr(expected))


def test_neg_of_literals():
    assert evaluate(A.Equal(A.Neg(A.Constant(2 ** 31, A.LONG)), b), {"b": Integer(-2 ** 31)})
    assert evaluate(A.Equal(a, A.Neg(a)), {"a": "5"}) is False  # -"5" is null


def test_unrepresentable_property_values_are_rejected():
    with pytest.raises(ValueError):
        evaluate(A.BoolCast(a), {"a": 2 ** 64})


# --- the conformance cases --------------------------------------------------------------------

@lru_cache(maxsize=None)
def _compile(expr: str):
    """The AST, or the SelectorSyntaxError; cached because both files repeat expressions."""
    try:
        return parse_ast(expr)
    except SelectorSyntaxError as e:
        return e


def _report(case, problems):
    lines = [f"case {case['id']}: {case['expr']!r}"]
    for what, props, expected, actual in problems:
        lines.append(f"  {what}: props={props!r} expected={expected!r} actual={actual!r}")
    return "\n".join(lines)


def _check_compile(case):
    node = _compile(case["expr"])
    expected = "compiles" if case["compiled"] else "SelectorSyntaxError"
    actual = "SelectorSyntaxError" if isinstance(node, SelectorSyntaxError) else "compiles"
    detail = f" ({node})" if actual != expected and isinstance(node, Exception) else ""
    assert actual == expected, _report(case, [("compile", None, expected, actual + detail)])


def _check_run(case, node, props, expected, problems, label, wire_props=None):
    """Compare raw/eval_error/matched (and matched_wire when expected has it)."""
    want = ERROR if expected["eval_error"] else expected["raw"]
    got = outcome(node, props)
    if got != want:
        problems.append((f"{label} raw", props, want, got))
    if matches(node, props) != expected["matched"]:
        problems.append((f"{label} matched", props, expected["matched"], matches(node, props)))
    if "matched_wire" in expected:
        wire = props if wire_props is None else wire_props
        got_wire = matches(node, wire)
        if got_wire != expected["matched_wire"]:
            problems.append((f"{label} matched_wire", wire, expected["matched_wire"], got_wire))


def _compiled(case):
    node = _compile(case["expr"])
    if isinstance(node, SelectorSyntaxError):
        pytest.fail(_report(case, [("compile", None, "compiles", f"SelectorSyntaxError: {node}")]))
    return node


def test_sql92_case_compiles(sql92_case):
    _check_compile(sql92_case)


def test_typed_case_compiles(typed_case):
    _check_compile(typed_case)


def test_sql92_case_evaluates(sql92_compiled_case, typed_props):
    case = sql92_compiled_case
    node = _compiled(case)
    problems: list = []
    if "props" in case:
        _check_run(case, node, case["props"], case, problems, "string", case.get("wire_props"))
    else:
        _check_run(case, node, typed_props(case["typed_props"]), case, problems, "typed")
    assert not problems, _report(case, problems)


def test_typed_case_evaluates(typed_compiled_case, typed_props):
    case = typed_compiled_case
    node = _compiled(case)
    problems: list = []
    _check_run(case, node, typed_props(case["typed_props"]), case, problems, "typed")
    if "as_string" in case:
        strings = case["as_string"]
        _check_run(case, node, strings["props"], strings, problems, "as_string",
                   strings.get("wire_props"))
    assert not problems, _report(case, problems)
