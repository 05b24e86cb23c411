"""The driver's half of a ``rocketmq`` read: which files and row groups each Spark task reads.

A read is ``{queue: (start, end)}`` over one topic. Partitions follow the CommitLog, not the
queues: a topic's queues are interleaved in the CommitLog (a producer puts round robin), so a
task per queue would decode every CommitLog row group once per queue. Instead each task takes a
run of CommitLog row groups (about :data:`PARTITION_ROWS` rows) and the ``commitlog_offset``
range they start; it reads the ConsumeQueue entries of the topic that point into that range
(every queue, each within its offsets), then only the row groups holding those entries. The
ranges tile the CommitLog, so every entry belongs to exactly one task.

Only statistics are read here: the Delta file stats of both tables, the footers of the
ConsumeQueue files of the read (its ``commitlog_offset`` span) and of the CommitLog files in it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from pyspark.sql.datasource import InputPartition

from rocketfilter.delta import footers
from rocketfilter.store import schema as S

PARTITION_ROWS = 1 << 18   # CommitLog rows per task (64 row groups of the default 4096)
Ranges = Dict[int, Tuple[int, int]]


@dataclass
class ScanPartition(InputPartition):
    """One task: the ConsumeQueue entries of ``queues`` (``{queue: (start, end)}``) pointing into
    ``[commitlog_lo, commitlog_hi)``, and the CommitLog row groups that may hold them.
    ``commitlog_groups`` is ``((path, (row group, ...)), ...)`` (group -1: all of the file);
    ``expired`` marks the range before the CommitLog's min offset, whose entries are lost."""

    index: int
    commitlog_lo: int
    commitlog_hi: Optional[int]
    queues: Ranges
    consumequeue_files: Tuple[str, ...]
    commitlog_groups: Tuple[Tuple[str, Tuple[int, ...]], ...] = ()
    expired: bool = False
    min_commitlog_offset: int = 0


def _overlaps(lo: Optional[int], hi: Optional[int], want_lo: int, want_hi: Optional[int]) -> bool:
    """Could ``[lo, hi]`` (None: unknown) meet ``[want_lo, want_hi)`` (None: unbounded)?"""
    return (hi is None or hi >= want_lo) and (lo is None or want_hi is None or lo < want_hi)


def _consumequeue_span(paths: List[str], queues: Ranges) -> Optional[Tuple[int, int]]:
    """The ``commitlog_offset`` span of the read's entries from the ConsumeQueue footers;
    None when a footer or statistic is missing (then the CommitLog is not pruned)."""
    lo = hi = None
    for q, (start, end) in queues.items():
        found = footers.bounds(paths, [("queue_id", "=", q), ("queue_offset", ">=", start),
                                       ("queue_offset", "<", end)], ["commitlog_offset"])
        if found is None:
            return None
        if "commitlog_offset" in found:
            a, b = found["commitlog_offset"]
            lo, hi = (a, b) if lo is None else (min(lo, a), max(hi, b))
    return (lo, hi) if lo is not None else (0, -1)


def _row_groups(path: str) -> List[Tuple[int, Optional[int], Optional[int], int]]:
    """``(group, min, max, rows)`` of ``commitlog_offset`` per row group (None when unknown)."""
    groups = footers.row_group_stats(path)
    if groups is None:
        return [(-1, None, None, 0)]   # unknown: the task reads every row group of the file
    out = []
    for i, (rows, stats) in enumerate(groups):
        lo, hi = stats.get("commitlog_offset", (None, None))
        out.append((i, lo, hi, rows))
    return out


def plan_scan(store, topic: str, ranges: Ranges, *, partition_rows: int = PARTITION_ROWS) -> List[ScanPartition]:
    """The tasks of a read of ``topic`` over ``ranges`` (queues whose start equals their end are
    left out). ``store`` is read through its tables only (no Spark)."""
    queues = {q: (s, e) for q, (s, e) in sorted(ranges.items()) if s < e}
    if not queues:
        return []
    consumequeue = store.table(S.CONSUMEQUEUE)
    commitlog = store.table(S.COMMITLOG)
    min_commitlog = store.commitlog_state().min_commitlog_offset
    cq_files = [f for f in consumequeue.files([("topic", "=", topic)])
                if any(_overlaps(f.min.get("queue_id"), f.max.get("queue_id"), q, q + 1)
                       and _overlaps(f.min.get("queue_offset"), f.max.get("queue_offset"), s, e)
                       for q, (s, e) in queues.items())]
    cq_paths = [f.path for f in cq_files]
    span = _consumequeue_span(cq_paths, queues)
    if span is not None and span[0] > span[1]:
        return []   # no entry in the range (all expired and cleaned up)
    lo, hi = span if span is not None else (0, None)

    def cq_for(a: int, b: Optional[int]) -> Tuple[str, ...]:
        return tuple(f.path for f in cq_files
                     if _overlaps(f.min.get("commitlog_offset"), f.max.get("commitlog_offset"), a, b))

    parts: List[ScanPartition] = []
    if lo < min_commitlog:   # entries whose messages retention already deleted
        parts.append(ScanPartition(0, lo, min_commitlog, queues, cq_for(lo, min_commitlog),
                                   expired=True, min_commitlog_offset=min_commitlog))
        lo = min_commitlog
    where = [("topic", "=", topic), ("commitlog_offset", ">=", lo)]
    if hi is not None:
        where.append(("commitlog_offset", "<=", hi))
    files = sorted(commitlog.files(where), key=lambda f: (f.min.get("commitlog_offset") is None,
                                                          f.min.get("commitlog_offset", 0)))
    groups = [(f.path, g, g_lo, rows) for f in files for g, g_lo, g_hi, rows in _row_groups(f.path)
              if _overlaps(g_lo, g_hi, lo, None if hi is None else hi + 1)]
    if any(g_lo is None for _, _, g_lo, _ in groups):
        partition_rows = 1 << 62   # a file without statistics: one task reads everything
    chunks: List[List] = []   # [first commitlog offset, [(path, [groups])], rows]
    for path, group, g_lo, rows in groups:
        if not chunks or chunks[-1][2] >= partition_rows:
            chunks.append([g_lo if g_lo is not None else lo, [], 0])
        chunk = chunks[-1]
        if not chunk[1] or chunk[1][-1][0] != path:
            chunk[1].append((path, []))
        chunk[1][-1][1].append(group)
        chunk[2] += rows
    for i, (first, runs, _) in enumerate(chunks):
        start = lo if i == 0 else first
        stop = chunks[i + 1][0] if i + 1 < len(chunks) else None
        parts.append(ScanPartition(len(parts), start, stop, queues, cq_for(start, stop),
                                   tuple((p, tuple(g)) for p, g in runs),
                                   min_commitlog_offset=min_commitlog))
    if not chunks:   # entries that point at no CommitLog file: the task reports them
        parts.append(ScanPartition(len(parts), lo, None, queues, cq_for(lo, None),
                                   min_commitlog_offset=min_commitlog))
    return parts
