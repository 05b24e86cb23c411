"""``getOffsetInQueueByTime``: the queue offset of a store time, as a RocketMQ 5.x broker finds it.

The intent: ``LOWER`` is the first offset whose message was stored at or after the time, ``UPPER``
the last one stored at or before it. RocketMQ gets there in three steps, reproduced here exactly
(docs/offsets.md shows where they part from the intent):

1. ``MappedFileQueue.getConsumeQueueMappedFileByTime`` picks one consume-queue file: for LOWER
   the first file (but the last) whose last unit was stored at or after the time, else the last
   file; for UPPER the last file whose first unit was stored at or before it (a unit whose
   message is gone counts as stored at -1), else none.
2. ``ConsumeQueue.binarySearchInQueueByTime`` searches that file only: a time after the file's
   last unit answers past it (LOWER) or its last unit (UPPER); a time before the file's first
   live unit answers the file's start (LOWER) or 0 (UPPER); otherwise a binary search that steps
   over units whose message is gone, then walks to the first (LOWER) or last (UPPER) of the
   units stored in that same millisecond.
3. ``ConsumeQueueStore.getOffsetInQueueByTime`` clamps the answer to the queue's
   ``[minOffset, maxOffset]``, so an empty queue answers 0.

A broker's consume-queue files hold ``mapped_file_size_consume_queue / 20`` units each (300 000 by
default): unit ``q`` is in file ``q // units``. The files that exist are those from the one
holding the queue's min offset to the one holding its last unit. Units are read through
:class:`~rocketfilter.store.cq_units.QueueUnits`, which answers most comparisons from the Delta
files' statistics, so a lookup opens only the files whose store times straddle the time asked.

>>> store.get_offset_in_queue_by_time("TopicTest", 0, 1714557600000)             # doctest: +SKIP
42
"""
from __future__ import annotations

from enum import Enum
from typing import Optional, Union

from rocketfilter.checks import LONG_MAX, _is_int, check_queue_id
from rocketfilter.naming import validate_topic
from rocketfilter.store.cq_units import QueueUnits
from rocketfilter.store.tables import StoreTables


class BoundaryType(str, Enum):
    """RocketMQ's ``BoundaryType``: which offset answers when several messages share the time."""

    LOWER = "LOWER"
    UPPER = "UPPER"


def parse_boundary_type(value: Union[str, BoundaryType]) -> BoundaryType:
    """``"LOWER"``/``"UPPER"`` (any case, as ``BoundaryType.getType`` reads them) or the enum.
    Anything else is refused: ``getType`` would quietly read it as LOWER.

    >>> parse_boundary_type("upper")
    <BoundaryType.UPPER: 'UPPER'>
    """
    if isinstance(value, BoundaryType):
        return value
    if isinstance(value, str) and value.upper() in BoundaryType.__members__:
        return BoundaryType[value.upper()]
    raise ValueError(f"boundary_type must be 'LOWER' or 'UPPER', got {value!r}")


def check_timestamp(value, what: str = "timestamp_ms") -> int:
    """A store time in ms since the epoch: an integer from 0 to 2^63-1."""
    if not _is_int(value) or not 0 <= value <= LONG_MAX:
        raise ValueError(f"{what} must be an integer number of milliseconds since the epoch "
                         f"(0 to {LONG_MAX}), got {value!r}")
    return value


def get_offset_in_queue_by_time(tables: StoreTables, topic: str, queue_id: int, timestamp_ms: int,
                                boundary_type: Union[str, BoundaryType] = "LOWER") -> int:
    """The offset of ``queue_id`` of ``topic`` at ``timestamp_ms`` (ms), as
    ``DefaultMessageStore.getOffsetInQueueByTime(topic, queueId, timestamp, boundaryType)``.

    A queue that never received a message answers 0; a time before the first message answers
    the min offset (both boundaries); a time after the last message answers the max offset
    (LOWER) or the last message's offset (UPPER).
    """
    validate_topic(topic)
    check_queue_id(queue_id)
    check_timestamp(timestamp_ms)
    boundary = parse_boundary_type(boundary_type)
    units = QueueUnits(tables, topic, queue_id)
    return offset_in_queue_by_time(units, tables.config.consume_queue_file_units, timestamp_ms, boundary)


def offset_in_queue_by_time(units, file_units: int, timestamp: int, boundary: BoundaryType) -> int:
    """Steps 1-3 over ``units`` (an object with ``min_offset``, ``max_offset``, ``compare``,
    ``is_expired`` and ``equal_run_end``, as :class:`QueueUnits`), ``file_units`` units a file."""
    lo, hi = units.min_offset, units.max_offset
    if hi <= 0:
        return 0  # no consume-queue file: the search answers 0, the clamp keeps it
    last_file = (hi - 1) // file_units
    first_file = min(lo // file_units, last_file)
    chosen = _file_by_time(units, first_file, last_file, file_units, timestamp, boundary)
    if chosen is None:
        found = 0
    else:
        file_from = chosen * file_units
        count = file_units if chosen < last_file else hi - file_from
        found = _search_file(units, file_from, count, lo, timestamp, boundary)
    return min(max(found, lo), hi)


def _file_by_time(units, first: int, last: int, file_units: int, timestamp: int,
                  boundary: BoundaryType) -> Optional[int]:
    """``getConsumeQueueMappedFileByTime``: a file's start (stop) time is its first (last) unit's
    store time when above 0, else -1; the last file has no stop time."""
    if boundary is BoundaryType.LOWER:
        for k in range(first, last):
            # stop >= t  <=>  store time > 0 and >= t
            if units.compare((k + 1) * file_units - 1, max(timestamp, 1)) >= 0:
                return k
        return last
    for k in range(last, first - 1, -1):
        if units.compare(k * file_units, timestamp) <= 0:  # -1 <= t as well: t >= 0
            return k
    return None


def _search_file(units, file_from: int, count: int, min_offset: int, timestamp: int,
                 boundary: BoundaryType) -> int:
    """``binarySearchInQueueByTime`` over the file's units ``file_from .. file_from+count-1``
    (positions are relative to the file, as the Java's byte positions / 20)."""
    lower = boundary is BoundaryType.LOWER
    floor = max(min_offset - file_from, 0)
    ceiling = count - 1
    if units.compare(file_from + ceiling, timestamp) < 0:
        return file_from + ceiling + 1 if lower else file_from + ceiling
    if units.compare(file_from + floor, timestamp) > 0:
        return file_from if lower else 0
    low, high = floor, ceiling
    target = left = right = -1
    while high >= low:
        mid = (low + high) // 2
        if units.is_expired(file_from + mid):
            low, left = mid + 1, mid
            continue
        sign = units.compare(file_from + mid, timestamp)
        if sign < 0 and units.compare(file_from + mid, 0) < 0:
            return 0  # a negative store time: Java gives up ("Failed to query store timestamp")
        if sign == 0:
            target = mid
            break
        if sign > 0:
            high, right = mid - 1, mid
        else:
            low, left = mid + 1, mid
    if target != -1:
        limit = file_from + (floor if lower else ceiling)
        return units.equal_run_end(file_from + target, limit, -1 if lower else 1, timestamp)
    offset = right if lower else left
    if offset == -1:
        # Java: (fileFromOffset + (-1 byte)) / 20, a long division that truncates towards 0
        return max(file_from - 1, 0)
    return file_from + offset
