"""A bounded sample of a topic's newest messages, read on the driver without a Spark job: which
properties occur and what values they hold, for the selector lint (``rocketfilter lint --store``).

The CommitLog's row groups that may hold the topic (Delta file statistics prune the files) are
read newest first, by their ``commitlog_offset`` statistics, until ``limit`` messages of the topic
are found or ``max_row_groups`` row groups were read: the work is bounded whatever the topic's
size, and never the whole topic.

Each value is also sorted into the kind a Java number or Boolean parser reads it as
(:func:`value_kind`), so ``describe`` can tell what a property holds and the lint can count the
NaN and Infinity values a numeric comparison will meet.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import pyarrow.compute as pc
import pyarrow.parquet as pq

from rocketfilter import javalang as J
from rocketfilter.delta import footers
from rocketfilter.store import schema as S
from rocketfilter.delta.write import filesystem_path
from rocketfilter.store.tables import StoreTables

DEFAULT_LIMIT = 1000
DEFAULT_MAX_ROW_GROUPS = 64
VALUES_PER_PROPERTY = 20
_COLUMNS = ["topic", "commitlog_offset", "properties"]
KINDS = ("int", "double", "boolean", "nan", "infinity", "other")


def value_kind(value: str) -> str:
    """What Java makes of a property value: ``int`` (``Long.valueOf`` reads it), ``double``
    (``Double.valueOf`` does, a finite number), ``nan`` / ``infinity`` (``Double.valueOf`` gives
    NaN or an infinity, which a numeric comparison orders in its own way), ``boolean`` (true or
    false in any case) or ``other``.

    >>> [value_kind(v) for v in ("42", "19.99", "NaN", "-Infinity", "1e999", "TRUE", "eu")]
    ['int', 'double', 'nan', 'infinity', 'infinity', 'boolean', 'other']
    """
    try:
        J.long_value_of(value)
        return "int"
    except J.NumberFormatError:
        pass
    try:
        number = J.double_value_of(value)
    except J.NumberFormatError:
        return "boolean" if value.lower() in ("true", "false") else "other"
    if number != number:
        return "nan"
    return "infinity" if number in (float("inf"), float("-inf")) else "double"


@dataclass
class PropertySample:
    """The newest ``messages`` of ``topic``: per property name, how many of them carry it, up
    to VALUES_PER_PROPERTY distinct values (newest first), how many values are of each kind
    (:func:`value_kind`), how often each NaN or Infinity spelling occurs, and how many row
    groups were read."""

    topic: str
    messages: int = 0
    counts: Dict[str, int] = field(default_factory=dict)
    values: Dict[str, List[str]] = field(default_factory=dict)
    row_groups_read: int = 0
    kinds: Dict[str, Dict[str, int]] = field(default_factory=dict)
    special: Dict[str, Dict[str, int]] = field(default_factory=dict)   # NaN/Infinity spellings
    _value_counts: Dict[str, Dict[str, int]] = field(default_factory=dict, repr=False)

    def add(self, name: str, value: str) -> None:
        """Count one occurrence of property ``name`` with ``value``."""
        self.counts[name] = self.counts.get(name, 0) + 1
        seen = self.values.setdefault(name, [])
        if not value:   # the broker drops empty values; nothing to classify
            return
        kind = value_kind(value)
        kinds = self.kinds.setdefault(name, {})
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind in ("nan", "infinity"):
            special = self.special.setdefault(name, {})
            special[value] = special.get(value, 0) + 1
        if value not in seen and len(seen) < VALUES_PER_PROPERTY:
            seen.append(value)
        if value in seen:
            counted = self._value_counts.setdefault(name, {})
            counted[value] = counted.get(value, 0) + 1

    def known_properties(self) -> Dict[str, Dict[str, int]]:
        """What ``Selector.lint(known_properties=...)`` takes: name -> {sample value: how many
        sampled messages carry it}; every NaN and Infinity spelling seen is among the values,
        however many other values there were."""
        out = {}
        for name in self.counts:
            counted = dict(self._value_counts.get(name, {}))
            counted.update(self.special.get(name, {}))
            out[name] = counted
        return out


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
                sample.add(name, value)
        if sample.messages >= limit:
            break
    return sample
