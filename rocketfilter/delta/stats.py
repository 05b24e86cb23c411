"""Per-file Delta statistics: computed as a data file is written, read back from the log, and used
to skip the files a ``where`` cannot match.

A ``where`` is a sequence of ``(column, op, value)`` terms, all of which must hold. Spark tasks
import this module through :mod:`.write`, so it imports neither deltalake nor pyspark at
module level. :class:`TableFiles` gives :class:`rocketfilter.delta.table.Table` its ``files``.

>>> string_upper_bound("abc", 2)
'ac'
>>> delta_stats_json(pa.table({"q": [3, 1, None]}), ["q"])
'{"numRecords": 3, "minValues": {"q": 1}, "maxValues": {"q": 3}, "nullCount": {"q": 1}}'
"""
from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import fs as pafs

from rocketfilter.delta.paths import filesystem_path

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

# Delta-spark also indexes 32-character string prefixes (dataSkippingStringPrefixLength).
STRING_PREFIX = 32
_OPS = ("=", "==", "<", "<=", ">", ">=", "in")


# ---- computing the stats of a new data file -----------------------------------------------------
def string_upper_bound(value: str, n: int = STRING_PREFIX) -> Optional[str]:
    """A string of at most ``n`` characters that is >= ``value`` and every string it prefixes.

    Spark and Delta order strings by UTF-8 bytes, which is code-point order, so bumping the last
    bumpable code point of the ``n``-character prefix gives a safe maximum. ``None`` when no bound
    of that length exists (a prefix made only of U+10FFFF).

    >>> string_upper_bound("short")
    'short'
    >>> string_upper_bound("topic-" + "x" * 40)[-3:]
    'xxy'
    """
    if len(value) <= n:
        return value
    prefix = value[:n]
    for i in range(n - 1, -1, -1):
        code = ord(prefix[i]) + 1
        if code <= 0x10FFFF:
            if 0xD800 <= code <= 0xDFFF:  # surrogates are not characters: skip over them
                code = 0xE000
            return prefix[:i] + chr(code)
    return None


def _bounds(column: pa.ChunkedArray) -> Optional[tuple]:
    """(min, max) as JSON-ready values for the types Delta indexes, else None."""
    t = column.type
    if column.null_count == len(column):
        return None
    if pa.types.is_integer(t):
        pass
    elif pa.types.is_floating(t):
        if pc.any(pc.is_nan(column)).as_py():  # min_max skips NaN, Delta readers would not
            return None
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        mm = pc.min_max(column).as_py()
        return mm["min"][:STRING_PREFIX], string_upper_bound(mm["max"])
    elif pa.types.is_date32(t):
        mm = pc.min_max(column).as_py()
        return mm["min"].isoformat(), mm["max"].isoformat()
    else:  # binary, nested, timestamps (would need ms truncation), decimals: no min/max
        return None
    mm = pc.min_max(column).as_py()
    return mm["min"], mm["max"]


class StatsAccumulator:
    """Delta file statistics (numRecords, minValues, maxValues, nullCount) built chunk by chunk.

    >>> acc = StatsAccumulator(["t"])
    >>> acc.update(pa.table({"t": ["b", "a"]})); acc.update(pa.table({"t": ["c"]}))
    >>> acc.stats()["maxValues"]
    {'t': 'c'}
    """

    def __init__(self, columns: Sequence[str]):
        self.columns = list(columns)
        self.num_records = 0
        self.null_count: Dict[str, int] = {c: 0 for c in self.columns}
        self.min: Dict[str, Any] = {}
        self.max: Dict[str, Any] = {}
        self._unbounded: set = set()  # a string max with no safe bound: leave max out for good

    def update(self, table: pa.Table) -> None:
        self.num_records += table.num_rows
        for name in self.columns:
            column = table.column(name)
            self.null_count[name] += column.null_count
            bounds = _bounds(column)
            if bounds is None:
                continue
            lo, hi = bounds
            if name not in self.min or lo < self.min[name]:
                self.min[name] = lo
            if hi is None:
                self._unbounded.add(name)
            elif name not in self.max or hi > self.max[name]:
                self.max[name] = hi

    def stats(self) -> dict:
        maxes = {k: v for k, v in self.max.items() if k not in self._unbounded}
        return {"numRecords": self.num_records, "minValues": self.min, "maxValues": maxes,
                "nullCount": self.null_count}


def delta_stats_json(table: pa.Table, columns: Sequence[str]) -> str:
    """The Delta ``stats`` JSON of one whole table (see :class:`StatsAccumulator`)."""
    acc = StatsAccumulator(columns)
    acc.update(table)
    return json.dumps(acc.stats(), ensure_ascii=False)


# ---- the snapshot's files, and the where that prunes and filters them --------------------------
@dataclass(frozen=True)
class FileStats:
    """One data file of the current snapshot. ``num_records`` is -1 when the log has no stats."""

    path: str          # absolute URI Spark reads; pyarrow: delta_write.filesystem_path(path)
    size: int
    num_records: int
    min: dict          # column -> min, stats columns only (absent: unknown)
    max: dict

    def __hash__(self) -> int:  # the dicts are unhashable; a path names one file for good
        return hash(self.path)


# Here as it spells FileStats.path; delta.py uses it for the table root as well.
def _file_uri(uri: str) -> str:
    """``uri`` as Spark and pyarrow both read it: local paths get ``file://``, ``s3://`` becomes
    ``s3a://`` (:func:`rocketfilter.delta.object_store.spark_uri`)."""
    from rocketfilter.delta.object_store import spark_uri

    return spark_uri(uri)


def _check_where(schema: StructType, where: Sequence[tuple]) -> None:
    for column, op, value in where:
        if column not in schema.fieldNames():
            raise ValueError(f"where: no column {column!r} in {schema.simpleString()}")
        if op not in _OPS or value is None or (op == "in" and isinstance(value, (str, bytes))):
            raise ValueError(f"where: unsupported ({column!r}, {op!r}, {value!r}); ops are {_OPS} "
                             "with non-null values ('in' takes a list)")


def _where_column(where: Sequence[tuple]):
    """``where`` as a Spark Column, None when empty. Integer comparisons become one SQL
    expression (one JVM call instead of four per term; the names were checked against the
    schema and the values are ints, so no text reaches it); the rest are Column operations."""
    from pyspark.sql import functions as F  # here, not at the top: tasks import this module

    ints = [w for w in where if w[1] != "in" and type(w[2]) is int]
    cond = F.expr(" AND ".join(f"`{c}` {'=' if op == '==' else op} {v}" for c, op, v in ints)) if ints else None
    for column, op, value in (w for w in where if not (w[1] != "in" and type(w[2]) is int)):
        c = F.col(column)
        term = c.isin(list(value)) if op == "in" else {
            "=": c == value, "==": c == value, "<": c < value, "<=": c <= value,
            ">": c > value, ">=": c >= value}[op]
        cond = term if cond is None else cond & term
    return cond


def _may_match(f: FileStats, column: str, op: str, value: Any) -> bool:
    """Could ``f`` hold a row with ``column op value``? Missing stats mean yes."""
    lo, hi = f.min.get(column), f.max.get(column)
    if op in ("=", "=="):
        return (lo is None or lo <= value) and (hi is None or value <= hi)
    if op == "in":
        return any(_may_match(f, column, "=", v) for v in value)
    if op in ("<", "<="):
        return lo is None or (lo < value if op == "<" else lo <= value)
    return hi is None or (hi > value if op == ">" else hi >= value)


def _holds(f: FileStats, column: str, op: str, value: Any) -> bool:
    """Does every row of ``f`` have ``column op value``, by its integer statistics? Only for a
    non-null column (the caller checks): stats skip nulls, which no term matches."""
    lo, hi = f.min.get(column), f.max.get(column)
    if type(lo) is not int or type(hi) is not int:
        return False
    if op == "in":
        values = set(value)
        return hi - lo < len(values) and all(v in values for v in range(lo, hi + 1))
    if type(value) is not int:
        return False
    return {"=": lo == hi == value, "==": lo == hi == value, "<": hi < value, "<=": hi <= value,
            ">": lo > value, ">=": lo >= value}[op]


def unproven(schema, files: Sequence[FileStats], where: Sequence[tuple]) -> list:
    """The terms of ``where`` that some row of ``files`` may fail: the rest need no row filter.
    Spark's Parquet scan pays for every row predicate, one the stats prove too: ``queue_offset
    >= 0`` made a ConsumeQueue scan of 10M entries take 1.3 s instead of 0.9."""
    nullable = {f.name: f.nullable for f in schema.fields}
    return [w for w in where if nullable.get(w[0], True) or not files or not all(_holds(f, *w) for f in files)]


class TableFiles:
    """The file listing of :class:`rocketfilter.delta.table.Table`, which provides the attributes
    below and ``version``."""

    uri: str
    schema: Any                 # pyspark StructType
    stats_columns: Sequence[str]
    _dt: Any                    # deltalake.DeltaTable
    _files: Optional[tuple]     # (version, [FileStats])

    def files(self, where: Sequence[tuple] = ()) -> list[FileStats]:
        """The data files that may hold rows matching every ``(column, op, value)`` of ``where``.

        Pruning is conservative: a file without stats for a column is kept.

        >>> len(t.files([("topic", "=", "orders"), ("queue_offset", ">=", 100)]))  # doctest: +SKIP
        3
        """
        _check_where(self.schema, where)
        version = self.version()
        if self._files is None or self._files[0] != version:
            actions = pa.table(self._dt.get_add_actions(flatten=True))
            has_records = "num_records" in actions.column_names
            found = []
            for row in actions.to_pylist():
                bounds = [{c: row[f"{k}.{c}"] for c in self.stats_columns
                           if row.get(f"{k}.{c}") is not None} for k in ("min", "max")]
                records = row["num_records"] if has_records else None
                found.append(FileStats(f"{_file_uri(self.uri)}/{row['path']}", row["size_bytes"],
                                       -1 if records is None else records, *bounds))
            self._files = (version, found)
        try:
            return [f for f in self._files[1] if all(_may_match(f, *w) for w in where)]
        except TypeError as exc:
            raise ValueError(f"where {list(where)}: values do not compare with the "
                             f"{self.uri} stats: {exc}") from None

    def missing_files(self, files: Optional[Sequence[FileStats]] = None) -> list[str]:
        """Data files of the loaded snapshot (or ``files``) that are not in storage: one listing
        of the table's directory, so a damaged table is caught before it is read or appended to."""
        files = self.files() if files is None else files
        if not files:
            return []
        fs, root = filesystem_path(self.uri)
        try:
            listed = fs.get_file_info(pafs.FileSelector(root, recursive=True))
        except FileNotFoundError:
            listed = []
        present = {info.path[len(root):].lstrip("/") for info in listed
                   if info.type == pafs.FileType.File}
        base = _file_uri(self.uri) + "/"
        return [f.path for f in files
                if urllib.parse.unquote(f.path[len(base):]) not in present
                and f.path[len(base):] not in present]
