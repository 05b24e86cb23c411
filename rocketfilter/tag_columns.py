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


def kept_tag_set(sub: Optional[SubscriptionData]) -> Optional[frozenset]:
    """The tags the client's exact re-check keeps; None when it keeps every message."""
    if sub is None or sub.class_filter_mode or not sub.tags_set:
        return None
    return frozenset(sub.tags_set)


def tag_exact_predicate(sub: Optional[SubscriptionData], tags: ColumnOrName = "tags") -> Column:
    """The client's exact-tag re-check as a never-null boolean Column."""
    kept = kept_tag_set(sub)
    if kept is None:
        return F.lit(True)
    tag = _column(tags)
    return tag.isNotNull() & _isin(tag, sub.tags_set)


# Tags up to this many characters hash in one unrolled sum (no loop; Spark generates its code);
# longer ones, and those with characters outside the BMP, take the loop.
_UNROLLED_CHARS = 16
_WEIGHTS = [pow(31, k, 1 << 32) for k in range(_UNROLLED_CHARS)]
_OUTSIDE_BMP = "[\\x{10000}-\\x{10FFFF}]"


def tags_code_column(tags: ColumnOrName = "tags") -> Column:
    """:func:`tags_code` as a Column: Java ``String.hashCode`` over the UTF-16 code units, as a
    signed int in a bigint; 0 for a null or empty tag string. Built-in functions only.

    >>> cq = cl.select(tags_code_column("tags").alias("tags_code"))  # doctest: +SKIP
    """
    tag = _column(tags)
    length = F.coalesce(F.length(tag), F.lit(0))
    ascii_only = F.coalesce(F.octet_length(tag) == F.length(tag), F.lit(True))
    unrolled = (length <= F.lit(_UNROLLED_CHARS)) & (ascii_only | ~tag.rlike(_OUTSIDE_BMP))
    code = F.when(unrolled, F.coalesce(_unrolled_hash(tag), F.lit(0).cast("bigint"))) \
        .otherwise(_looped_hash(tag))
    return _low_int_column(code)


def _unrolled_hash(tag: Column) -> Column:
    """sum(c[n-1-k] * 31^k): the k-th character from the end by a negative ``substring`` ("" past
    the start, whose ``ascii`` is 0), each a BMP character, so its code point is its UTF-16 unit.
    The sum stays below 2^52; the caller keeps its low 32 bits."""
    terms = [F.ascii(F.substring(tag, -(k + 1), 1)).cast("bigint") * F.lit(w)
             for k, w in enumerate(_WEIGHTS)]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def _looped_hash(tag: Column) -> Column:
    """The hash by a loop over the UTF-16BE units of a non-empty tag (any length, any
    character; null and "" take the unrolled sum)."""
    units = F.hex(F.encode(tag, "UTF-16BE"))  # 4 hex digits per UTF-16 unit
    n = F.length(units) / 4
    return F.aggregate(
        F.sequence(F.lit(0), (n - 1).cast("int")),
        F.lit(0).cast("bigint"),
        lambda h, i: (h * 31 + F.conv(F.substring(units, i * 4 + 1, 4), 16, 10).cast("bigint"))
        % F.lit(1 << 32),
    )
