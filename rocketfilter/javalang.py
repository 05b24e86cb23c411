"""Java's rules that RocketMQ's behaviour depends on: String.hashCode, the boxed number parsers
(Integer/Long/Double/Boolean.valueOf) and the coercing comparison of ComparisonExpression.

Shared by the selector's reference evaluator and the tag code.

Java runtime values map to Python as: null -> None, String -> str, Integer -> `Integer`,
Long -> `Long`, Double -> float, Boolean -> bool; anything else is an opaque, non-Comparable
Java Object. Python's int alone cannot say whether it is an Integer or a Long, hence the two
tiny int subclasses.
"""
from __future__ import annotations

import math
import re
import struct
import unicodedata

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1

INTEGER, LONG, DOUBLE, BOOLEAN, STRING, OBJECT = (
    "Integer", "Long", "Double", "Boolean", "String", "Object")


class NumberFormatError(ValueError):
    """Java's NumberFormatException from one of the valueOf parsers."""


class SelectorEvaluationError(RuntimeError):
    """Java's evaluation threw (NumberFormatException, illegal string comparison, ClassCastException):
    the broker treats it as "not matched" and aborts the whole selector."""

    __module__ = "rocketfilter.selector.errors"   # its public home; defined here, where Java's rules throw


def _evaluation_error(message: str) -> Exception:
    return SelectorEvaluationError(message)


# ---------------------------------------------------------------------------------------------
# Values

class _JavaIntegral(int):
    """An int that remembers its Java class and refuses values outside that class's range."""
    __slots__ = ()
    _range = (0, 0)

    def __new__(cls, value=0):
        self = super().__new__(cls, value)
        low, high = cls._range
        if not low <= self <= high:
            raise ValueError(f"{int(self)} is out of range for a Java {cls.__name__}")
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"


class Integer(_JavaIntegral):
    """A Java Integer (32-bit)."""
    __slots__ = ()
    _range = (INT_MIN, INT_MAX)


class Long(_JavaIntegral):
    """A Java Long (64-bit)."""
    __slots__ = ()
    _range = (LONG_MIN, LONG_MAX)


def java_value(v):
    """A Python input value as the Java value the evaluator works on (see the module doc).

    A plain int becomes an Integer when it fits 32 bits, else a Long; beyond 64 bits it has no
    Java counterpart and raises ValueError.
    """
    if v is None or type(v) in (str, float, bool, Integer, Long):
        return v
    if isinstance(v, (Integer, Long)):
        return v
    if isinstance(v, int):
        if INT_MIN <= v <= INT_MAX:
            return Integer(v)
        if LONG_MIN <= v <= LONG_MAX:
            return Long(v)
        raise ValueError(f"{v} does not fit a Java Long")
    if isinstance(v, float):
        return float(v)
    if isinstance(v, str):
        return str(v)
    return v  # an opaque Java Object


def java_class(v):
    """The Java class name of a value after `java_value`, or None for null."""
    v = java_value(v)
    if v is None:
        return None
    if isinstance(v, bool):
        return BOOLEAN
    if isinstance(v, Integer):
        return INTEGER
    if isinstance(v, Long):
        return LONG
    if isinstance(v, float):
        return DOUBLE
    if isinstance(v, str):
        return STRING
    return OBJECT


def is_comparable(v) -> bool:
    """Java `instanceof Comparable`: every value class here except the opaque Object."""
    return java_class(v) not in (OBJECT, None)


def negate(v):
    """Java unary minus on a boxed number, keeping its type (Integer/Long wrap on MIN_VALUE)."""
    cls = java_class(v)
    if cls == INTEGER:
        return Integer(INT_MIN if v == INT_MIN else -v)
    if cls == LONG:
        return Long(LONG_MIN if v == LONG_MIN else -v)
    if cls == DOUBLE:
        return -v
    raise TypeError(f"not a Java number: {v!r}")


# ---------------------------------------------------------------------------------------------
# Strings: Java's String works on UTF-16 code units. A Python str without surrogate code points
# gives the same answers with its own operations; with surrogates (a lone one, or a pair kept as
# two code points) only the UTF-16 form is exact.

_has_surrogate = re.compile("[\ud800-\udfff]").search


def utf16_units(s: str) -> list:
    """The UTF-16 code units of `s`, as Java's String holds them (lone surrogates kept as is)."""
    data = s.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


def _utf16(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def string_hash_code(s: str) -> int:
    """Java `String.hashCode`: h = 31*h + unit over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    for unit in utf16_units(s):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def string_equals(a: str, b: str) -> bool:
    """Java `String.equals`."""
    if a == b:
        return True
    return bool(_has_surrogate(a) or _has_surrogate(b)) and _utf16(a) == _utf16(b)


def string_sort_key(s: str) -> bytes:
    """A sort key that orders strings as Java's `String.compareTo` does: by UTF-16 code unit.

    Python orders by code point, which differs once a character lies outside the BMP: Java
    puts U+10000 (the units D800 DC00) before U+FFFF. Big-endian UTF-16 bytes compare like the
    units they encode.

    >>> sorted(["\uffff", "\U00010000"], key=string_sort_key) == ["\U00010000", "\uffff"]
    True
    """
    return s.encode("utf-16-be", "surrogatepass")


def string_compare(a: str, b: str) -> int:
    """Java `String.compareTo`: first differing UTF-16 unit, else the length difference."""
    ua, ub = utf16_units(a), utf16_units(b)
    for x, y in zip(ua, ub):
        if x != y:
            return x - y
    return len(ua) - len(ub)


def string_contains(s: str, search: str) -> bool:
    """Java `String.contains`."""
    if not (_has_surrogate(s) or _has_surrogate(search)):
        return search in s
    data, pattern = _utf16(s), _utf16(search)
    at = data.find(pattern)
    while at >= 0 and at % 2:  # a byte match that straddles two units does not count
        at = data.find(pattern, at + 1)
    return at >= 0


def string_starts_with(s: str, prefix: str) -> bool:
    """Java `String.startsWith`."""
    if not (_has_surrogate(s) or _has_surrogate(prefix)):
        return s.startswith(prefix)
    return _utf16(s).startswith(_utf16(prefix))


def string_ends_with(s: str, suffix: str) -> bool:
    """Java `String.endsWith`."""
    if not (_has_surrogate(s) or _has_surrogate(suffix)):
        return s.endswith(suffix)
    return _utf16(s).endswith(_utf16(suffix))


# ---------------------------------------------------------------------------------------------
# The boxed parsers

# The first code point (the zero) of every run of ten non-ASCII decimal digits in the BMP:
# Character.digit(ch, 10) accepts exactly these (category Nd). Java parses UTF-16 units, so a
# supplementary-plane digit is two surrogates, neither of them a digit: those are left out.
# Every Nd block is a contiguous 0..9 run; tests/selector/test_javacasts.py rebuilds this list
# from unicodedata and checks it. Both the Spark and the Arrow parsers translate them to ASCII.
NON_ASCII_ZEROS = (
    0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6,
    0x0D66, 0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0,
    0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0,
    0xAA50, 0xABF0, 0xFF10,
)


def _java_digit(ch: str) -> int:
    """Character.digit(ch, 10): the value of a decimal digit (category Nd), else -1.

    Java sees a supplementary character as two surrogate units, neither of them a digit.
    """
    if "0" <= ch <= "9":
        return ord(ch) - 48
    if ord(ch) > 0xFFFF:
        return -1
    return unicodedata.decimal(ch, -1)


def _parse_integral(s: str, low: int, high: int) -> int:
    """Integer/Long.parseLong(s, 10): [+-]digits, range checked."""
    if not isinstance(s, str):
        raise TypeError(f"expected a str, got {type(s).__name__}")
    digits = s[1:] if s[:1] in ("+", "-") else s
    if not digits:
        raise NumberFormatError(f'For input string: "{s}"')
    limit = max(-low, high)
    value = 0
    for ch in digits:
        d = _java_digit(ch)
        if d < 0:
            raise NumberFormatError(f'For input string: "{s}"')
        value = value * 10 + d
        if value > limit:  # stop early: huge inputs cannot come back into range
            raise NumberFormatError(f'For input string: "{s}" (out of range)')
    if s[0] == "-":
        value = -value
    if not low <= value <= high:
        raise NumberFormatError(f'For input string: "{s}" (out of range)')
    return value


def integer_value_of(s: str) -> Integer:
    """Java `Integer.valueOf(String)`; raises NumberFormatError."""
    return Integer(_parse_integral(s, INT_MIN, INT_MAX))


def long_value_of(s: str) -> Long:
    """Java `Long.valueOf(String)`; raises NumberFormatError."""
    return Long(_parse_integral(s, LONG_MIN, LONG_MAX))


# Double.valueOf's grammar after trimming (FloatingDecimal.readJavaFormatString). ASCII only.
_DECIMAL = re.compile(r"([+-]?)(?:(NaN|Infinity)"
                      r"|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?)")
_HEX = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)"
                  r"[pP]([+-]?)([0-9]+)[fFdD]?")
_TRIMMED = "".join(chr(c) for c in range(0x21))  # String.trim removes every char <= U+0020


def double_value_of(s: str) -> float:
    """Java `Double.valueOf(String)`; raises NumberFormatError."""
    if not isinstance(s, str):
        raise TypeError(f"expected a str, got {type(s).__name__}")
    t = s.strip(_TRIMMED)
    m = _HEX.fullmatch(t)
    if m:
        return _hex_double(*m.groups())
    m = _DECIMAL.fullmatch(t)
    if m is None:
        raise NumberFormatError(f'For input string: "{s}"')
    sign, special, number = m.groups()
    if special == "NaN":
        return math.nan
    value = math.inf if special else float(number)  # float() rounds correctly, as Java does
    return -value if sign == "-" else value


def _hex_double(sign: str, significand: str, exp_sign: str, exp_digits: str) -> float:
    negative = sign == "-"
    if not significand.strip("0."):
        return -0.0 if negative else 0.0
    exponent = exp_digits.lstrip("0") or "0"
    if len(exponent) > 10 or int(exponent) > INT_MAX:
        # Java gives up on an exponent beyond int range: infinity or zero by its sign
        value = 0.0 if exp_sign == "-" else math.inf
    else:
        try:
            value = float.fromhex(f"0x{significand}p{exp_sign}{exponent}")
        except OverflowError:
            value = math.inf
    return -value if negative else value


def boolean_value_of(s) -> bool:
    """Java `Boolean.valueOf(String)`: "true" ignoring (ASCII) case; never fails.

    No non-ASCII character case-folds to a letter of "true" under Java's per-char rules.
    """
    return isinstance(s, str) and len(s) == 4 and s.isascii() and s.lower() == "true"


# ---------------------------------------------------------------------------------------------
# Equality and the coercing comparison

def _double_bits(d: float) -> int:
    """Double.doubleToLongBits: the IEEE bits as a signed long, every NaN canonicalised."""
    if math.isnan(d):
        return 0x7FF8000000000000
    return struct.unpack(">q", struct.pack(">d", d))[0]


def double_compare(a: float, b: float) -> int:
    """Java `Double.compare`: -0.0 < 0.0, NaN equal to itself and above +Infinity."""
    if a < b:
        return -1
    if a > b:
        return 1
    ba, bb = _double_bits(a), _double_bits(b)
    return 0 if ba == bb else (-1 if ba < bb else 1)


def java_equals(a, b) -> bool:
    """`a.equals(b)` for two non-null Java values (Double bitwise; an Object only to itself)."""
    cls = java_class(a)
    if cls != java_class(b):
        return False
    if cls == DOUBLE:
        return _double_bits(a) == _double_bits(b)
    if cls == STRING:
        return string_equals(a, b)
    if cls == OBJECT:
        return a is b
    return a == b


def _compare_same(cls: str, lv, rv) -> int:
    if cls == STRING:
        return string_compare(lv, rv)
    if cls == DOUBLE:
        return double_compare(lv, rv)
    if cls == OBJECT:
        raise _evaluation_error("ClassCastException: an Object is not Comparable")
    return (lv > rv) - (lv < rv)  # Integer, Long, Boolean (false < true)


def compare(lv, rv) -> int:
    """ComparisonExpression.__compare(lv, rv, convertStringExpressions=true), SEMANTICS §5.4.

    Returns Java's int (only its sign matters; -1 also means "incomparable"). Raises
    SelectorEvaluationError where Java throws: a failed valueOf, or the Boolean-vs-String
    ClassCastException (RocketMQ casts the Boolean to String by mistake).
    """
    lc, rc = java_class(lv), java_class(rv)
    if lc is None or rc is None:
        raise TypeError("compare() takes two non-null values")
    if OBJECT in (lc, rc):
        raise _evaluation_error("ClassCastException: an Object is not Comparable")
    if lc == rc:
        return _compare_same(lc, lv, rv)
    try:
        if lc == BOOLEAN:
            if rc == STRING:
                raise _evaluation_error(
                    "ClassCastException: java.lang.Boolean cannot be cast to java.lang.String")
            return -1
        if lc == STRING:
            if rc == BOOLEAN:
                return _compare_same(BOOLEAN, boolean_value_of(lv), rv)
            lv = {INTEGER: integer_value_of, LONG: long_value_of, DOUBLE: double_value_of}[rc](lv)
            return _compare_same(rc, lv, rv)
        if rc == STRING:  # a number on the left parses the string as its own type
            rv = {INTEGER: integer_value_of, LONG: long_value_of, DOUBLE: double_value_of}[lc](rv)
            return _compare_same(lc, lv, rv)
    except NumberFormatError as e:
        raise _evaluation_error(f"NumberFormatException: {e}") from e
    if rc == BOOLEAN:
        return -1
    # Two different number classes: Integer/Long widen to long, anything with Double to double.
    if DOUBLE in (lc, rc):
        return double_compare(float(lv), float(rv))
    return (lv > rv) - (lv < rv)
