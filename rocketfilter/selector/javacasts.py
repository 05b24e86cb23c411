"""Java's String -> number/boolean parsers as Spark Columns, exact and never raising.

Spark's own casts differ from Java's ``valueOf`` at the edges (Spark trims whitespace for ints,
accepts ``inf``/``nan``; Java accepts Unicode digits for ints), so each parser pairs a fast cast
for the common, canonical text with a guarded slow path for the rest. Every function returns
``(value, valid)``: ``valid`` is false exactly where Java throws NumberFormatException. Both are
meaningful only where the input is not null, and ``value`` is null wherever ``valid`` is false.
"""
from __future__ import annotations

from typing import Tuple

from pyspark.sql import Column
from pyspark.sql import functions as F

# Java regex: `\z` is the very end (`$` would also match before a final line break).
_SIGNED_DIGITS = r"^[+-]?\p{Nd}+\z"  # any Unicode digit; the parse keeps only the BMP ones
# Java's FloatingDecimal grammar, after trimming chars <= U+0020 (Double.valueOf).
_JAVA_DOUBLE = (r"^[\x00-\x20]*[+-]?(?:NaN|Infinity|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
                r"(?:[eE][+-]?[0-9]+)?|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)"
                r"[pP][+-]?[0-9]+)[fFdD]?)[\x00-\x20]*\z")
# What is left of a plain decimal ("-12.5", "7", ".5") once its digits are removed.
_PLAIN_DECIMAL_REST = ("", ".", "-", "+", "-.", "+.")


def _ascii_digits(s: Column) -> Column:
    """True where ``s`` is ``[+-]?[0-9]+`` in ASCII, tested without a regular expression.

    A failing ``try_cast`` costs microseconds (Spark raises and catches inside), so every cast
    here runs only where it cannot fail: measured on 3M values, casting "user42" or "19.99"
    took 10 s, these byte tests 0.3 s. What is left once the digits are removed must be empty
    or one sign, the sign first (``startswith``), and the last character a digit (the only
    characters left are digits and that sign). The text is short, as it is repeated in every
    comparison that reads ``s``.
    """
    rest = F.translate(s, "0123456789", "")
    return rest.isin("", "+", "-") & s.startswith(rest) & (F.substring(s, -1, 1) >= F.lit("0"))


def _unicode_integral(s: Column, spark_type: str) -> Column:
    # Non-ASCII digits (and ASCII runs too long for the fast path) are rare: only text made of
    # sign + Unicode digits is read, as a decimal. Spark parses a decimal with
    # java.math.BigDecimal, which reads digits with Character.digit as Integer.parseInt does: a
    # supplementary digit (two UTF-16 units, neither a digit) fails there as on the broker,
    # and the range is checked by the narrowing cast. This costs a few dozen characters of
    # expression, where a translate() table of every BMP digit cost 750.
    decimal = F.when(s.rlike(_SIGNED_DIGITS), s).try_cast("decimal(38,0)")
    return decimal.try_cast(spark_type)


def _integral(s: Column, spark_type: str) -> Tuple[Column, Column]:
    """ASCII digits short enough to fit are cast directly; int text of 10 to 19 characters
    (timestamps are common) goes through a long and Java's int range, so that cast never
    fails either (an int cast that overflows raises inside Spark: costly)."""
    if spark_type == "int":
        wide = s.try_cast("bigint")
        fast = F.when(wide.between(-2 ** 31, 2 ** 31 - 1), wide.cast("int"))
        safe_length = 19
    else:
        fast, safe_length = s.try_cast("bigint"), 18
    value = (F.when(_ascii_digits(s) & (F.length(s) <= safe_length), fast)
             .otherwise(_unicode_integral(s, spark_type)))
    return value, value.isNotNull()


def integer_value_of(s: Column) -> Tuple[Column, Column]:
    """Java ``Integer.valueOf(s)``: optional sign, Unicode decimal digits, 32-bit range."""
    return _integral(s, "int")


def long_value_of(s: Column) -> Tuple[Column, Column]:
    """Java ``Long.valueOf(s)``: optional sign, Unicode decimal digits, 64-bit range."""
    return _integral(s, "bigint")


def double_value_of(s: Column) -> Tuple[Column, Column]:
    """Java ``Double.valueOf(s)``.

    Spark's string->double cast is Java's parseDouble plus spellings of infinity and NaN that
    Java rejects (``inf``, ``nan``, any case), so text is cast only where Java's grammar
    (``_JAVA_DOUBLE``) holds. The grammar runs only on uncommon shapes: plain decimals (digits,
    at most a sign and a point) skip it, and text whose first character Java can never accept
    (after its trim of chars <= U+0020: a sign, a digit, ``.``, ``N`` or ``I``; the test lets
    through the few other ASCII characters below ``:``) is not cast at all, which matters
    because a failing cast is costly (see ``_ascii_digits``).
    """
    can_start = (s < F.lit(":")) | s.startswith("N") | s.startswith("I")
    plain = F.translate(s, "0123456789", "").isin(*_PLAIN_DECIMAL_REST)
    value = F.when(can_start & (plain | s.rlike(_JAVA_DOUBLE)), s).try_cast("double")
    return value, value.isNotNull()


def boolean_value_of(s: Column) -> Column:
    """Java ``Boolean.valueOf(s)``: true iff s equalsIgnoreCase "true"; never fails."""
    return F.lower(s) == F.lit("true")


def is_negative_zero(d: Column) -> Column:
    """True where a double is -0.0 (Spark's = and < treat -0.0 and 0.0 as equal; Java doesn't)."""
    return (d == F.lit(0.0)) & d.cast("string").startswith("-")
