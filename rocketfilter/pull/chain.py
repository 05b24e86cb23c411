"""A consumer's successive pulls of one queue without a numpy pass per pull, where that is exact.

:func:`.batch.pull_sequence_arrays` runs :class:`.window.PreparedQueue`'s pull once per pull:
about 25 us each, so a replay of 50M messages spends most of its loop in numpy's per-call
overhead (1.5M pulls of 8 to 32 messages). On the queues dispatch writes, a pull's end needs no
per-pull work:

* no hole in the queue, commit-log positions in order, no removed record the CQ check passes
  (nothing for ``skipUntilPhy``), every record of positive size;
* no byte limit can bite before the count limit: in each tier (in memory or on disk),
  ``(count - 1) * largest found size + largest size <= bytes``.

Then a pull from entry ``i`` ends at the first of: the entry after its ``count``-th found
message in the tier it reaches (prefix counts, one ``searchsorted``-free lookup into the found
positions), the scan window, the end of the CQ file, ``max_offset`` or the data. That is one
array over every possible start, computed once per queue; the chain of pulls is then a scalar
walk through it. Where a condition fails, :func:`pull_chain` answers ``None`` and the caller
runs the general loop, which stays the definition (tests/pull check the two agree).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from rocketfilter.pull.result import GetMessageStatus
from rocketfilter.pull.window import PreparedQueue

_NEVER = np.iinfo(np.int64).max


@dataclass
class PullChain:
    """Pulls as arrays: pull ``k`` scans entries ``[starts[k], ends[k])`` (indexes of the queue's
    arrays) and delivers ``entry_index[entry_pull == k]``."""

    queue_offset0: int
    starts: np.ndarray
    ends: np.ndarray
    entry_index: np.ndarray
    entry_pull: np.ndarray

    @property
    def next_begin_offsets(self) -> np.ndarray:
        return self.queue_offset0 + self.ends

    @property
    def statuses(self) -> list:
        """Each pull's status: FOUND when it delivers, else NO_MATCHED_MESSAGE (no record is
        removed or of size 0 on this path)."""
        counts = np.bincount(self.entry_pull, minlength=len(self.starts))
        found, none = GetMessageStatus.FOUND.value, GetMessageStatus.NO_MATCHED_MESSAGE.value
        return [found if c else none for c in counts.tolist()]


def chain_applies(queue: PreparedQueue) -> bool:
    """Whether every pull's end follows from counts alone (the module's conditions)."""
    qo, n = queue.queue_offset, len(queue.queue_offset)
    if n == 0 or int(qo[-1] - qo[0]) != n - 1 or not queue.ordered:
        return False
    if queue.cand.any() or int(queue.size.min()) < 1 or int(queue.count_limit.min()) < 1:
        return False
    # The usual case in one comparison: the largest count and size (found or not) of all tiers.
    if int(queue.count_limit.max()) * int(queue.size.max()) <= int(queue.bytes_limit.min()):
        return True
    biggest_found = int(np.where(queue.found0, queue.size, 0).max())
    worst = (queue.count_limit - 1) * biggest_found + queue.size
    return bool(np.all(worst <= queue.bytes_limit))


def _ends(queue: PreparedQueue, max_offset: int, found_pos: np.ndarray) -> np.ndarray:
    """For every start entry ``i``: the index where a pull from it stops scanning.
    ``found_pos``: the indexes of the found entries."""
    qo, n, limits = queue.queue_offset, len(queue.queue_offset), queue.limits
    units = limits.consume_queue_units_per_file
    reach = np.minimum(units - qo % units, max_offset - qo)
    ends = np.arange(n, dtype=np.int64) + np.minimum(reach, limits.window_entries(queue.max_msg_nums))
    np.minimum(ends, n, out=ends)
    before = queue.found_count[:n]           # found messages before each entry
    limit = queue.count_limit
    tiers = _tiers(limit)
    # count_limit is constant on each side of the in-memory boundary (positions are in order).
    for lo, hi in tiers:
        c = int(limit[lo])
        # The entry after the c-th found message from i (never before i + 1), or _NEVER.
        nth = np.concatenate((found_pos + 1, np.full(c, _NEVER)))[before + (c - 1)]
        if len(tiers) == 1:
            np.minimum(ends, nth, out=ends)
        else:
            brk = np.maximum(nth, lo)
            ends = np.where(brk < hi, np.minimum(ends, brk), ends)
    return ends


def _tiers(limit: np.ndarray):
    """[lo, hi) runs of equal values."""
    cuts = np.flatnonzero(limit[1:] != limit[:-1]) + 1
    bounds = [0, *cuts.tolist(), len(limit)]
    return list(zip(bounds[:-1], bounds[1:]))


def pull_chain(queue: PreparedQueue, start_offset: int, *, min_offset: int, max_offset: int,
               stop_at: int, max_pulls: Optional[int] = None) -> Optional[PullChain]:
    """The pulls from ``start_offset`` until ``stop_at`` (as ``pull_sequence_arrays`` stops), or
    ``None`` when the general loop must run: a condition of the module fails, the start is not
    an entry, or the pulls would leave the data before ``stop_at``."""
    qo = queue.queue_offset
    if max_pulls is not None and max_pulls < 1:
        return None           # no pull at all: the general loop's answer
    if not (min_offset <= start_offset < max_offset) or not chain_applies(queue):
        return None
    i = start_offset - int(qo[0])
    n = len(qo)
    if not 0 <= i < n:
        return None
    found_pos = np.flatnonzero(queue.found0)
    step = _ends(queue, max_offset, found_pos).item
    last = stop_at - int(qo[0])
    starts: list = []
    add = starts.append
    limit = n + 1 if max_pulls is None else max_pulls    # n + 1: never reached (a pull moves on)
    while True:          # one scalar step per pull: the only per-pull work
        j = step(i)
        add(i)
        if j >= last or len(starts) >= limit:
            break
        if j >= n:            # the next pull finds no entry here: the general loop decides
            return None
        i = j
    s = np.array(starts, dtype=np.int64)
    e = np.empty_like(s)
    e[:-1], e[-1] = s[1:], j
    counts = np.diff(queue.found_count[np.append(s, j)])
    entries = found_pos[np.searchsorted(found_pos, s[0]):][:int(counts.sum())]
    pull = np.repeat(np.arange(len(s), dtype=np.int32), counts)
    return PullChain(int(qo[0]), s, e, entries.astype(np.int64), pull)
