"""Java's rules in rocketfilter.javalang: boxed values, the valueOf parsers, String over UTF-16,
Double ordering and the coercing comparison of RocketMQ's ComparisonExpression."""
from __future__ import annotations

import math
import struct
from functools import cmp_to_key

import pytest

from rocketfilter import javalang as J
from rocketfilter.javalang import Integer, Long, NumberFormatError
from rocketfilter.selector.errors import SelectorEvaluationError

INT_MIN, INT_MAX, LONG_MIN, LONG_MAX = -2 ** 31, 2 ** 31 - 1, -2 ** 63, 2 ** 63 - 1


def bits(x: float) -> str:
    """Exact identity of a double, sign of zero and NaN included."""
    return "nan" if math.isnan(x) else struct.pack(">d", x).hex()


def sign(n: int) -> int:
    return (n > 0) - (n < 0)


# --- values -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value,expected_class", [
    (None, None), (True, "Boolean"), (False, "Boolean"), (0, "Integer"), (INT_MAX, "Integer"),
    (INT_MIN, "Integer"), (INT_MAX + 1, "Long"), (INT_MIN - 1, "Long"), (LONG_MIN, "Long"),
    (Long(5), "Long"), (Integer(5), "Integer"), (1.5, "Double"), (math.nan, "Double"),
    ("5", "String"), ("", "String"), (object(), "Object"), ([1], "Object"), (b"x", "Object"),
])
def test_java_value_and_class(value, expected_class):
    converted = J.java_value(value)
    assert J.java_class(value) == J.java_class(converted) == expected_class
    if expected_class in ("Integer", "Long"):
        assert type(converted).__name__ == expected_class and converted == value


@pytest.mark.parametrize("value", [LONG_MAX + 1, LONG_MIN - 1, 10 ** 30])
def test_ints_beyond_long_have_no_java_value(value):
    with pytest.raises(ValueError):
        J.java_value(value)


def test_boxed_ints_check_their_range_and_print_their_class():
    assert repr(Integer(5)) == "Integer(5)" and repr(Long(-5)) == "Long(-5)"
    with pytest.raises(ValueError):
        Integer(INT_MAX + 1)
    with pytest.raises(ValueError):
        Long(LONG_MIN - 1)


@pytest.mark.parametrize("value,expected", [
    (Integer(5), Integer(-5)), (Integer(INT_MIN), Integer(INT_MIN)),
    (Integer(INT_MAX), Integer(-INT_MAX)), (Long(LONG_MIN), Long(LONG_MIN)),
    (Long(7), Long(-7)), (0.0, -0.0), (-math.inf, math.inf),
])
def test_negate_wraps_like_java(value, expected):
    result = J.negate(value)
    assert type(result) is type(expected) and repr(result) == repr(expected)


# --- Integer.valueOf / Long.valueOf -----------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("5", 5), ("+5", 5), ("-5", -5), ("05", 5), ("-0", 0), ("000", 0),
    ("\u0665", 5),                  # ARABIC-INDIC DIGIT FIVE: Character.digit accepts it
    ("\u0661\u0662", 12), ("\uff19", 9),  # fullwidth 9
    ("2147483647", INT_MAX), ("-2147483648", INT_MIN),
])
def test_integer_value_of_accepts(text, expected):
    result = J.integer_value_of(text)
    assert type(result) is Integer and result == expected


@pytest.mark.parametrize("text", [
    "", "+", "-", " 1", "1 ", "1.0", "1e2", "5L", "NaN", "0x10", "1_000", "--1", "+-1",
    "2147483648", "-2147483649", "99999999999999999999999",
    "\u00b2",                       # superscript two: a digit to Python, not category Nd
    "\u2163",                       # roman numeral four
    "\U0001d7ce",                   # a supplementary digit: two surrogate chars for Java
    "\ud835",                       # a lone surrogate
])
def test_integer_value_of_rejects(text):
    with pytest.raises(NumberFormatError):
        J.integer_value_of(text)


@pytest.mark.parametrize("text,expected", [
    ("2147483648", 2 ** 31), ("9223372036854775807", LONG_MAX),
    ("-9223372036854775808", LONG_MIN), ("+0", 0), ("\u0665" * 3, 555),
])
def test_long_value_of_accepts(text, expected):
    result = J.long_value_of(text)
    assert type(result) is Long and result == expected


@pytest.mark.parametrize("text", ["9223372036854775808", "-9223372036854775809", "5L", " 5", "1.5"])
def test_long_value_of_rejects(text):
    with pytest.raises(NumberFormatError):
        J.long_value_of(text)


# --- Double.valueOf ---------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("1", 1.0), ("1.0", 1.0), ("+5", 5.0), ("-5", -5.0), ("05", 5.0), (".5", 0.5), ("5.", 5.0),
    ("5.e1", 50.0), ("1e2", 100.0), ("1E+2", 100.0), ("1e-2", 0.01), ("-.5e1", -5.0),
    (" 1.5 ", 1.5), ("\t\n1.5\r\x00\x1f", 1.5),    # trims every char <= U+0020
    ("1.5f", 1.5), ("1.5F", 1.5), ("2d", 2.0), ("2D", 2.0), ("1e3d", 1000.0),
    ("NaN", math.nan), ("-NaN", math.nan), ("+NaN", math.nan),
    ("Infinity", math.inf), ("+Infinity", math.inf), ("-Infinity", -math.inf),
    ("1e400", math.inf), ("-1e400", -math.inf), ("1e-400", 0.0), ("-1e-400", -0.0),
    ("-0", -0.0), ("-0.0", -0.0), ("0e999999999999", 0.0),
    ("4.9e-324", 5e-324), ("2.4703282292062328e-324", 5e-324),  # just above half the minimum
    ("2.4703282292062327e-324", 0.0),
    ("1.7976931348623157e308", 1.7976931348623157e308), ("1.7976931348623159e308", math.inf),
    ("9007199254740993", 9007199254740992.0),                   # ties to even
    ("2.2250738585072011e-308", 2.225073858507201e-308),
    ("0.1", 0.1), ("0" * 400 + "1", 1.0), ("0." + "0" * 400 + "1e401", 1.0),
    ("0x1p4", 16.0), ("0X1P4", 16.0), ("-0x1p4", -16.0), ("0x.8p1", 1.0), ("0x1.p0", 1.0),
    ("0x1.8p1", 3.0), ("0xAbC.dp0", 2748.8125), ("0x1p-1074", 5e-324), ("0x1p-1075", 0.0),
    ("0x1.8p-1075", 5e-324), ("0x1.00000000000008p0", 1.0),  # a tie, to even
    ("0x1.00000000000018p0", 1.0000000000000004), ("0x1p1024", math.inf),
    ("0x1.fffffffffffff8p1023", math.inf), ("0x1p4f", 16.0), ("0x1p+4d", 16.0),
    (" 0x1p4 ", 16.0), ("-0x0p0", -0.0), ("0x0p99999999999", 0.0),
    ("0x1p99999999999", math.inf), ("-0x1p-99999999999", -0.0),
])
def test_double_value_of_accepts(text, expected):
    assert bits(J.double_value_of(text)) == bits(expected)


@pytest.mark.parametrize("text", [
    "", " ", ".", "-", "+", "e5", ".e5", "1e", "1e+", "1e-", "1.5.2", "1,5", "1_0", "abc",
    "\u0665", "\uff11",             # no Unicode digits here
    "\u00a01", "1\u3000",           # only chars <= U+0020 are trimmed
    "nan", "NAN", "inf", "infinity", "INFINITY", "Infinityx", "NaNd", "Infinityf", "-+1",
    "1.5ff", "1.5L", "5L", "1f5", "0x", "0x1", "0x1.8", "0xp1", "0x.p1", "0x1p", "0x1pA",
    "0x1p1.5", "x1p1", "1p4", "0x1e4", "0x1p4 x",
])
def test_double_value_of_rejects(text):
    with pytest.raises(NumberFormatError):
        J.double_value_of(text)


@pytest.mark.parametrize("text,expected", [
    ("true", True), ("TRUE", True), ("tRuE", True), ("false", False), ("yes", False),
    ("1", False), ("", False), (" true", False), ("true ", False), ("tru\u0435", False),
])
def test_boolean_value_of(text, expected):
    assert J.boolean_value_of(text) is expected


# --- Strings over UTF-16 ----------------------------------------------------------------------

def test_string_compare_uses_utf16_units():
    assert J.string_compare("\U00010000", "\uffff") < 0  # D800 DC00 < FFFF, unlike code points
    assert J.string_compare("a", "b") == -1 and J.string_compare("ab", "a") == 1
    assert J.string_compare("\U0001F600", "\ud83d\ude00") == 0


def test_string_equals_sees_units_not_code_points():
    assert J.string_equals("x\U0001F600", "x\ud83d\ude00")
    assert not J.string_equals("\ud83d", "\ude00")


def test_contains_matches_whole_units_only():
    assert J.string_contains("\U0001F600", "\ude00")
    assert not J.string_contains("\u3d00\ud83d", "\ud800")  # bytes 3D 00 D8 3D hold 00 D8
    assert J.string_starts_with("\U0001F600", "\ud83d")
    assert J.string_ends_with("\U0001F600", "\ude00")
    assert not J.string_ends_with("\U0001F600", "\ud83d")


def test_string_hash_code():
    assert [J.string_hash_code(s) for s in ("", "a", "hello", "\U0001F600")] == \
        [0, 97, 99162322, 1772899]


# --- Double order and the coercing comparison -------------------------------------------------

def test_double_compare_order():
    values = [math.nan, math.inf, 1.0, 0.0, -0.0, -1.0, -math.inf]
    ordered = sorted(values, key=cmp_to_key(J.double_compare))
    assert [bits(v) for v in ordered] == \
        [bits(v) for v in (-math.inf, -1.0, -0.0, 0.0, 1.0, math.inf, math.nan)]
    assert J.double_compare(math.nan, float("-nan")) == 0


ERROR = "error"


@pytest.mark.parametrize("left,right,expected", [
    (Integer(1), Integer(2), -1), (Long(5), Long(5), 0), (2.5, 1.5, 1),
    (True, False, 1), (False, False, 0), ("a", "b", -1), ("b", "a", 1), ("x", "x", 0),
    (Integer(5), Long(5), 0), (Long(2 ** 40), Integer(5), 1),            # widen to long
    (Integer(1), 1.5, -1), (Long(2 ** 53 + 1), float(2 ** 53), 0),      # to double
    (1.5, Integer(1), 1), (-0.0, Integer(0), -1), (math.nan, Long(5), 1),
    (Integer(5), "5", 0), (Integer(5), "+05", 0), (Integer(5), "5.0", ERROR),
    (Integer(5), "3000000000", ERROR), (Long(3_000_000_000), "3000000000", 0),
    (Long(5), "5L", ERROR), (2.0, "2", 0), (2.0, " 2f ", 0), (2.0, "x", ERROR),
    (4.5, "NaN", -1), (Integer(4), "NaN", ERROR),
    ("5", Integer(5), 0), ("1.0", Integer(1), ERROR), ("3000000000", Long(1), 1),
    ("1", 1.0, 0), ("NaN", 4.5, 1), ("abc", False, 0), ("True", True, 0), ("1", True, -1),
    (True, "true", ERROR), (False, "x", ERROR),          # RocketMQ's ClassCastException
    (True, Integer(1), -1), (True, 1.0, -1), (Integer(1), True, -1), (1.0, False, -1),
])
def test_compare(left, right, expected):
    try:
        result = sign(J.compare(left, right))
    except SelectorEvaluationError:
        result = ERROR
    assert result == expected


@pytest.mark.parametrize("left,right", [(object(), "x"), ("x", object()), (Integer(1), object())])
def test_compare_refuses_non_comparable_objects(left, right):
    with pytest.raises(SelectorEvaluationError):
        J.compare(left, right)


@pytest.mark.parametrize("left,right,expected", [
    (math.nan, math.nan, True), (0.0, -0.0, False), (Integer(1), Long(1), False),
    (Integer(1), Integer(1), True), ("a", "a", True), (True, True, True), (1.0, Integer(1), False),
])
def test_java_equals(left, right, expected):
    assert J.java_equals(left, right) is expected
