"""``CommitLogDispatcherCalcBitMap`` (SEMANTICS §10.4): a message's bloom bitmap, in Python and as
one Spark Column.

For every SQL92 filter registered on the message's topic (dead-but-not-cleaned ones included) that
has a compiled selector and bloom data, the group's k bits are set when the selector is TRUE on the
message's properties. No filter data at all means no bitmap (null), not an all-zero one.

>>> from rocketfilter.store.filter_data import ConsumerFilterManager
>>> m = ConsumerFilterManager(clock=lambda: 0)
>>> for group, expr in [("G1", "a > 1"), ("G2", "a < 1"), ("G3", "b = 1"), ("G4", "a >")]:
...     _ = m.register("T", group, expr, "SQL92", 1)
>>> calc_bitmap(m.filter_datas("T"), m.bloom, {"a": "5"}).hex()
'0000002000000100020000000000'
"""
from __future__ import annotations

import math
from typing import List, Mapping, Optional, Sequence, Union

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketfilter.bloom import BloomFilter

ColumnOrName = Union[Column, str]


def _usable(filter_datas) -> list:
    """The filter datas the dispatcher evaluates: compiled expression and bloom data present."""
    return [d for d in filter_datas if d.compiled is not None and d.bloom_filter_data is not None]


def calc_bitmap(filter_datas: Sequence, bloom: BloomFilter,
                props: Optional[Mapping[str, object]]) -> Optional[bytes]:
    """The bitmap (``ceil(m/8)`` bytes) for one message's properties, or None without filter data.

    A group whose bloom data does not fit ``bloom`` makes ``hashTo`` throw, which aborts the whole
    dispatch step in RocketMQ: that message then gets no bitmap (None), as here.
    """
    if not filter_datas:
        return None
    if props is not None and not isinstance(props, Mapping):
        props = dict(props)  # Arrow's to_pylist gives a map column as (key, value) pairs
    props = props or {}
    bits = bytearray(math.ceil(bloom.m / 8))
    for data in _usable(filter_datas):
        if not data.compiled.matches(props):
            continue
        if not bloom.is_valid(data.bloom_filter_data):
            return None
        for pos in data.bloom_filter_data.bit_pos:
            bits[pos // 8] |= 1 << (pos % 8)
    return bytes(bits)


def _byte_masks(positions: Sequence[int], n_bytes: int) -> List[int]:
    masks = [0] * n_bytes
    for pos in positions:
        masks[pos // 8] |= 1 << (pos % 8)
    return masks


def calc_bitmap_column(filter_datas: Sequence, bloom: BloomFilter,
                       properties_col: ColumnOrName = "properties",
                       promoted: Optional[Mapping[str, str]] = None) -> Optional[Column]:
    """:func:`calc_bitmap` as one binary Column over a ``map<string,string>`` properties column,
    or None (no Column at all) when there is no filter data, so the caller writes null.

    Built from Spark built-ins only: each group's selector decision appears once, choosing its
    byte masks (a literal ``array<int>``) or null; ``aggregate`` ORs the chosen masks byte by byte
    and the result is hex-encoded and ``unhex``-ed into ``binary``.

    >>> df.select(calc_bitmap_column(m.filter_datas("T"), m.bloom).alias("filter_bitmap"))  # doctest: +SKIP
    """
    if not filter_datas:
        return None
    n_bytes = math.ceil(bloom.m / 8)
    chosen: List[Column] = []
    invalid: List[Column] = []
    for data in _usable(filter_datas):
        decision = data.compiled.to_column(properties_col, promoted=promoted)
        if not bloom.is_valid(data.bloom_filter_data):
            invalid.append(decision)
            continue
        masks = F.array(*[F.lit(b) for b in _byte_masks(data.bloom_filter_data.bit_pos, n_bytes)])
        chosen.append(F.when(decision, masks))
    zeros = F.array(*[F.lit(0) for _ in range(n_bytes)])
    if chosen:
        or_bytes = F.aggregate(
            F.array(*chosen), zeros,
            lambda acc, masks: F.when(masks.isNull(), acc).otherwise(
                F.zip_with(acc, masks, lambda a, b: a.bitwiseOR(b))))
    else:
        or_bytes = zeros
    bitmap = F.unhex(F.array_join(F.transform(or_bytes, lambda b: F.lpad(F.hex(b), 2, "0")), ""))
    if invalid:
        poisoned = invalid[0]
        for decision in invalid[1:]:
            poisoned = poisoned | decision
        bitmap = F.when(poisoned, F.lit(None).cast("binary")).otherwise(bitmap)
    return bitmap


def bitmap_bits(bitmap: Optional[bytes]) -> Optional[List[int]]:
    """The set bit positions of a bitmap (LSB first within each byte), for diagnostics.

    >>> bitmap_bits(bytes.fromhex("0000002000000100020000000000"))
    [29, 48, 65]
    """
    if bitmap is None:
        return None
    return [i * 8 + b for i, byte in enumerate(bitmap) for b in range(8) if byte & (1 << b)]
