"""Plain models of ``getOffsetInQueueByTime`` for the tests, written apart from the package's code.

* :func:`intent` is what the lookup means: LOWER the first offset stored at or after the time,
  UPPER the last one stored at or before it (a unit whose message is gone counts as stored at
  -1), clamped as RocketMQ clamps. RocketMQ answers this whenever store times never decrease.
* :func:`rocketmq` is a line-by-line reading of RocketMQ 5.x's Java over a plain list, in byte
  positions as the Java has them: ``MappedFileQueue.getConsumeQueueMappedFileByTime``,
  ``ConsumeQueue.binarySearchInQueueByTime`` and the clamp of ``ConsumeQueueStore``.
* :class:`ListUnits` feeds the package's algorithm the same list (no store, no statistics).
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

CQ = 20
EXPIRED = -1


class Queue:
    """One queue: ``units[q] = (commitlog_offset, store_time)`` for ``q`` in ``[lo, hi)``."""

    def __init__(self, units: Dict[int, Tuple[int, int]], lo: int, hi: int, min_phy: int):
        self.units, self.lo, self.hi, self.min_phy = units, lo, hi, min_phy

    def pickup(self, q: int) -> int:
        """``CommitLog.pickupStoreTimestamp``: -1 for a message that is gone (or a unit below
        the min offset, which a broker has deleted or that points at a deleted message)."""
        if not self.lo <= q < self.hi or self.units[q][0] < self.min_phy:
            return EXPIRED
        return self.units[q][1]


def intent(queue: Queue, t: int, boundary: str) -> int:
    times = [queue.pickup(q) for q in range(queue.lo, queue.hi)]
    if boundary == "LOWER":
        return next((queue.lo + i for i, v in enumerate(times) if v >= t), queue.hi)
    last = [queue.lo + i for i, v in enumerate(times) if v <= t]
    return last[-1] if last else queue.lo


def _java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def rocketmq(queue: Queue, units_per_file: int, t: int, boundary: str) -> int:
    lo, hi = queue.lo, queue.hi
    file_size = units_per_file * CQ
    if hi == 0:
        files = []
    else:
        last = (hi - 1) // units_per_file
        files = list(range(min(lo // units_per_file, last), last + 1))
    found = _search(queue, files, units_per_file, file_size, t, boundary) if files else 0
    return min(max(found, lo), hi)   # ConsumeQueueStore: max(min offset), then min(max offset)


def _search(queue: Queue, files, units_per_file: int, file_size: int, t: int, boundary: str) -> int:
    # getConsumeQueueMappedFileByTime (start/stop computed now: a fresh broker)
    start: Dict[int, int] = {}
    stop: Dict[int, int] = {}
    for i in range(len(files) - 1, -1, -1):
        f = files[i] * units_per_file
        first = queue.pickup(f)
        start[i] = first if first > 0 else -1
        stop[i] = -1
        if i < len(files) - 1:
            last = queue.pickup(f + units_per_file - 1)
            stop[i] = last if last > 0 else -1
    chosen: Optional[int] = None
    if boundary == "LOWER":
        for i in range(len(files)):
            if i < len(files) - 1 and stop[i] >= t:
                chosen = i
                break
            if i == len(files) - 1:
                chosen = i
    else:
        for i in range(len(files) - 1, -1, -1):
            if start[i] <= t:
                chosen = i
                break
    if chosen is None:
        return 0
    return _binary_search(queue, files[chosen] * units_per_file * CQ, file_size, t, boundary)


def _binary_search(queue: Queue, file_from: int, file_size: int, t: int, boundary: str) -> int:
    """``binarySearchInQueueByTime`` with byte positions; ``file_from`` is in bytes."""
    min_logic = queue.lo * CQ
    low = min_logic - file_from if min_logic > file_from else 0
    wrote = min(queue.hi * CQ - file_from, file_size)
    rng = wrote if wrote != 0 and wrote != file_size else file_size
    ceiling = rng - CQ
    floor = low
    high = ceiling

    def at(pos: int) -> int:
        return queue.pickup((file_from + pos) // CQ)

    def phy(pos: int) -> int:
        q = (file_from + pos) // CQ
        return queue.units[q][0] if queue.lo <= q < queue.hi else -1

    if at(ceiling) < t:
        return (file_from + ceiling + CQ) // CQ if boundary == "LOWER" else (file_from + ceiling) // CQ
    if at(floor) > t:
        return file_from // CQ if boundary == "LOWER" else 0
    mid = target = left = right = -1
    while high >= low:
        mid = (low + high) // (2 * CQ) * CQ
        if phy(mid) < queue.min_phy:
            low = mid + CQ
            left = mid
            continue
        store_time = at(mid)
        if store_time < 0:
            return 0
        if store_time == t:
            target = mid
            break
        if store_time > t:
            high = mid - CQ
            right = mid
        else:
            low = mid + CQ
            left = mid
    if target != -1:
        offset = target
        if boundary == "LOWER":
            previous = target
            while previous - CQ >= floor and at(previous - CQ) == t:
                previous -= CQ
            offset = previous
        else:
            previous = target
            while previous + CQ <= ceiling and at(previous + CQ) == t:
                previous += CQ
            offset = previous
    else:
        offset = right if boundary == "LOWER" else left
    return _java_div(file_from + offset, CQ)


class ListUnits:
    """The unit interface of ``rocketfilter.store.cq_units.QueueUnits`` over a :class:`Queue`."""

    def __init__(self, queue: Queue):
        self.queue = queue
        self.min_offset, self.max_offset = queue.lo, queue.hi

    def compare(self, q: int, t: int) -> int:
        v = self.queue.pickup(q)
        return (v > t) - (v < t)

    def is_expired(self, q: int) -> bool:
        return not self.queue.lo <= q < self.queue.hi or self.queue.units[q][0] < self.queue.min_phy

    def equal_run_end(self, q: int, limit: int, step: int, t: int) -> int:
        while q != limit and self.queue.pickup(q + step) == t:
            q += step
        return q
