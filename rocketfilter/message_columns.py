"""The message properties string (SEMANTICS §9.1) as Spark Columns: the Column versions of
:mod:`rocketfilter.message`'s conversions, with built-in functions only.
"""
from __future__ import annotations

from typing import Union

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketfilter.message import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR

ColumnOrName = Union[Column, str]


def _column(col: ColumnOrName) -> Column:
    return F.col(col) if isinstance(col, str) else col


def properties_to_string_column(col: ColumnOrName) -> Column:
    """:func:`properties_to_string` on a ``map<string,string>`` Column (entry order kept)."""
    entries = F.filter(F.map_entries(_column(col)), lambda e: e["value"].isNotNull())
    return F.array_join(
        F.transform(
            entries,
            lambda e: F.concat(e["key"], F.lit(NAME_VALUE_SEPARATOR), e["value"], F.lit(PROPERTY_SEPARATOR)),
        ),
        "",
    )


def string_to_properties_column(col: ColumnOrName) -> Column:
    """:func:`string_to_properties` on a string Column, giving ``map<string,string>``.

    Each ``U+0002``-separated segment yields an entry when its first ``U+0001`` leaves a
    non-empty key and a non-empty value; later duplicate keys win, as ``HashMap.put`` does.
    A null string gives null.
    """
    # The separator has no regex meaning; limit -1 keeps empty pieces.
    segments = F.split(_column(col), PROPERTY_SEPARATOR, -1)
    parsed = F.transform(
        segments,
        lambda seg: F.struct(
            F.instr(seg, NAME_VALUE_SEPARATOR).alias("kv"),  # 1-based, 0 when absent
            seg.alias("seg"),
        ),
    )
    # kv > 1: non-empty key; kv < length: non-empty value.
    kept = F.filter(parsed, lambda p: (p["kv"] > 1) & (p["kv"] < F.length(p["seg"])))
    pairs = F.transform(
        kept,
        lambda p: F.struct(
            p["seg"].substr(F.lit(1), p["kv"] - 1).alias("key"),
            p["seg"].substr(p["kv"] + 1, F.length(p["seg"])).alias("value"),
        ),
    )
    # Keep only each key's last occurrence so map_from_entries never sees a duplicate.
    keys = F.transform(pairs, lambda p: p["key"])
    last = F.filter(
        pairs,
        lambda p, i: F.size(keys) - F.array_position(F.reverse(keys), p["key"]) == i,
    )
    return F.map_from_entries(last)


def normalize_properties_column(col: ColumnOrName) -> Column:
    """:func:`normalize_properties` on a ``map<string,string>`` Column, with built-in functions
    only. A null map stays null. (Spark strings hold no lone surrogates, so the UTF-8 step of
    the Python version has nothing to do here.)

    >>> df.withColumn("properties", normalize_properties_column("properties"))  # doctest: +SKIP
    """
    return string_to_properties_column(properties_to_string_column(col))
