"""Row-group statistics from parquet footers, read on the driver before any Spark job.

A pull bounds its CommitLog read by the ``commitlog_offset`` range of the ConsumeQueue row
groups its window touches: Delta's per-file statistics are too coarse for that (one
ConsumeQueue file spans most of the CommitLog). Data files are immutable, so each footer is
read once per process; a file that cannot be read or has no statistics gives None, and the
caller takes the slower path that does not need them.
"""
from __future__ import annotations

import logging
from functools import lru_cache
from typing import Optional, Sequence

import pyarrow.parquet as pq

from rocketfilter.delta.write import filesystem_path

log = logging.getLogger(__name__)

Bounds = dict  # column -> (min, max)


@lru_cache(maxsize=1024)
def row_group_stats(path: str) -> Optional[tuple]:
    """``((rows, {column: (min, max)}), ...)`` per row group of the parquet file at ``path``
    (top-level primitive columns with statistics only); None when the footer is unreadable."""
    try:
        fs, local = filesystem_path(path)
        with fs.open_input_file(local) as handle:
            meta = pq.ParquetFile(handle).metadata
    except (OSError, ValueError) as error:
        log.debug("no footer statistics for %s: %s", path, error)
        return None
    groups = []
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        stats = {}
        for i in range(group.num_columns):
            column = group.column(i)
            s = column.statistics
            if "." not in column.path_in_schema and s is not None and s.has_min_max:
                stats[column.path_in_schema] = (s.min, s.max)
        groups.append((group.num_rows, stats))
    return tuple(groups)


def _overlaps(stats: Bounds, where: Sequence[tuple]) -> bool:
    for column, op, value in where:
        lo, hi = stats.get(column, (None, None))
        if not isinstance(lo, int) or not isinstance(value, int):
            continue  # writers may truncate string statistics: only trust integers
        if op == "=" and not lo <= value <= hi:
            return False
        if (op == ">=" and hi < value) or (op == "<" and lo >= value):
            return False
    return True


def bounds(paths: Sequence[str], where: Sequence[tuple], columns: Sequence[str]) -> Optional[Bounds]:
    """The min and max of ``columns`` over the row groups of ``paths`` that may hold rows
    matching ``where`` (``(column, op, value)`` with op ``=``, ``>=`` or ``<``); ``{}`` when no
    row group may, None when a footer or a statistic is missing.

    >>> bounds(files, [("queue_id", "=", 3), ("queue_offset", ">=", 800)], ["commitlog_offset"])  # doctest: +SKIP
    {'commitlog_offset': (1048576, 2097151)}
    """
    found: Bounds = {}
    for path in paths:
        groups = row_group_stats(path)
        if groups is None:
            return None
        for rows, stats in groups:
            if rows == 0 or not _overlaps(stats, where):
                continue
            for column in columns:
                if column not in stats:
                    return None
                lo, hi = stats[column]
                old = found.get(column)
                found[column] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
    return found
