"""Java's String -> number/boolean parsers as Spark Columns, exact and never raising.

Spark's own casts differ from Java's ``valueOf`` at the edges (Spark trims whitespace for ints,
accepts ``inf``/``nan``; Java accepts Unicode digits for ints), so each parser pairs a fast cast
for the common, canonical text with a guarded slow path for the rest. Every function returns
``(value, valid)``: ``valid`` is false exactly where Java throws NumberFormatException. Both are
meaningful only where the input is not null.
"""
from __future__ import annotations

import sys
import unicodedata
from functools import lru_cache

from pyspark.sql import Column
from pyspark.sql import functions as F

# Java's Character.digit(ch, 10) accepts every Unicode decimal digit (category Nd).
_SIGNED_DIGITS = r"^[+-]?\p{Nd}+$"
_ASCII_DIGITS = r"^[+-]?[0-9]+$"
# Java's FloatingDecimal grammar, after trimming chars <= U+0020 (Double.valueOf).
_JAVA_DOUBLE = (r"^[\x00-\x20]*[+-]?(?:NaN|Infinity|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
                r"(?:[eE][+-]?[0-9]+)?|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)"
                r"[pP][+-]?[0-9]+)[fFdD]?)[\x00-\x20]*$")


@lru_cache(maxsize=1)
def _unicode_digits() -> tuple:
    chars, ascii_ = [], []
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        if not ("0" <= ch <= "9") and unicodedata.category(ch) == "Nd":
            chars.append(ch)
            ascii_.append(str(unicodedata.decimal(ch)))
    return "".join(chars), "".join(ascii_)


def _ascii_digits(s: Column) -> Column:
    src, dst = _unicode_digits()
    return F.translate(s, src, dst)


def _integral(s: Column, spark_type: str) -> tuple:
    # Spark's cast also trims blanks and reads "1.0"; Java reads only sign + digits, so only
    # text of that shape reaches the cast. Non-ASCII digits are rare: translate only those.
    ascii_ = F.when(s.rlike(_ASCII_DIGITS), s)
    value = F.coalesce(ascii_.try_cast(spark_type),
                       F.when(s.rlike(_SIGNED_DIGITS), _ascii_digits(s)).try_cast(spark_type))
    return value, value.isNotNull()


def integer_value_of(s: Column) -> tuple:
    """Java ``Integer.valueOf(s)``: optional sign, Unicode decimal digits, 32-bit range."""
    return _integral(s, "int")


def long_value_of(s: Column) -> tuple:
    """Java ``Long.valueOf(s)``: optional sign, Unicode decimal digits, 64-bit range."""
    return _integral(s, "bigint")


def double_value_of(s: Column) -> tuple:
    """Java ``Double.valueOf(s)``.

    Spark's string->double cast is Java's parseDouble plus a fallback for ``inf``/``nan``
    spellings Java rejects; only NaN and infinite results need the grammar check.
    """
    value = s.try_cast("double")
    special = F.isnan(value) | (F.abs(value) == F.lit(float("inf")))
    valid = value.isNotNull() & F.when(special, s.rlike(_JAVA_DOUBLE)).otherwise(F.lit(True))
    return value, valid


def boolean_value_of(s: Column) -> Column:
    """Java ``Boolean.valueOf(s)``: true iff s equalsIgnoreCase "true"; never fails."""
    return F.lower(s) == F.lit("true")


def is_negative_zero(d: Column) -> Column:
    """True where a double is -0.0 (Spark's = and < treat -0.0 and 0.0 as equal; Java doesn't)."""
    return (d == F.lit(0.0)) & d.cast("string").startswith("-")
