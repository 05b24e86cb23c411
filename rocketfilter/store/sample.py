"""A bounded sample of a topic's newest messages, read on the driver without a Spark job: which
properties occur and what values they hold, for the selector lint (``rocketfilter lint --store``).

The CommitLog's row groups that may hold the topic (Delta file statistics prune the files) are
read newest first, by their ``commitlog_offset`` statistics, until ``limit`` messages of the topic
are found or ``max_row_groups`` row groups were read: the work is bounded whatever the topic's
size, and never the whole topic.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import pyarrow.compute as pc
import pyarrow.parquet as pq

from rocketfilter.delta import footers
from rocketfilter.store import schema as S
from rocketfilter.delta.write import filesystem_path
from rocketfilter.store.tables import StoreTables

DEFAULT_LIMIT = 1000
DEFAULT_MAX_ROW_GROUPS = 64
VALUES_PER_PROPERTY = 20
_COLUMNS = ["topic", "commitlog_offset", "properties"]


@dataclass
class PropertySample:
    """The newest ``messages`` of ``topic``: per property name, how many of them carry it and up
    to VALUES_PER_PROPERTY distinct values (newest first), and how many row groups were read."""

    topic: str
    messages: int = 0
    counts: Dict[str, int] = field(default_factory=dict)
    values: Dict[str, List[str]] = field(default_factory=dict)
    row_groups_read: int = 0

    def known_properties(self) -> Dict[str, List[str]]:
        """What ``Selector.lint(known_properties=...)`` takes: name -> sample values."""
        return {name: list(values) for name, values in self.values.items()}


def _row_groups(path: str) -> List[Tuple[int, Optional[int]]]:
    """``(max commitlog_offset, row group)`` of a CommitLog file; one ``(0, None)`` (the whole
    file) when its footer has no statistics."""
    groups = footers.row_group_stats(path)
    if groups is None:
        return [(0, None)]
    return [(stats.get("commitlog_offset", (0, 0))[1], g) for g, (rows, stats) in enumerate(groups) if rows]


def _read(path: str, group: Optional[int]):
    filesystem, local = filesystem_path(path)
    with filesystem.open_input_file(local) as handle:
        parquet = pq.ParquetFile(handle)
        return parquet.read(columns=_COLUMNS) if group is None else parquet.read_row_group(group, columns=_COLUMNS)


def sample_properties(tables: StoreTables, topic: str, limit: int = DEFAULT_LIMIT, *,
                      max_row_groups: int = DEFAULT_MAX_ROW_GROUPS) -> PropertySample:
    """The properties of (at most) the ``limit`` newest messages of ``topic``.

    >>> sample = sample_properties(store, "OrderEvents", 500)          # doctest: +SKIP
    >>> sample.messages, sample.values["region"]                        # doctest: +SKIP
    (500, ['eu', 'us'])
    """
    if limit < 1 or max_row_groups < 1:
        raise ValueError(f"limit and max_row_groups must be at least 1, got {limit} and {max_row_groups}")
    sample = PropertySample(topic)
    files = tables.table(S.COMMITLOG).files([("topic", "=", topic)])
    order = sorted(((top, f.path, g) for f in files for top, g in _row_groups(f.path)),
                   key=lambda item: item[0], reverse=True)
    for _, path, group in order[:max_row_groups]:
        try:
            rows = _read(path, group)
        except FileNotFoundError:
            tables.check_files(S.COMMITLOG)  # names the lost file
            raise
        sample.row_groups_read += 1
        rows = rows.filter(pc.equal(rows.column("topic"), topic))
        if rows.num_rows == 0:
            continue
        newest = rows.sort_by([("commitlog_offset", "descending")]).slice(0, limit - sample.messages)
        for properties in newest.column("properties").to_pylist():
            sample.messages += 1
            for name, value in properties or ():
                sample.counts[name] = sample.counts.get(name, 0) + 1
                seen = sample.values.setdefault(name, [])
                if value not in seen and len(seen) < VALUES_PER_PROPERTY and value:
                    seen.append(value)
        if sample.messages >= limit:
            break
    return sample
