"""Embedded Delta tables: delta-rs (``deltalake``) owns the transaction log, Spark the parquet data.

Tables stay standard Delta (protocol 1,2, no features, no partition columns), so Databricks and
delta-spark read them as they are. Spark reads a snapshot as an explicit list of files pruned on
per-file min/max statistics; executors write data files with pyarrow (:mod:`.write`) and the
driver commits their descriptions in one delta-rs transaction.

>>> t = Table.open("/tmp/store/topics", TOPICS_SCHEMA, stats_columns=["topic"])  # doctest: +SKIP
>>> t.commit(t.write(df), expected_version=t.version())                           # doctest: +SKIP
1
>>> t.read(spark, where=[("topic", "=", "orders")]).count()                       # doctest: +SKIP
"""
from __future__ import annotations

import json
import math
import os
import time
import uuid
import weakref
from typing import Any, Optional, Sequence

from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import RemoveAction
from pyarrow import fs as pafs
from pyspark.sql import DataFrame, functions as F
from pyspark.sql.types import StructField, StructType

from rocketfilter.delta import object_store
from rocketfilter.delta import write as delta_write
# The errors are re-exported: code imports them from this module.
from rocketfilter.delta.errors import (COMMIT_ID_KEY, OPERATION_KEY, ConcurrentCommitError,  # noqa: F401
                                       DeltaFeatureError, TableMissingError)
from rocketfilter.delta.schema import (DeltaSchemaError, ExtraColumns,  # noqa: F401
                                       add_columns_at, arrow_schema, check_schema)
# DamagedLogError is re-exported with the table's other errors.
from rocketfilter.delta.log import DamagedLogError, check_log, explain_failure  # noqa: F401
# Also re-exported: code imports FileStats, _where_column and _file_uri from this module.
from rocketfilter.delta.stats import (FileStats, TableFiles, _check_where, _file_uri,
                                      _where_column, unproven)

# Reader features a plain parquet scan of the snapshot's files still reads correctly.
_SAFE_READER_FEATURES = frozenset({"timestampNtz", "vacuumProtocolCheck", "v2Checkpoint"})
STATS_PROPERTY = "delta.dataSkippingStatsColumns"
MAX_COMMIT_ATTEMPTS = 20


_NATIVE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _is_connect(spark) -> bool:
    # rocketfilter.spark_mode.is_connect's test, repeated: this package imports nothing of rocketfilter
    return any(cls.__module__.startswith("pyspark.sql.connect") for cls in type(spark).__mro__)


def delta_spark_available(spark) -> bool:
    """True when delta-spark's JVM classes load in ``spark``'s JVM; never raises.

    >>> delta_spark_available(spark)   # doctest: +SKIP
    False
    """
    if _is_connect(spark):
        return False  # no JVM on this side of a Spark Connect session
    try:
        return _NATIVE[spark]
    except (KeyError, TypeError):
        pass
    try:
        # Allowed classic-only access (tests/test_connect_safe.py): Connect returned above.
        jvm = spark.sparkContext._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader)
        found = True
    except Exception:  # no class, no JVM (Spark Connect), a stopped context...
        found = False
    try:
        _NATIVE[spark] = found
    except TypeError:  # not weak-referenceable: just don't cache
        pass
    return found


_FRAMES_KEPT = 32


def _normalize_uri(uri: str) -> str:
    """Local paths become absolute; URIs keep their scheme. No trailing slash."""
    uri = os.fspath(uri)
    if uri.startswith("file://"):
        uri = uri[len("file://"):]
    if "://" in uri:
        return object_store.delta_uri(uri).rstrip("/")
    if "%" in uri:  # delta-rs percent-decodes local paths on load but not on create
        raise ValueError(f"{uri}: a local Delta table path cannot contain '%'")
    return os.path.abspath(os.path.expanduser(uri))


def _now_ms() -> int:
    return int(time.time() * 1000)


class Table(delta_write.TableWriter, TableFiles):
    """One Delta table: a delta-rs snapshot plus Spark reads and writes of its data files.

    Everything answers for the loaded snapshot; :meth:`refresh` moves it to the latest version.
    The data-writing methods (``write``, ``write_arrow``, ``rewrite``) come from
    :class:`~rocketfilter.delta.write.TableWriter`, ``files`` (pruned on the file stats)
    from :class:`~rocketfilter.delta.stats.TableFiles`.
    """

    def __init__(self, uri: str, schema: StructType, dt: DeltaTable, stats_columns: Sequence[str],
                 storage_options: Optional[dict], extra: ExtraColumns = None):
        # ``base_schema`` is what rocketfilter always writes; ``schema`` adds the table's extra
        # columns (accepted by ``extra``, see delta_schema) and follows its schema changes.
        self.uri, self.base_schema, self.schema, self._dt = uri, schema, schema, dt
        self.extra = extra
        self.storage_options = storage_options
        self.arrow_schema = arrow_schema(schema)
        self._files: Optional[tuple] = None     # (version, [FileStats])
        self._metadata: dict = {}               # (key, max_commits) -> (version, value)
        self._frames: dict = {}                 # (session, paths) -> DataFrame, newest last
        self._checked_version = -1
        self._write_problem: Optional[tuple] = None
        self._check()
        configured = (dt.metadata().configuration or {}).get(STATS_PROPERTY, "")
        self.stats_columns = tuple(stats_columns) or tuple(c for c in configured.split(",") if c)

    @classmethod
    def open(cls, uri: str, schema: StructType, *, stats_columns: Sequence[str] = (),
             storage_options: Optional[dict] = None, create: bool = True,
             extra: ExtraColumns = None) -> "Table":
        """Open the table at ``uri``, creating it empty with ``schema`` if absent and ``create``.

        ``stats_columns`` default to the table's ``delta.dataSkippingStatsColumns``. Raises
        DeltaFeatureError for tables a raw parquet read would get wrong, DeltaSchemaError when
        the schema differs (beyond trailing nullable columns that ``extra(field)`` accepts),
        FileNotFoundError when absent and not ``create``.

        >>> Table.open("/tmp/t", TOPICS_SCHEMA, stats_columns=["topic"]).version()  # doctest: +SKIP
        0
        """
        uri = _normalize_uri(uri)
        # Object stores: the environment's options overridden by the explicit ones, known to
        # every client in this process (and carried to the tasks that write).
        storage_options = object_store.storage_options(uri, storage_options)
        object_store.register(uri, storage_options)
        missing = [c for c in stats_columns if c not in schema.fieldNames()]
        if missing:
            raise ValueError(f"{uri}: stats columns {missing} are not in the schema")
        if not DeltaTable.is_deltatable(uri, storage_options):
            if not create:
                raise FileNotFoundError(f"no Delta table at {uri}")
            # Tells Databricks/delta-rs which columns our stats cover (a property, no feature).
            config = {STATS_PROPERTY: ",".join(stats_columns)} if stats_columns else None
            try:
                DeltaTable.create(uri, arrow_schema(schema), mode="error", configuration=config,
                                  storage_options=storage_options)
            except Exception:
                if not DeltaTable.is_deltatable(uri, storage_options):
                    raise  # else another process created it just now: open theirs (checked)
        check_log(uri)
        try:
            dt = DeltaTable(uri, storage_options=storage_options)
        except DeltaError as exc:
            raise explain_failure(uri, exc) from None
        return cls(uri, schema, dt, stats_columns, storage_options, extra)

    def _check(self) -> None:
        """Refuse features a raw parquet scan misreads; note ones our commits would break."""
        if self._checked_version == self.version():
            return
        proto, config = self._dt.protocol(), self._dt.metadata().configuration or {}
        readers = set(proto.reader_features or ())
        mapping = config.get("delta.columnMapping.mode") or "none"
        if mapping != "none" or "columnMapping" in readers:
            raise DeltaFeatureError(self.uri, "column mapping", " (physical column names differ)")
        if "deletionVectors" in readers:
            raise DeltaFeatureError(self.uri, "deletion vectors")
        if proto.min_reader_version == 2 or readers - _SAFE_READER_FEATURES:
            unknown = sorted(readers - _SAFE_READER_FEATURES)
            raise DeltaFeatureError(self.uri, f"reader features {unknown}",
                                    f" (reader version {proto.min_reader_version})")
        schema_json = self._dt.schema().to_json()
        found = check_schema(StructType.fromJson(json.loads(schema_json)), self.base_schema,
                             self.extra, self.uri)
        if found != self.schema:  # an extra column was added (by us or another process)
            self.schema, self.arrow_schema = found, arrow_schema(found)
            self._frames.clear()
        self._write_problem = delta_write.write_problem(proto.writer_features, config, schema_json)
        self._checked_version = self.version()

    def _check_writable(self) -> None:
        if self._write_problem:
            raise DeltaFeatureError(self.uri, *self._write_problem)

    def add_columns(self, fields: Sequence[StructField], *, expected_version: int,
                    operation: str = "ADD COLUMNS") -> int:
        """Add nullable ``fields`` (``extra`` must accept them) in a metadata-only commit on
        exactly ``expected_version``; see :func:`.schema.add_columns_at`."""
        return add_columns_at(self, fields, expected_version, operation)

    # ---- the snapshot ----------------------------------------------------------------------
    def version(self) -> int:
        """The loaded snapshot's version."""
        return self._dt.version()

    def refresh(self) -> "Table":
        """Load the commits made since the loaded snapshot (incrementally) and re-check.

        Raises TableMissingError when the table's log is gone: delta-rs would otherwise keep
        answering from the snapshot it loaded before."""
        try:
            self._dt.update_incremental()
        except DeltaError as exc:
            if not self.log_exists():
                raise TableMissingError(self.uri) from None
            raise explain_failure(self.uri, exc) from None
        if not self.log_exists():
            raise TableMissingError(self.uri)
        self._check()
        return self

    def log_exists(self) -> bool:
        """Whether ``_delta_log`` is still there (one stat; an object store's HEAD/list)."""
        fs, path = delta_write.filesystem_path(f"{self.uri}/_delta_log")
        return fs.get_file_info(path).type == pafs.FileType.Directory

    def read(self, spark, where: Sequence[tuple] = (), files: Optional[list[FileStats]] = None,
             *, native: Optional[bool] = None) -> DataFrame:
        """The snapshot's rows matching ``where`` (exactly), as a DataFrame of ``self.schema``.

        Spark reads only the listed or pruned files, never lists the directory. ``native=None``
        uses delta-spark's reader when it is on the classpath and no ``files`` are given.

        >>> t.read(spark, [("queue_id", "=", 3)]).count()   # doctest: +SKIP
        42
        """
        _check_where(self.schema, where)
        object_store.prepare_spark(spark, self.uri, self.storage_options)
        if files is None and (native if native is not None else delta_spark_available(spark)):
            df = (spark.read.format("delta").option("versionAsOf", self.version())
                  .load(_file_uri(self.uri)))
        else:
            files = self.files(where) if files is None else files
            if not files:
                # JVM-only (no Python worker), all nullable like a file source's schema.
                return spark.range(0).select([F.lit(None).cast(f.dataType).alias(f.name)
                                              for f in self.schema.fields])
            df = self._frame(spark, tuple(f.path for f in files))
            where = unproven(self.schema, files, where)
        cond = _where_column(where)
        return df if cond is None else df.filter(cond)

    def _frame(self, spark, paths: tuple) -> DataFrame:
        """The parquet DataFrame over ``paths``, reused: files are immutable, and building one
        (a file index, an analysed plan) costs a small pull tens of milliseconds."""
        key = (spark, paths)
        df = self._frames.pop(key, None)
        if df is None:
            df = spark.read.schema(self.schema).parquet(*paths)
            while len(self._frames) >= _FRAMES_KEPT:
                self._frames.pop(next(iter(self._frames)))
        self._frames[key] = df
        return df

    # ---- commits ---------------------------------------------------------------------------
    def _relative(self, f: FileStats) -> str:
        base = _file_uri(self.uri) + "/"
        if not f.path.startswith(base):
            raise ValueError(f"{f.path} is not a file of Delta table {self.uri}")
        return f.path[len(base):]

    def commit(self, adds: Sequence = (), removes: Sequence[FileStats] = (), *,
               expected_version: Optional[int] = None,
               app_transaction: Optional[tuple[str, int]] = None,
               custom_metadata: Optional[dict] = None, operation: str = "WRITE",
               data_change: bool = True) -> int:
        """Commit ``adds`` and ``removes`` as one Delta transaction; return its version.

        With ``expected_version``, raise ConcurrentCommitError if any commit landed after it.
        Without, appends retry inside delta-rs, and commits with removes retry here; either way
        ``custom_metadata`` lands unchanged on whatever version it rebases onto, so pass
        ``expected_version`` when it describes the snapshot. Removing a file that is no longer
        in the table raises ConcurrentCommitError. ``operation`` is logged as commitInfo
        ``rocketfilter.operation``; ``data_change=False`` marks a rearrangement (compaction).

        >>> t.commit(adds, expected_version=4, app_transaction=("loader", 7))   # doctest: +SKIP
        5
        """
        self._check_writable()
        commit_id = uuid.uuid4().hex
        meta = {**(custom_metadata or {}), COMMIT_ID_KEY: commit_id, OPERATION_KEY: operation}
        txns = ([Transaction(app_transaction[0], app_transaction[1], _now_ms())]
                if app_transaction else None)
        actions = list(adds) + [RemoveAction(self._relative(f), data_change, _now_ms(), f.size, {})
                                for f in removes]
        if expected_version is not None:
            return self._commit_at(expected_version, actions, meta, txns, removes)
        if not removes:
            base = self.version()
            try:
                self._dt.create_write_transaction(
                    actions, "append", self._dt.schema(),
                    commit_properties=CommitProperties(meta, app_transactions=txns))
            except CommitFailedError as exc:  # retries exhausted, or a conflicting app transaction
                self.refresh()
                if self.version() > base:
                    raise ConcurrentCommitError(self.uri, base, self.version(), str(exc)) from exc
                raise
            return self._find_commit(commit_id, base)
        # delta-rs's own retry lets two commits remove the same file (a compaction racing a
        # compaction would duplicate rows), so retry here while our removes are still live.
        for _ in range(MAX_COMMIT_ATTEMPTS):
            try:
                return self._commit_at(self.version(), actions, meta, txns, removes)
            except ConcurrentCommitError as exc:
                if exc.gone:
                    raise
        raise ConcurrentCommitError(self.uri, self.version(), self.version(),
                                    f"lost {MAX_COMMIT_ATTEMPTS} races in a row")

    def _commit_at(self, expected_version: int, actions: list, meta: dict, txns,
                   removes: Sequence[FileStats]) -> int:
        """Commit exactly version ``expected_version + 1`` or raise ConcurrentCommitError."""
        if self.version() < expected_version:
            self.refresh()
        if self.version() != expected_version:
            if self.version() < expected_version:
                raise ValueError(f"{self.uri}: expected_version {expected_version} is ahead of the "
                                 f"latest version {self.version()}")
            raise ConcurrentCommitError(self.uri, expected_version, self.version())
        # A removed file is gone for good: the caller worked from a stale snapshot, and going on
        # would, for a compaction, duplicate the rows it copied.
        gone = {f.path for f in removes} - {f.path for f in self.files()}
        if gone:
            raise ConcurrentCommitError(self.uri, expected_version, self.version(),
                                        f"files already removed: {sorted(gone)[:3]}", gone=gone)
        try:
            # No retries: delta-rs writes version expected+1 or fails because it exists.
            self._dt.create_write_transaction(
                actions, "append", self._dt.schema(),
                commit_properties=CommitProperties(meta, max_commit_retries=0,
                                                   app_transactions=txns))
        except CommitFailedError as exc:
            self.refresh()
            if self.version() > expected_version:
                raise ConcurrentCommitError(self.uri, expected_version, self.version()) from exc
            raise
        self.refresh()  # delta-rs leaves the table object at the version it committed on
        return expected_version + 1

    def _find_commit(self, commit_id: str, after: int) -> int:
        """The version whose commitInfo carries ``commit_id`` (a retried append lands later)."""
        self.refresh()
        for info in self._dt.history(limit=max(1, self.version() - after)):
            if info.get(COMMIT_ID_KEY) == commit_id:
                return info["version"]
        raise RuntimeError(f"{self.uri}: commit {commit_id} not found after version {after}")

    def transaction_version(self, app_id: str) -> Optional[int]:
        """The version ``app_id`` last committed through ``app_transaction``."""
        return self._dt.transaction_version(app_id)

    def latest_metadata(self, key: str, max_commits: int = 100) -> Optional[Any]:
        """``custom_metadata[key]`` of the newest of the last ``max_commits`` commits carrying it.

        >>> t.commit(adds, custom_metadata={"watermark": 42})   # doctest: +SKIP
        >>> t.latest_metadata("watermark")                      # doctest: +SKIP
        42
        """
        # Reading the history costs milliseconds, and every pull asks: once per loaded version.
        version = self.version()
        cached = self._metadata.get((key, max_commits))
        if cached is not None and cached[0] == version:
            return cached[1]
        value = next((info[key] for info in self._dt.history(limit=max_commits) if key in info), None)
        self._metadata[(key, max_commits)] = (version, value)
        return value

    # ---- maintenance -----------------------------------------------------------------------
    def remove(self, files: list[FileStats], *, custom_metadata: Optional[dict] = None,
               expected_version: Optional[int] = None) -> int:
        """Remove ``files`` (and so their rows) from the table; return the new version."""
        return self.commit((), files, expected_version=expected_version,
                           custom_metadata=custom_metadata, operation="DELETE")

    def vacuum(self, retention_hours: float = 168, *,
               enforce_retention_duration: bool = True) -> list[str]:
        """Delete files no version within ``retention_hours`` references, including orphans of
        failed writers (a full vacuum lists the directory); return their paths. Note that
        delta-rs logs VACUUM START/END commits, which advance the version."""
        deleted = self._dt.vacuum(retention_hours=math.ceil(retention_hours), dry_run=False,
                                  enforce_retention_duration=enforce_retention_duration, full=True)
        self.refresh()
        return deleted

    def checkpoint(self) -> None:
        """Write a checkpoint of the loaded version (readers then skip replaying the JSON log)."""
        self._dt.create_checkpoint()
