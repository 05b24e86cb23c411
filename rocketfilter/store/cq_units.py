"""Point reads of one consume queue's units on the driver, answered from file statistics when
they decide.

RocketMQ's time search (``ConsumeQueue.binarySearchInQueueByTime``) and the broker's
``checkInMemByConsumeOffset`` read a handful of 20-byte units of one queue. Here a unit is a row
of a ConsumeQueue Delta file, and the file's Delta statistics (min/max of ``queue_offset``,
``commitlog_offset``, ``store_timestamp``) often answer a comparison without opening the file:
a file whose newest message is older than the time asked about holds no unit at or after it.
Only when the statistics do not decide are the row groups holding the unit read with pyarrow
(their footer says which), and kept for the next probe. No Spark job runs: a lookup reads a few
row groups, as a broker reads a few units.

A unit's store time is what ``CommitLog.pickupStoreTimestamp`` answers: -1 (:data:`EXPIRED`)
when its message is below the CommitLog's min offset, or when the unit is below the queue's min
offset (a broker has deleted or skipped those).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rocketfilter.delta import footers
from rocketfilter.store import schema as S
from rocketfilter.delta.stats import FileStats
from rocketfilter.delta.write import filesystem_path
from rocketfilter.store.errors import StoreDamagedError
from rocketfilter.store.tables import StoreTables

EXPIRED = -1
_COLUMNS = ["topic", "queue_id", "queue_offset", "commitlog_offset", "size", "store_timestamp"]


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


@dataclass
class _Rows:
    """One row group's units of this queue, sorted by queue offset."""

    offsets: np.ndarray
    phy: np.ndarray
    size: np.ndarray
    times: np.ndarray   # store times, EXPIRED already applied

    def index(self, q: int) -> Optional[int]:
        i = int(np.searchsorted(self.offsets, q))
        return i if i < len(self.offsets) and self.offsets[i] == q else None


class QueueUnits:
    """The units of queue ``(topic, queue_id)`` of a store's latest snapshot.

    ``min_offset``/``max_offset`` are the queue's ``[min, max)`` (0, 0 for a queue that never
    received a message). ``files_opened`` lists the data files whose footer or rows were read,
    in order; the statistics of the others decided without them.
    """

    def __init__(self, tables: StoreTables, topic: str, queue_id: int):
        self.tables, self.topic, self.queue_id = tables, topic, queue_id
        found = tables.consumequeue_state().offsets(topic, queue_id)
        self.min_offset, self.max_offset = found if found is not None else (0, 0)
        self.min_commitlog_offset = tables.commitlog_state().min_commitlog_offset
        where = [("topic", "=", topic), ("queue_id", "=", queue_id),
                 ("queue_offset", ">=", self.min_offset), ("queue_offset", "<", self.max_offset)]
        self.files: List[FileStats] = (tables.table(S.CONSUMEQUEUE).files(where)
                                       if self.max_offset > self.min_offset else [])
        self.files_opened: List[str] = []
        self._rows: List[_Rows] = []
        self._loaded: set = set()   # (path, row group) already read

    # --- exact values ----------------------------------------------------------------------
    def unit(self, q: int) -> Optional[dict]:
        """The unit at queue offset ``q`` (its commitlog_offset and size), or None below the
        min offset or at/after the max offset."""
        if not self.min_offset <= q < self.max_offset:
            return None
        rows, i = self._find(q)
        return {"queue_offset": q, "commitlog_offset": int(rows.phy[i]), "size": int(rows.size[i])}

    def store_time(self, q: int) -> int:
        """``pickupStoreTimestamp`` of the unit at ``q``: its store time, or EXPIRED."""
        if not self.min_offset <= q < self.max_offset:
            return EXPIRED
        rows, i = self._find(q)
        return int(rows.times[i])

    # --- comparisons, from statistics when they decide -------------------------------------
    def compare(self, q: int, t: int) -> int:
        """The sign of ``store_time(q) - t``."""
        if not self.min_offset <= q < self.max_offset:
            return _sign(EXPIRED - t)
        cached = self._cached(q)
        if cached is not None:
            return _sign(int(cached[0].times[cached[1]]) - t)
        files = self._candidates(q)
        live = self._live(files)
        if live is False:
            return _sign(EXPIRED - t)
        times = _bounds(files, "store_timestamp")
        if live and times is not None:
            lo, hi = times
            if hi < t:
                return -1
            if lo > t:
                return 1
            if lo == hi == t:
                return 0
        return _sign(self.store_time(q) - t)

    def is_expired(self, q: int) -> bool:
        """Whether the unit's message is below the CommitLog's min offset (or the unit is below
        the queue's min offset): the binary search's ``phyOffset < minPhysicOffset``."""
        if not self.min_offset <= q < self.max_offset:
            return True
        cached = self._cached(q)
        if cached is None:
            live = self._live(self._candidates(q))
            if live is not None:
                return not live
            cached = self._find(q)
        rows, i = cached
        return bool(rows.phy[i] < self.min_commitlog_offset)

    def equal_run_end(self, q: int, limit: int, step: int, t: int) -> int:
        """From ``q`` (whose store time is ``t``), the last unit reached by stepping ``step``
        (+1 or -1) while store times stay ``t``, never past ``limit``: the walk RocketMQ makes
        to the first or last of several messages stored in the same millisecond."""
        pos = q
        while pos != limit:
            nxt = pos + step
            if not self.min_offset <= nxt < self.max_offset:
                return pos
            jump = self._uniform_file_edge(nxt, step, t)
            if jump is not None:
                pos = max(jump, limit) if step < 0 else min(jump, limit)
                continue
            rows, i = self._find(nxt)
            same = rows.times == t
            run = same[i:] if step > 0 else same[i::-1]
            if not run[0]:
                return pos
            stop = int(np.argmin(run)) if not run.all() else len(run)
            last = i + (stop - 1) * step
            # only units that follow each other without a gap count as a run
            if abs(int(rows.offsets[last]) - nxt) != stop - 1:
                last = i
            end = int(rows.offsets[last])
            pos = max(end, limit) if step < 0 else min(end, limit)
        return pos

    # --- internals ---------------------------------------------------------------------------
    def _candidates(self, q: int) -> List[FileStats]:
        """Files that may hold unit ``q`` (by their queue_offset statistics)."""
        out = []
        for f in self.files:
            lo, hi = f.min.get("queue_offset"), f.max.get("queue_offset")
            if (lo is None or lo <= q) and (hi is None or q <= hi):
                out.append(f)
        if not out:
            raise self._missing(q)
        return out

    def _live(self, files: Sequence[FileStats]) -> Optional[bool]:
        """True when every message these files point at still exists, False when none does,
        None when the statistics cannot tell."""
        bounds = _bounds(files, "commitlog_offset")
        if bounds is None:
            return None
        if bounds[1] < self.min_commitlog_offset:
            return False
        return True if bounds[0] >= self.min_commitlog_offset else None

    def _uniform_file_edge(self, q: int, step: int, t: int) -> Optional[int]:
        """When ``q`` lies in one file that holds only this queue, overlaps no other file, and
        whose units all have store time ``t`` and live messages: that file's edge in the
        direction of ``step``."""
        files = self._candidates(q)
        if len(files) != 1:
            return None
        f = files[0]
        exact = all(f.min.get(c) == f.max.get(c) == v for c, v in (("topic", self.topic), ("queue_id", self.queue_id)))
        lo, hi = f.min.get("queue_offset"), f.max.get("queue_offset")
        if (not exact or lo is None or hi is None or self._live([f]) is not True
                or f.min.get("store_timestamp") != t or f.max.get("store_timestamp") != t):
            return None
        if any(g is not f and not (g.max.get("queue_offset", hi + 1) < lo or g.min.get("queue_offset", lo - 1) > hi)
               for g in self.files):
            return None
        return min(hi, self.max_offset - 1) if step > 0 else max(lo, self.min_offset)

    def _cached(self, q: int):
        for rows in self._rows:
            i = rows.index(q)
            if i is not None:
                return rows, i
        return None

    def _find(self, q: int):
        """``(rows, index)`` of unit ``q``, reading the row groups that may hold it."""
        found = self._cached(q)
        if found is not None:
            return found
        for f in self._candidates(q):
            self._load(f, q)
        found = self._cached(q)
        if found is None:
            raise self._missing(q)
        return found

    def _load(self, f: FileStats, q: int) -> None:
        groups = _row_groups(f.path)
        self._opened(f.path)
        wanted = [g for g, (rows, stats) in enumerate(groups or ())
                  if rows and (f.path, g) not in self._loaded and _may_hold(stats, self.queue_id, q)]
        if groups is None:  # no footer statistics: read the whole file once
            wanted = [None] if (f.path, None) not in self._loaded else []
        for g in wanted:
            table = _read(self.tables, f.path, g)
            self._loaded.add((f.path, g))
            mine = table.filter(pc.and_(pc.equal(table["topic"], self.topic),
                                        pc.equal(table["queue_id"], self.queue_id)))
            if mine.num_rows == 0:
                continue
            mine = mine.sort_by("queue_offset")
            phy = mine["commitlog_offset"].to_numpy()
            stored = mine["store_timestamp"].fill_null(EXPIRED).to_numpy()
            times = np.where(phy < self.min_commitlog_offset, EXPIRED, stored)
            self._rows.append(_Rows(mine["queue_offset"].to_numpy(), phy, mine["size"].to_numpy(), times))

    def _opened(self, path: str) -> None:
        if path not in self.files_opened:
            self.files_opened.append(path)

    def _missing(self, q: int) -> StoreDamagedError:
        return StoreDamagedError(
            f"store {self.tables.uri}: the consumequeue table has no entry {q} of topic {self.topic!r} "
            f"queue {self.queue_id}, although the queue holds [{self.min_offset}, {self.max_offset})")


def _bounds(files: Sequence[FileStats], column: str) -> Optional[tuple]:
    lows = [f.min.get(column) for f in files]
    highs = [f.max.get(column) for f in files]
    if not files or None in lows or None in highs:
        return None
    return min(lows), max(highs)


def _may_hold(stats: dict, queue_id: int, q: int) -> bool:
    """Whether a row group's footer statistics allow a row of ``queue_id`` at offset ``q``."""
    for column, value in (("queue_id", queue_id), ("queue_offset", q)):
        lo, hi = stats.get(column, (None, None))
        if isinstance(lo, int) and isinstance(hi, int) and not lo <= value <= hi:
            return False
    return True


def _row_groups(path: str):
    """The file's row groups and their statistics (read once per process)."""
    return footers.row_group_stats(path)


def _read(tables: StoreTables, path: str, group: Optional[int]):
    """One row group (None: the whole file) of a ConsumeQueue data file, the columns we need."""
    filesystem, local = filesystem_path(path)
    try:
        with filesystem.open_input_file(local) as handle:
            parquet = pq.ParquetFile(handle)
            if group is None:
                return parquet.read(columns=_COLUMNS)
            return parquet.read_row_group(group, columns=_COLUMNS)
    except FileNotFoundError:
        tables.check_files(S.CONSUMEQUEUE)
        raise
