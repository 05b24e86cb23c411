"""The consumer-group bloom filter and per-message bitmaps (SEMANTICS §10).

At dispatch the broker sets, in one bitmap per message, the k bits of every SQL92 group whose
selector is TRUE for it; at pull a group's message can be skipped when any of its bits is unset.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Union

import mmh3
from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketfilter.message import java_utf8_bytes

ColumnOrName = Union[Column, str]


@dataclass(frozen=True)
class BloomFilterData:
    """A group's bits: ``bit_pos`` of ``group + "#" + topic`` in a filter of ``bit_num`` bits."""

    bit_pos: List[int]
    bit_num: int


def _signed32(value: int) -> int:
    return ((value & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000


class BloomFilter:
    """``BloomFilter.createByFn(f, n)``: ``error_rate`` is the false-positive percentage f
    (1 <= f < 100) and ``expected`` the number of consumer groups n (>= 1).

    >>> bf = BloomFilter()          # the broker defaults, 20 % and 32 groups
    >>> bf.k, bf.m
    (3, 112)
    >>> bf.bit_positions("CID_abc_efg#TopicTest")
    [22, 53, 14]
    """

    def __init__(self, error_rate: int = 20, expected: int = 32):
        for name, value in (("error_rate", error_rate), ("expected", expected)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"BloomFilter: {name} must be an int, got {value!r}")
        if error_rate < 1 or error_rate >= 100:
            raise ValueError(f"f must be greater or equal than 1 and less than 100 (got f={error_rate})")
        if expected < 1:
            raise ValueError(f"n must be greater than 0 (got n={expected})")
        self.f = error_rate
        self.n = expected
        rate = error_rate / 100.0
        # Same floating-point steps as Java's logMN(base, x) = log(x) / log(base).
        self.k = int(math.ceil(math.log(rate) / math.log(0.5)))
        if self.k < 1:
            raise ValueError(
                "Hash function num is less than 1, maybe you should change the value of error rate or bit num!"
            )
        bits = int(math.ceil(expected * (math.log(1 / rate) / math.log(2)) * (math.log(math.e) / math.log(2))))
        self.m = int(8 * math.ceil(bits / 8.0))

    def __repr__(self) -> str:
        return f"BloomFilter(f={self.f}, n={self.n}, k={self.k}, m={self.m})"

    def bit_positions(self, key: str) -> List[int]:
        """The k bit positions of ``key`` (``calcBitPositions``): Guava murmur3_128 of the key's
        Java UTF-8 bytes, then ``lo + i*hi`` with 32-bit wrap, ``~c`` when negative, mod m."""
        h1 = mmh3.hash64(java_utf8_bytes(key), 0, signed=True)[0]
        lo, hi = _signed32(h1), _signed32(h1 >> 32)
        positions = []
        for i in range(1, self.k + 1):
            combined = _signed32(lo + i * hi)
            if combined < 0:
                combined = ~combined
            positions.append(combined % self.m)
        return positions

    def bloom_data(self, group: str, topic: str) -> BloomFilterData:
        """A consumer group's data, as ``ConsumerFilterManager`` registers it."""
        return BloomFilterData(bit_pos=self.bit_positions(f"{group}#{topic}"), bit_num=self.m)

    def is_valid(self, data: Optional[BloomFilterData]) -> bool:
        """``BloomFilter.isValid``: data made by a filter of this size."""
        return data is not None and data.bit_num == self.m and data.bit_pos is not None and len(data.bit_pos) == self.k

    def bitmap(self, positions_per_group: Iterable[Sequence[int]]) -> bytes:
        """A ``BitsArray`` of m bits with every given group's positions set."""
        data = bytearray(math.ceil(self.m / 8))
        for positions in positions_per_group:
            for pos in positions:
                _check_position(pos, len(data))
                data[pos // 8] |= 1 << (pos % 8)
        return bytes(data)


def _check_position(pos: int, n_bytes: int) -> None:
    if not 0 <= pos < n_bytes * 8:
        raise ValueError(f"bit position {pos} is outside a bitmap of {n_bytes * 8} bits")


def is_hit(bitmap: bytes, positions: Iterable[int]) -> bool:
    """``BloomFilter.isHit``: all ``positions`` are set. A position outside the bitmap raises, as
    ``BitsArray.getBit`` does."""
    for pos in positions:
        _check_position(pos, len(bitmap))
        if not bitmap[pos // 8] & (1 << (pos % 8)):
            return False
    return True


def _byte_at(bitmap: Column, index) -> Column:
    """Byte ``index`` (0-based int or int Column) of a binary Column as an int, null past the end:
    the 1-byte slice in hex, read base 16."""
    if isinstance(index, Column):
        piece = F.substring(bitmap, index + 1, F.lit(1))
    else:
        piece = F.substring(bitmap, index + 1, 1)
    return F.conv(F.hex(piece), 16, 10).cast("int")


def bitmap_hit_column(bitmap_col: ColumnOrName, positions: Union[Iterable[int], Column, str]) -> Column:
    """:func:`is_hit` on a binary Column: null for a null bitmap; a position beyond the bitmap's
    end counts as unset (check the length first where RocketMQ would).

    ``positions`` is either literal ints (one group's ``bit_pos``), unrolled into the plan, or an
    ``array<int>`` Column, e.g. groups' positions joined onto the messages.

    >>> df.filter(bitmap_hit_column("bitmap", bf.bloom_data("G", "T").bit_pos))  # doctest: +SKIP
    """
    bitmap = F.col(bitmap_col) if isinstance(bitmap_col, str) else bitmap_col
    if isinstance(positions, (str, Column)):
        array = F.col(positions) if isinstance(positions, str) else positions

        def bit_set(pos: Column) -> Column:
            byte = _byte_at(bitmap, F.floor(pos / 8).cast("int"))
            return (pos >= 0) & F.coalesce(F.bit_get(byte, pos % 8) == 1, F.lit(False))

        hit = F.forall(array, lambda pos: F.coalesce(bit_set(pos), F.lit(False)))
    else:
        masks: dict = {}
        for pos in positions:
            if pos < 0:
                raise ValueError(f"bit position {pos} is negative")
            masks[pos // 8] = masks.get(pos // 8, 0) | (1 << (pos % 8))
        hit = F.lit(True)
        for index, mask in sorted(masks.items()):
            hit = hit & F.coalesce(_byte_at(bitmap, index).bitwiseAND(F.lit(mask)) == F.lit(mask), F.lit(False))
    return F.when(bitmap.isNull(), F.lit(None).cast("boolean")).otherwise(hit)
