"""The writing half of :mod:`rocketfilter.delta.table`: parquet data files and their Delta stats.

The file writing runs inside Spark tasks (``mapInArrow``) as well as on the driver, so this module
imports neither deltalake nor pyspark. A task writes its rows straight into the table directory
and returns one small row per file (:data:`RESULT_SCHEMA`), which the driver commits. The
files' Delta stats are computed by :mod:`.stats`.
"""
from __future__ import annotations

import functools
import json
import math
import time
import uuid
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

# The stats names lived here before delta_stats: re-exported (see __all__) for their importers.
# filesystem_path is re-exported: code imports it from this module.
from rocketfilter.delta.paths import filesystem_path  # noqa: F401
from rocketfilter.delta.stats import (STRING_PREFIX, StatsAccumulator, delta_stats_json,
                                            string_upper_bound)

__all__ = [
    "RESULT_SCHEMA", "RESULT_DDL", "COMPRESSION", "filesystem_path", "conform_batch",
    "ParquetFileSequence", "write_batches", "write_dataframe", "delete_files",
    "SAFE_WRITER_FEATURES", "write_problem", "write_partition", "TableWriter",
    # rocketfilter.delta.stats
    "STRING_PREFIX", "StatsAccumulator", "delta_stats_json", "string_upper_bound",
]

# One row per data file written; bodies never travel back to the driver.
RESULT_SCHEMA = pa.schema([
    ("path", pa.string()),               # relative to the table root
    ("size", pa.int64()),
    ("num_records", pa.int64()),
    ("modification_time", pa.int64()),  # ms since epoch
    ("stats", pa.string()),              # Delta stats JSON
    ("split_key", pa.string()),          # JSON list of the split_on values the file holds
])
RESULT_DDL = ("path string, size long, num_records long, modification_time long, stats string, "
              "split_key string")

COMPRESSION = "zstd"


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema, where: str) -> pa.RecordBatch:
    """Cast ``batch`` to exactly ``schema`` (Spark may hand over large_string/large_binary).

    Raises ValueError naming the column when a non-nullable column holds nulls: a REQUIRED parquet
    column cannot store them and Delta readers would reject the file.
    """
    if batch.schema.names != schema.names:
        batch = batch.select(schema.names)
    for field, column in zip(schema, batch.columns):
        if not field.nullable and column.null_count:
            raise ValueError(f"{where}: column {field.name!r} is NOT NULL in the table schema "
                             f"but {column.null_count} rows are null")
    return batch if batch.schema.equals(schema) else batch.cast(schema)


class ParquetFileSequence:
    """Writes batches as one or more parquet files of at most ``max_rows_per_file`` rows each.

    Rows are buffered to whole row groups of ``row_group_rows`` (Spark's arrow batches are 10,000
    rows, which would otherwise leave ragged row groups). ``results`` holds one
    :data:`RESULT_SCHEMA` dict per closed file.
    """

    def __init__(self, root_uri: str, schema: pa.Schema, stats_columns: Sequence[str], *,
                 max_rows_per_file: int, row_group_rows: int, task: int = 0,
                 split_on: Sequence[str] = ()):
        if max_rows_per_file < 1 or row_group_rows < 1:
            raise ValueError("max_rows_per_file and row_group_rows must be positive, got "
                             f"{max_rows_per_file} and {row_group_rows}")
        self.fs, self.root = filesystem_path(root_uri)
        self.root_uri, self.schema, self.stats_columns = root_uri, schema, list(stats_columns)
        self.max_rows, self.group_rows, self.task = max_rows_per_file, row_group_rows, task
        self.results: List[dict] = []
        self._pending: List[pa.RecordBatch] = []
        self._pending_rows = 0
        self._sink = self._writer = self._stats = self._name = None
        self._file_rows = 0
        # Everything but binary bodies gains from dictionary pages; bodies only waste CPU trying.
        self._dictionary = [f.name for f in schema if not pa.types.is_binary(f.type)]
        # A new file starts whenever these columns change value, so per-column min/max stats
        # describe one key (one queue) exactly and prune precisely.
        self.split_on, self._key = list(split_on), None

    def write(self, batch: pa.RecordBatch) -> None:
        batch = conform_batch(batch, self.schema, self.root_uri)
        if batch.num_rows == 0:
            return
        if not self.split_on:
            self._append(batch)
            return
        for segment in _runs(batch, self.split_on):
            key = tuple(segment.column(c)[0].as_py() for c in self.split_on)
            if self._key is not None and key != self._key:
                self._flush()
                self._close_file()
            self._key = key
            self._append(segment)

    def _flush(self) -> None:
        if self._pending_rows:
            self._emit(pa.Table.from_batches(self._pending, self.schema))
        self._pending, self._pending_rows = [], 0

    def _append(self, batch: pa.RecordBatch) -> None:
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        if self._pending_rows >= self.group_rows:
            table = pa.Table.from_batches(self._pending, self.schema)
            whole = (table.num_rows // self.group_rows) * self.group_rows
            self._emit(table.slice(0, whole))
            rest = table.slice(whole).combine_chunks()
            self._pending, self._pending_rows = rest.to_batches(), rest.num_rows

    def close(self) -> List[dict]:
        self._flush()
        self._close_file()
        return self.results

    def abort(self) -> None:
        """Delete every file this sequence wrote (none of them is committed yet)."""
        self._close_file()
        for row in self.results:
            self.fs.delete_file(f"{self.root}/{row['path']}")
        self.results = []

    def _emit(self, table: pa.Table) -> None:
        offset = 0
        while offset < table.num_rows:
            if self._writer is None:
                self._open_file()
            take = min(self.group_rows, self.max_rows - self._file_rows, table.num_rows - offset)
            chunk = table.slice(offset, take)
            self._writer.write_table(chunk, row_group_size=self.group_rows)
            self._stats.update(chunk)
            self._file_rows += take
            offset += take
            if self._file_rows >= self.max_rows:
                self._close_file()

    def _open_file(self) -> None:
        # Delta-style unique names; the task's number only helps a human reading a listing.
        self._name = f"part-{self.task:05d}-{uuid.uuid4()}-c000.{COMPRESSION}.parquet"
        self._sink = self.fs.open_output_stream(f"{self.root}/{self._name}")
        self._writer = pq.ParquetWriter(self._sink, self.schema, compression=COMPRESSION,
                                        use_dictionary=self._dictionary, write_statistics=True)
        self._stats = StatsAccumulator(self.stats_columns)
        self._file_rows = 0

    def _close_file(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        if self._sink.closed:  # an object store's stream: closed with the writer
            size = self.fs.get_file_info(f"{self.root}/{self._name}").size
        else:
            size = self._sink.tell()
            self._sink.close()
        self.results.append({
            "path": self._name, "size": size, "num_records": self._file_rows,
            "modification_time": int(time.time() * 1000),
            "stats": json.dumps(self._stats.stats(), ensure_ascii=False),
            "split_key": json.dumps(list(self._key), ensure_ascii=False) if self.split_on else None,
        })
        self._writer = self._sink = self._stats = None


def _runs(batch: pa.RecordBatch, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """Consecutive slices of ``batch`` over which ``columns`` keep one value."""
    import numpy as np
    import pyarrow.compute as pc

    n = batch.num_rows
    change = np.zeros(max(n - 1, 0), dtype=bool)
    for name in columns:
        col = batch.column(name)
        differs = pc.not_equal(col.slice(1), col.slice(0, n - 1))
        change |= pc.fill_null(differs, True).to_numpy(zero_copy_only=False)
    bounds = [0, *(np.flatnonzero(change) + 1).tolist(), n]
    for start, end in zip(bounds, bounds[1:]):
        yield batch.slice(start, end - start)


def write_batches(batches: Iterable[pa.RecordBatch], root_uri: str, schema: pa.Schema,
                  stats_columns: Sequence[str], *, max_rows_per_file: int, row_group_rows: int,
                  task: int = 0, split_on: Sequence[str] = ()) -> List[dict]:
    """Write ``batches`` under ``root_uri``; return one :data:`RESULT_SCHEMA` dict per file.

    On failure the files written so far are deleted before the error propagates.
    """
    files = ParquetFileSequence(root_uri, schema, stats_columns, task=task, split_on=split_on,
                                max_rows_per_file=max_rows_per_file, row_group_rows=row_group_rows)
    try:
        for batch in batches:
            files.write(batch)
        return files.close()
    except BaseException:
        files.abort()
        raise


def write_dataframe(df, root_uri: str, schema: pa.Schema, stats_columns: Sequence[str], *,
                    max_rows_per_file: int, row_group_rows: int,
                    split_on: Sequence[str] = (), storage_options: Optional[dict] = None) -> List[dict]:
    """Have Spark's executors write ``df`` (already in table schema) under ``root_uri``.

    Only the :data:`RESULT_SCHEMA` rows come back to the driver, never the data.
    """
    body = functools.partial(write_partition, root_uri=root_uri, schema=schema,
                             stats_columns=list(stats_columns), max_rows_per_file=max_rows_per_file,
                             row_group_rows=row_group_rows, split_on=list(split_on),
                             storage_options=storage_options)
    return [row.asDict() for row in df.mapInArrow(body, RESULT_DDL).collect()]


def delete_files(root_uri: str, names: Iterable[str]) -> None:
    """Best-effort delete of uncommitted files (a full vacuum collects what is left)."""
    fs, root = filesystem_path(root_uri)
    for name in names:
        try:
            fs.delete_file(f"{root}/{name}")
        except OSError:
            pass


# Writer features our raw add/remove commits honour; the reader features are in delta.py.
SAFE_WRITER_FEATURES = frozenset({"appendOnly", "invariants", "changeDataFeed", "domainMetadata",
                                  "timestampNtz", "vacuumProtocolCheck", "v2Checkpoint"})
# Column metadata and table properties that delta-rs's own writers enforce but raw commits skip.
_COLUMN_RULES = ("delta.invariants", "delta.generationExpression", "delta.identity.")


def write_problem(writer_features: Iterable[str], configuration: Dict[str, str],
                  schema_json: str) -> Optional[tuple]:
    """(feature, detail) that makes committing raw add/remove actions unsafe, else None.

    >>> write_problem(["appendOnly"], {}, '{"fields": []}') is None
    True
    >>> write_problem([], {"delta.constraints.ok": "x > 0"}, '{"fields": []}')
    ('constraints or generated columns', " ['delta.constraints.ok']")
    """
    unknown = set(writer_features or ()) - SAFE_WRITER_FEATURES
    if unknown:
        return "writer features", f" {sorted(unknown)}"
    rules = [k for k in configuration if k.startswith("delta.constraints.")]
    rules += [f"{f['name']}: {k}" for f in json.loads(schema_json)["fields"]
              for k in f.get("metadata", {}) if k.startswith(_COLUMN_RULES)]
    return ("constraints or generated columns", f" {rules}") if rules else None


def write_partition(batches: Iterator[pa.RecordBatch], *, root_uri: str, schema: pa.Schema,
                    stats_columns: Sequence[str], max_rows_per_file: int,
                    row_group_rows: int, split_on: Sequence[str] = (),
                    storage_options: Optional[dict] = None) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: write this partition's rows, yield only the file descriptions.
    ``storage_options`` (an object store's, resolved on the driver) travel with the task, so an
    executor needs no environment of its own."""
    from pyspark import TaskContext

    from rocketfilter.delta.object_store import register

    register(root_uri, storage_options)
    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    rows = write_batches(batches, root_uri, schema, stats_columns, task=task, split_on=split_on,
                         max_rows_per_file=max_rows_per_file, row_group_rows=row_group_rows)
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=RESULT_SCHEMA)


class TableWriter:
    """The data-writing methods of :class:`rocketfilter.delta.table.Table`, which provides the
    attributes below and ``read``, ``commit``, ``version``, ``_check_writable``. New data files
    are not part of the table until committed; ``rewrite`` commits its own.
    """

    uri: str
    storage_options: Optional[dict]
    schema: Any            # pyspark StructType
    arrow_schema: pa.Schema
    stats_columns: Sequence[str]

    def _adds(self, rows: list, data_change: bool) -> list:
        from deltalake.transaction import AddAction

        return [AddAction(r["path"], r["size"], {}, r["modification_time"], data_change, r["stats"])
                for r in rows]

    def _write_df(self, df, max_rows_per_file: int, row_group_rows: int,
                  data_change: bool, split_on: Sequence[str] = ()) -> list:
        rows = write_dataframe(df, self.uri, self.arrow_schema, self.stats_columns, split_on=split_on,
                               storage_options=self.storage_options,
                               max_rows_per_file=max_rows_per_file, row_group_rows=row_group_rows)
        return self._adds(rows, data_change)

    def write(self, df, *, sort_by: Sequence[str] = (),
              max_rows_per_file: int = 1_000_000, row_group_rows: int = 8192,
              split_on: Sequence[str] = ()) -> list:
        """Write ``df`` as new data files; return their ``AddAction``\\ s for :meth:`commit`.

        Each Spark partition writes one or more files, its rows sorted by ``sort_by``; a new file
        starts whenever the ``split_on`` columns change value.

        >>> t.commit(t.write(df, sort_by=["topic", "queue_id", "queue_offset"]))  # doctest: +SKIP
        """
        from pyspark.sql import functions as F

        self._check_writable()
        want, have = self.schema.fieldNames(), set(df.columns)
        if set(want) != have:
            raise ValueError(f"{self.uri}: DataFrame columns differ from the table's: missing "
                             f"{sorted(set(want) - have)}, unexpected {sorted(have - set(want))}")
        df = df.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in self.schema.fields])
        if sort_by:
            df = df.sortWithinPartitions(*sort_by)
        return self._write_df(df, max_rows_per_file, row_group_rows, True, split_on)

    def write_arrow(self, table: pa.Table, *, max_rows_per_file: int = 1_000_000,
                    row_group_rows: int = 8192) -> list:
        """Write small driver-side data (topics, offsets); return the ``AddAction``\\ s.

        >>> t.commit(t.write_arrow(pa.Table.from_pylist(rows, t.arrow_schema)))  # doctest: +SKIP
        """
        self._check_writable()
        missing = set(self.arrow_schema.names) - set(table.column_names)
        if missing:
            raise ValueError(f"{self.uri}: arrow table lacks columns {sorted(missing)}")
        rows = write_batches(
            table.select(self.arrow_schema.names).to_batches(), self.uri, self.arrow_schema,
            self.stats_columns, max_rows_per_file=max_rows_per_file, row_group_rows=row_group_rows)
        return self._adds(rows, True)

    def rewrite(self, spark, files: list, *, sort_by: Sequence[str],
                max_rows_per_file: int, custom_metadata: Optional[dict] = None,
                row_group_rows: int = 8192, expected_version: Optional[int] = None,
                split_on: Sequence[str] = ()) -> int:
        """Compact ``files`` into new files clustered by ``sort_by``; one dataChange=false commit.

        Concurrent appends do not disturb it, unless ``custom_metadata`` is given: it then commits
        on the loaded version only (``expected_version`` by default), as later commits may carry
        newer metadata it must not shadow.

        >>> t.rewrite(spark, t.files(), sort_by=["commitlog_offset"],  # doctest: +SKIP
        ...           max_rows_per_file=10**6)
        """
        self._check_writable()
        if not files:
            return self.version()
        if custom_metadata is not None and expected_version is None:
            expected_version = self.version()
        parts = max(1, math.ceil(sum(max(f.num_records, 0) for f in files) / max_rows_per_file))
        df = self.read(spark, files=files)
        # Range partitioning gives each output file a narrow (topic, queue, offset) span.
        df = (df.repartitionByRange(parts, *sort_by).sortWithinPartitions(*sort_by) if sort_by
              else df.coalesce(parts))
        adds = self._write_df(df, max_rows_per_file, row_group_rows, False, split_on)
        try:
            return self.commit(adds, files, custom_metadata=custom_metadata, operation="OPTIMIZE",
                               data_change=False, expected_version=expected_version)
        except BaseException:
            delete_files(self.uri, [a.path for a in adds])
            raise
