"""The message properties string (SEMANTICS §9.1) both ways, in Python and as a Spark Column.

The broker never sees a producer's property map directly: the map is serialised, stored as UTF-8
and parsed back. :func:`normalize_properties` reproduces that trip, which is what a selector
evaluated on the broker actually sees.
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Union

from pyspark.sql import Column
from pyspark.sql import functions as F

NAME_VALUE_SEPARATOR = "\u0001"
PROPERTY_SEPARATOR = "\u0002"

ColumnOrName = Union[Column, str]


def java_utf8_bytes(s: str) -> bytes:
    """Java ``s.getBytes(UTF_8)``: surrogate pairs become one 4-byte character (even when Python
    holds them as two code points) and each lone surrogate becomes ``?``."""
    units = s.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
    return units.encode("utf-8", "replace")


def properties_to_string(mapping: Optional[Mapping[Optional[str], Optional[str]]]) -> str:
    """``MessageDecoder.messageProperties2String``: ``name U+0001 value U+0002`` for every entry
    with a non-None value, in the mapping's iteration order (Java follows its HashMap's)."""
    if not mapping:
        return ""
    parts = []
    for name, value in mapping.items():
        if value is None:
            continue
        # StringBuilder.append(null) writes "null".
        parts.append(f"{'null' if name is None else name}{NAME_VALUE_SEPARATOR}{value}{PROPERTY_SEPARATOR}")
    return "".join(parts)


def string_to_properties(s: Optional[str]) -> Dict[str, str]:
    """``MessageDecoder.string2messageProperties``: the exact scan of §9.1.

    Java indexes UTF-16 units and Python code points, but only the separators (both BMP) are
    located, and the ``j - i >= 3`` length rule is implied by ``i < kv < j - 1`` (a non-empty key,
    the separator and a non-empty value), so the scan is exact on code points.

    >>> string_to_properties("a\\u00011\\u0002b\\u0001\\u0002")
    {'a': '1'}
    """
    result: Dict[str, str] = {}
    if not s:
        return result
    n = len(s)
    i = 0
    while i < n:
        j = s.find(PROPERTY_SEPARATOR, i)
        if j < 0:
            j = n
        if j - i >= 3:
            kv = s.find(NAME_VALUE_SEPARATOR, i)
            if i < kv < j - 1:
                result[s[i:kv]] = s[kv + 1:j]
        i = j + 1
    return result


def normalize_properties(mapping: Optional[Mapping[Optional[str], Optional[str]]]) -> Dict[str, str]:
    """The broker's view of a producer's properties: serialise, store as UTF-8, parse back.

    Keys or values holding the separators corrupt neighbouring entries exactly as in RocketMQ;
    None values vanish; lone surrogates become ``?``. An empty result means "no properties".

    >>> normalize_properties({"n": "a\\u0002b\\u0001c", "gone": None})
    {'n': 'a', 'b': 'c'}
    """
    wire = java_utf8_bytes(properties_to_string(mapping)).decode("utf-8")
    return string_to_properties(wire)


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
