"""Java's valueOf parsers as Spark Columns (javacasts) against rocketfilter.javalang, the
Python model of the same parsers, on the edges where Spark's casts differ from Java's."""
from __future__ import annotations

import sys
import unicodedata

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from rocketfilter import javalang as J
from rocketfilter.selector import javacasts

# Strings where Spark's casts and Java's parsers part ways: blanks and controls that Spark
# trims, decimals, Unicode digits (BMP ones parse in Java, supplementary ones do not: Java
# reads two surrogates), signs, range edges, and every spelling of infinity and NaN.
EDGE_STRINGS = (
    "0", "5", "+5", "-5", "05", "007", "-0", "", " ", "+", "-", "+-1", "1-", "5 ", " 5", "\t5",
    "5\n", "\x005", "5\x00", "\x1f5", "\x7f5", "5\x7f", "\x855", "5\x85", "\u00a05", "\u30005",
    "5\u3000", "\ufeff5", "1.5", "1.0", "1.", ".5", "1e2", "1E2", "1d", "1f", "5L", "0x10",
    "٥", "+٥", "-٥", "١٢", "5٥", "٥.٥", "５", " ٥", "٥ ", "᭕",
    "\U0001D7CE", "1\U0001D7CF", "٥\n", "5\r\n", "+5\n",
    "2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "0" * 40 + "1",
    "NaN", "-NaN", "+NaN", "nan", "NAN", "Infinity", "-Infinity", "+Infinity", "infinity",
    "inf", "-inf", "+inf", "INF", "Inf", " Infinity ", "\tNaN\n", "1e400", "-1e400", "1e-400",
    "0x1p4", "0x1.8p1", "-0.0", "4.9E-324", "1,5", "x", "abc", "true", None,
    # Around the fast paths' length limits (9 and 19 characters for int, 18 for long) and
    # the shapes they send to the grammar: dates, times, stray signs and points.
    "999999999", "-99999999", "1000000000", "4294967296", "1732590000000", "0" * 18 + "5",
    "-" + "0" * 17 + "5", "9" * 18, "9" * 19, "-" + "9" * 18, "0" * 19, "2024-01-01", "12:30",
    "1-2", "+.5", "-.5", ".", "-.", "+.", "1e5f", " 1.5", "19.99", "user42", "N", "I", "In",
    "Infinityx", "0x1P-3", "1.5e", "/5", "5/",
    # The short ASCII test (digits removed, one leading sign left) and the decimal read of
    # Unicode digits and of ASCII runs too long for the fast path.
    "5-5", "-+5", "+-", "1+", ",5", "*5", "0" * 25 + "7", "-" + "0" * 30 + "5", "9" * 20,
    "٠" * 20 + "٧", "٢١٤٧٤٨٣٦٤٧", "٢١٤٧٤٨٣٦٤٨", "-٢١٤٧٤٨٣٦٤٨", "٩" * 19, "٩" * 39, "+-٥",
)


def test_unicode_digit_table_is_every_bmp_digit():
    """The precomputed table (the Arrow backend's) equals a scan of the BMP: each zero starts a
    0..9 run of Nd."""
    table = "".join(chr(zero + d) for zero in J.NON_ASCII_ZEROS for d in range(10))
    scanned = "".join(ch for ch in map(chr, range(0x10000))
                      if not "0" <= ch <= "9" and unicodedata.category(ch) == "Nd")
    assert table == scanned
    assert all(unicodedata.decimal(ch) == i % 10 for i, ch in enumerate(table))
    # Supplementary digits exist, and are left out on purpose (Java reads UTF-16 units).
    assert sys.maxunicode > 0xFFFF and unicodedata.category("\U0001D7CE") == "Nd"


def _java(parser, s):
    try:
        return parser(s)
    except J.NumberFormatError:
        return "error"


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_parsers_match_java(spark, ansi):
    df = spark.createDataFrame(pa.table({"row": pa.array(range(len(EDGE_STRINGS)), pa.int32()),
                                         "s": pa.array(EDGE_STRINGS, pa.string())}))
    s = F.col("s")
    columns = []
    for name, parse in (("int", javacasts.integer_value_of), ("long", javacasts.long_value_of),
                        ("double", javacasts.double_value_of)):
        value, valid = parse(s)
        columns += [value.alias(name), valid.alias(f"{name}_ok")]
    columns.append(javacasts.boolean_value_of(s).alias("bool"))
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        rows = sorted(df.select("row", *columns).collect(), key=lambda r: r.row)
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")
    problems = []
    for text, row in zip(EDGE_STRINGS, rows):
        if text is None:
            assert row.bool is None
            continue
        for name, parser in (("int", J.integer_value_of), ("long", J.long_value_of),
                             ("double", J.double_value_of)):
            want = _java(parser, text)
            got = row[name] if row[f"{name}_ok"] else "error"
            same = (got == want or (isinstance(got, float) and got != got and want != want))
            if not same or (row[name] is None) != (not row[f"{name}_ok"]):
                problems.append((text, name, got, want))
        if row.bool != (text.lower() == "true"):
            problems.append((text, "bool", row.bool, text.lower() == "true"))
    assert not problems, problems
