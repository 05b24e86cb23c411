"""TAG filtering as Spark Columns (SEMANTICS §2): the broker's consume-queue check, the client's
re-check and the tag code, the Column versions of :mod:`rocketfilter.tags`.

The Column predicates are built from literals and column references only (no Python UDF, no SQL
text), so user tag strings can never change the query's shape.
"""
from __future__ import annotations

from typing import Iterable, Optional, Union

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketfilter.tags import SubscriptionData, is_tag_type

ColumnOrName = Union[Column, str]


def _column(col: ColumnOrName) -> Column:
    return F.col(col) if isinstance(col, str) else col


def _low_int_column(col: Column) -> Column:
    # Bit arithmetic rather than cast: with ANSI on, casting an out-of-range bigint raises.
    return col.bitwiseAND(F.lit(0xFFFFFFFF)).bitwiseXOR(F.lit(0x80000000)) - F.lit(0x80000000)


def _isin(col: Column, values: Iterable) -> Column:
    values = list(values)
    return col.isin(*values) if values else F.lit(False)


def tag_code_predicate(sub: Optional[SubscriptionData], tags_code: ColumnOrName = "tags_code") -> Column:
    """The broker's consume-queue tag check as a never-null boolean Column.

    >>> df.filter(tag_code_predicate(build_subscription("T", "TagA || TagC")))  # doctest: +SKIP
    """
    if sub is None or sub.class_filter_mode or not is_tag_type(sub.expression_type):
        return F.lit(True)
    if sub.is_sub_all:
        return F.lit(True)
    code = _column(tags_code)
    return code.isNull() | _isin(_low_int_column(code), sub.code_set)


def tag_exact_predicate(sub: Optional[SubscriptionData], tags: ColumnOrName = "tags") -> Column:
    """The client's exact-tag re-check as a never-null boolean Column."""
    if sub is None or sub.class_filter_mode or not sub.tags_set:
        return F.lit(True)
    tag = _column(tags)
    return tag.isNotNull() & _isin(tag, sub.tags_set)


def tags_code_column(tags: ColumnOrName = "tags") -> Column:
    """:func:`tags_code` as a Column: Java ``String.hashCode`` over the UTF-16 code units, as a
    signed int in a bigint; 0 for a null or empty tag string. Built-in functions only.

    >>> cq = cl.select(tags_code_column("tags").alias("tags_code"))  # doctest: +SKIP
    """
    units = F.hex(F.encode(_column(tags), "UTF-16BE"))  # 4 hex digits per UTF-16 unit
    n = F.length(units) / 4
    code = F.aggregate(
        F.sequence(F.lit(0), (n - 1).cast("int")),
        F.lit(0).cast("bigint"),
        lambda h, i: (h * 31 + F.conv(F.substring(units, i * 4 + 1, 4), 16, 10).cast("bigint"))
        % F.lit(1 << 32),
    )
    signed = F.when(code >= F.lit(1 << 31), code - F.lit(1 << 32)).otherwise(code)
    return F.when(F.coalesce(F.length(_column(tags)), F.lit(0)) == 0, F.lit(0).cast("bigint")) \
        .otherwise(signed)
