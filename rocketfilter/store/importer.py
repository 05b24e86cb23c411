"""Read a RocketMQ broker's store directory (``commitlog/`` and ``consumequeue/``) into Spark.

:func:`scan_store` lists the files on the driver (names and sizes only) and parses them on the
executors: each task parses whole commit-log files (``spark.range(n, numPartitions=n)`` then
``mapInArrow``, reading through ``pyarrow.fs`` so object-store URIs work, 8 MiB at a time).
A broker's 1 GiB files get a task each; small files are packed, consecutive, into tasks of
about ``task_bytes`` (a Python task costs ~0.1 s here, 97 tasks for 64 KiB files took 40 s).
The consume queues are packed into a few tasks the same way. Damage becomes rows, not exceptions, so a
task never fails; :meth:`ImportedStore.validate` collects counts and damage (never bodies) and
raises on the first problem unless ``skip_damaged``. The DataFrames always exclude damaged
records and units. The executor-side parsers are in :mod:`rocketfilter.broker_files.import_parse`;
record-level choices (decompressed ``body``, stored ``sys_flag``) are in
:mod:`rocketfilter.broker_files.records`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from rocketfilter.naming import MAX_QUEUE_NUMS
from rocketfilter.spark_mode import default_parallelism, persist_if_allowed, restore_conf, set_conf

# The executor-side file parsers live in broker_files.import_parse.
from rocketfilter.broker_files.import_parse import _commitlog_rows, _consumequeue_rows
# Damage is re-exported: reports and callers import it from here.
from rocketfilter.broker_files.import_listing import Damage, list_commitlog, list_consumequeue, require_store_dir
from rocketfilter.broker_files.records import check_cq_unit
from rocketfilter.store.schema import COMMITLOG_SCHEMA, CONSUMEQUEUE_SCHEMA, arrow_schema

_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
MAX_REPORTED_DAMAGE = 1000  # damage entries kept in a report; the count is always exact
_CACHE_CONF = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}
_ISIN_LIMIT = 10_000   # more excluded offsets than this: an anti join, not an IN list

_INTERNAL = [StructField("_tags_code", LongType()), StructField("_kind", StringType(), False),
             StructField("_file", StringType(), False), StructField("_file_position", LongType(), False),
             StructField("_reason", StringType())]
# Parsed commit-log rows: records, plus 'blank', 'error' and one 'file' summary row per file.
# Non-record rows fill the non-null columns with placeholders so the schema stays truthful.
PARSED_COMMITLOG_SCHEMA = StructType(list(COMMITLOG_SCHEMA.fields) + _INTERNAL)
PARSED_CQ_SCHEMA = StructType([f for f in CONSUMEQUEUE_SCHEMA.fields if f.name in (
    "topic", "queue_id", "queue_offset", "commitlog_offset", "size", "tags_code")] + _INTERNAL[1:])


@dataclass
class ImportReport:
    """What :meth:`ImportedStore.validate` found; counts only, never message bodies."""

    commitlog_files: int = 0
    consumequeue_files: int = 0
    commitlog_bytes: int = 0
    messages: int = 0
    blanks: int = 0
    cq_units: int = 0           # units imported: each matched its record
    cq_units_checked: int = 0   # units compared with the record they point to
    cq_units_expired: int = 0   # units below the first commit-log file (deleted by retention)
    records_without_unit: int = 0  # records no unit points to (the CQ lagged the commit log)
    cq_units_rebuilt: int = 0   # units rebuilt from records behind the CQ's end (a lost unit file)
    commitlog_end: int = 0      # global offset where the commit log's data ends
    topics: List[Tuple[str, int]] = field(default_factory=list)
    damaged_count: int = 0
    damaged: List[Damage] = field(default_factory=list)  # the first MAX_REPORTED_DAMAGE, in file order
    skip_damaged: bool = False
    seconds: float = 0.0
    config: Optional[Any] = None   # a config_files.ConfigImportReport, set by import_store

    @property
    def damaged_records(self) -> int:
        """Damage found in commit-log files."""
        return sum(1 for d in self.damaged if d.file.startswith("commitlog/"))


def _whole_waves(spark: SparkSession, tasks: int) -> int:
    """``tasks`` rounded up to a multiple of the cores (at least one each): with 3 tasks on 2
    cores, the third ran alone while the other core idled (bench/scale.py, 2M)."""
    cores = default_parallelism(spark)
    return max(1, -(-tasks // cores)) * cores


def _one_per_partition(spark: SparkSession, n: int) -> DataFrame:
    """ids 0..n-1, each in its own partition (so each becomes one task)."""
    return spark.range(0, n, 1, n)


class ImportedStore:
    """The parsed store: lazy DataFrames plus what the listing found. Call :meth:`validate`."""

    def __init__(self, spark: SparkSession, path: str, *, skip_damaged: bool, persist: bool,
                 task_bytes: int) -> None:
        self.spark, self.path, self.skip_damaged, self.task_bytes = spark, path, skip_damaged, task_bytes
        filesystem, root = require_store_dir(path)
        self._listing_damage: List[Damage] = []
        cl = list_commitlog(filesystem, root, self._listing_damage)
        self._commitlog_files = cl
        self.commitlog_file_count = len(cl)
        self.commitlog_tasks = 0  # the parse's tasks: runs of whole files (progress maps them)
        self.commitlog_start = cl[0][2] if cl else 0
        queues = list_consumequeue(filesystem, root, self._listing_damage)
        self._cq_file_count = sum(len(f) for f in queues.values())
        max_queue: Dict[str, int] = {}
        for topic, queue_id in queues:
            max_queue[topic] = max(max_queue.get(topic, -1), queue_id)
        self.topics: List[Tuple[str, int]] = sorted((t, q + 1) for t, q in max_queue.items())

        self._parsed = self._parse_commitlog(cl, path)
        self._units = self._parse_consumequeue(queues, path)
        # Cached where the session allows it (Databricks serverless does not: then parsed twice),
        # on disk: a task's run of files is 256 MiB or a whole 1 GiB broker file, and building
        # that in the heap ran a 2 GiB driver out of memory (10M messages, bench/scale.py).
        # Uncompressed columns: Spark's columnar cache otherwise tries a dictionary of every
        # string column, message ids included (profiled: 16% of an import's JVM time), and on
        # disk the bytes barely shrink. The cache takes the setting when persisted.
        previous = set_conf(spark, _CACHE_CONF) if persist else {}
        try:
            self._cached = [df for df in (self._parsed, self._units)
                            if persist and persist_if_allowed(df, StorageLevel.DISK_ONLY)]
        finally:
            restore_conf(spark, previous)
        self._joined = self._check_units()
        self._mismatched: Optional[list] = None   # offsets of records a unit of another queue claims
        self.consumequeue: DataFrame = self._joined.filter(F.col("_problem").isNull()).select(
            "topic", "queue_id", "queue_offset", "commitlog_offset", "size", "tags_code",
            F.col("r_store_timestamp").alias("store_timestamp"),
            F.lit(None).cast("binary").alias("filter_bitmap"))
        self._report: Optional[ImportReport] = None
        # (topic, queue_id, n, lo, hi, end) of :attr:`consumequeue`'s units per queue, once validated.
        self.unit_ranges: Optional[List[dict]] = None

    def _parse_commitlog(self, files: List[Tuple[str, str, int, int]], source: str) -> DataFrame:
        if not files:
            return self.spark.createDataFrame([], PARSED_COMMITLOG_SCHEMA)
        total = sum(f[3] for f in files)
        n = min(len(files), _whole_waves(self.spark, -(-total // max(self.task_bytes, 1))))
        # Consecutive runs of files, n runs of near-equal count (the files have one size).
        tasks = [files[len(files) * i // n:len(files) * (i + 1) // n] for i in range(n)]
        self.commitlog_tasks = n
        return _one_per_partition(self.spark, n).mapInArrow(
            _commitlog_rows(tasks, source, arrow_schema(PARSED_COMMITLOG_SCHEMA)), PARSED_COMMITLOG_SCHEMA)

    def _parse_consumequeue(self, queues, source: str) -> DataFrame:
        if not queues:
            return self.spark.createDataFrame([], PARSED_CQ_SCHEMA)
        # Pack queues into tasks of ~task_bytes, at least one per core, greedily by size.
        total = sum(z for files in queues.values() for *_, z in files)
        n = min(len(queues), _whole_waves(self.spark, -(-total // max(self.task_bytes, 1))))
        groups: List[list] = [[] for _ in range(n)]
        loads = [0] * n
        for (topic, queue_id), files in sorted(queues.items(), key=lambda kv: -sum(f[3] for f in kv[1])):
            g = loads.index(min(loads))
            groups[g].append((topic, queue_id, [(name, path, start) for name, path, start, _ in files]))
            loads[g] += sum(f[3] for f in files)
        return _one_per_partition(self.spark, n).mapInArrow(
            _consumequeue_rows(groups, source, arrow_schema(PARSED_CQ_SCHEMA)), PARSED_CQ_SCHEMA)

    def _records(self) -> DataFrame:
        return self._parsed.filter(F.col("_kind") == "record")

    def _queue_out_of_range(self, prefix: str = "") -> Column:
        """A record's QUEUEID that no queue of its topic can have: negative, or not below the
        topic's queue count (from ``consumequeue/``; MAX_QUEUE_NUMS for a topic without one)."""
        topic, queue_id = F.col(f"{prefix}topic"), F.col(f"{prefix}queue_id")
        limit = F.lit(MAX_QUEUE_NUMS)
        for name, count in reversed(self.topics):
            limit = F.when(topic == name, F.lit(count)).otherwise(limit)
        return (queue_id < 0) | (queue_id >= limit)

    @property
    def in_offset_order(self) -> bool:
        """Whether :attr:`commitlog`'s partitions are the parse's: consecutive runs of whole files,
        each ascending by ``commitlog_offset`` (no shuffle in between). True after
        :meth:`validate`, unless so many records were excluded that an anti join drops them."""
        return self._mismatched is not None and len(self._mismatched) <= _ISIN_LIMIT

    @property
    def commitlog(self) -> DataFrame:
        """The records to import: every parsed record but those whose queue id is damage (out of
        range, or disagreeing with the unit that points at it)."""
        records = self._records().filter(~self._queue_out_of_range())
        mismatched = self._mismatched
        if mismatched is None or len(mismatched) > _ISIN_LIMIT:  # find them in the plan
            mismatched_df = (self._joined.filter(F.col("_problem") == "queue")
                             .select(F.col("r_commitlog_offset").alias("commitlog_offset")))
            records = records.join(mismatched_df, "commitlog_offset", "left_anti")
        elif mismatched:
            records = records.filter(~F.col("commitlog_offset").isin(mismatched))
        return records.select(*COMMITLOG_SCHEMA.fieldNames())

    def _check_units(self, how: str = "left") -> DataFrame:
        """Units joined with the record at their offset, with a ``_problem`` code: null when
        they agree; ``no_unit`` marks a record no unit points to (only with ``how="full"``)."""
        rec = self._records().select(*[F.col(c).alias(f"r_{c}") for c in (
            "commitlog_offset", "store_size", "topic", "queue_id", "queue_offset", "_tags_code",
            "store_timestamp", "_file", "_file_position")])
        units = self._units.filter(F.col("_kind") == "unit")
        j = units.join(rec, units["commitlog_offset"] == rec["r_commitlog_offset"], how)
        tags_differ = (F.col("tags_code").isNotNull() & (F.col("topic") != _SCHEDULE_TOPIC)
                       & (F.col("tags_code") != F.col("r__tags_code")))
        problem: Column = (
            F.when(F.col("commitlog_offset").isNull(), "no_unit")
            .when(F.col("commitlog_offset") < F.lit(self.commitlog_start), "expired")
            .when(F.col("r_commitlog_offset").isNull(), "no_record")
            .when(F.col("size") != F.col("r_store_size"), "size")
            .when((F.col("topic") != F.col("r_topic")) | (F.col("queue_id") != F.col("r_queue_id")), "queue")
            .when(F.col("queue_offset") != F.col("r_queue_offset"), "queue_offset")
            .when(tags_differ, "tags"))
        return j.withColumn("_problem", problem)

    def unpersist(self) -> None:
        """Drop the cached parse (kept so validation and the writes parse the files once)."""
        for df in self._cached:
            df.unpersist()

    def validate(self) -> ImportReport:
        """Count files, messages and units, check every unit against its record, and collect
        damage (file, byte offset, reason). Raises StoreFormatError on the first problem in
        file order unless ``skip_damaged``; then damage is counted and left out."""
        if self._report is not None:
            return self._report
        t0 = time.perf_counter()
        report = ImportReport(commitlog_files=len(self._commitlog_files), consumequeue_files=self._cq_file_count,
                              commitlog_bytes=sum(f[3] for f in self._commitlog_files),
                              topics=list(self.topics), skip_damaged=self.skip_damaged)
        damage = list(self._listing_damage)
        # Job 1: the commit-log parse's non-record rows (damage, blanks, one row per file).
        meta = self._parsed.filter(F.col("_kind") != "record").select(
            "_kind", "_file", "_file_position", "_reason", "commitlog_offset", "store_size").collect()
        damage += [Damage(r["_file"], r["_file_position"], r["_reason"]) for r in meta if r["_kind"] == "error"]
        files = [r for r in meta if r["_kind"] == "file"]
        exact = len(damage)  # damage counted exactly so far, whatever the report's list keeps
        report.messages = sum(r["store_size"] for r in files)
        report.blanks = sum(1 for r in meta if r["_kind"] == "blank")
        report.commitlog_end = max((r["commitlog_offset"] for r in files if r["_file_position"] > 0),
                                   default=self.commitlog_start)
        out_of_range = self._records().filter(self._queue_out_of_range()).select(
            "_file", "_file_position", "topic", "queue_id")
        rows = out_of_range.limit(MAX_REPORTED_DAMAGE + 1).collect()
        bad_records = len(rows) if len(rows) <= MAX_REPORTED_DAMAGE else out_of_range.count()
        damage += [Damage(r["_file"], r["_file_position"],
                          f"QUEUEID {r['queue_id']} is out of range for topic {r['topic']!r} "
                          f"({self._queue_range(r['topic'])})") for r in rows[:MAX_REPORTED_DAMAGE]]
        self._raise_first(damage)

        # Jobs 2-3: consume-queue damage, then every unit against its record (full join).
        unit_errors = [Damage(r["_file"], r["_file_position"], r["_reason"]) for r in
                       self._units.filter(F.col("_kind") == "error").select("_file", "_file_position", "_reason").collect()]
        damage += unit_errors
        exact += len(unit_errors)
        checked = self._check_units("full")
        # One job: each problem's count, and the imported units' ranges per queue (for the
        # ConsumeQueue's marks, so the import need not join the units with their records again).
        per_queue = (checked.groupBy("_problem", "topic", "queue_id")
                     .agg(F.count(F.lit(1)).alias("n"), F.min("queue_offset").alias("lo"),
                          F.max("queue_offset").alias("hi"),
                          F.max(F.col("commitlog_offset") + F.col("size")).alias("end"))
                     .collect())
        counts: Dict[Optional[str], int] = {}
        for r in per_queue:
            counts[r["_problem"]] = counts.get(r["_problem"], 0) + r["n"]
        self.unit_ranges = [r.asDict() for r in per_queue if r["_problem"] is None]
        # A record a unit of another queue points at is damage too (unless already counted as
        # out of range); neither is imported.
        claimed = checked.filter((F.col("_problem") == "queue") & ~self._queue_out_of_range("r_"))
        self._mismatched = [] if not counts.get("queue") else \
            [r[0] for r in claimed.select("r_commitlog_offset").collect()]
        mismatched = set(self._mismatched)
        bad_records += len(mismatched)
        report.records_without_unit = counts.pop("no_unit", 0)
        report.cq_units = counts.get(None, 0)
        report.cq_units_expired = counts.get("expired", 0)
        report.cq_units_checked = sum(counts.values()) - report.cq_units_expired
        bad_units = sum(n for p, n in counts.items() if p not in (None, "expired"))
        bad = [] if not bad_units else (
            checked.filter(~F.col("_problem").isin("expired", "no_unit"))
            .orderBy("_file", "_file_position").limit(MAX_REPORTED_DAMAGE).collect())
        for r in bad:
            record = None if r["r_commitlog_offset"] is None else {
                "store_size": r["r_store_size"], "topic": r["r_topic"], "queue_id": r["r_queue_id"],
                "queue_offset": r["r_queue_offset"], "tags_code": r["r__tags_code"]}
            reason = check_cq_unit(r.asDict(), record, topic=r["topic"], queue_id=r["queue_id"],
                                   commitlog_end=report.commitlog_end) or r["_problem"]
            damage.append(Damage(r["_file"], r["_file_position"], reason))
            if r["_problem"] == "queue" and r["r_commitlog_offset"] in mismatched:
                damage.append(Damage(r["r__file"], r["r__file_position"],
                                     f"QUEUEID {r['r_queue_id']} of topic {r['r_topic']!r} disagrees with "
                                     f"the unit at {r['_file']} byte {r['_file_position']} (queue "
                                     f"{r['topic']}/{r['queue_id']}) that points at this record"))
        self._raise_first(damage)

        report.messages -= bad_records  # the messages imported
        damage.sort(key=lambda d: (d.file, d.byte_offset))
        report.damaged_count = exact + bad_records + bad_units
        report.damaged = damage[:MAX_REPORTED_DAMAGE]
        report.seconds = time.perf_counter() - t0
        self._report = report
        return report

    def _queue_range(self, topic: str) -> str:
        count = dict(self.topics).get(topic)
        if count is None:
            return f"no consume queue for it; a topic has at most {MAX_QUEUE_NUMS} queues"
        return f"consumequeue/{topic}/ holds queues 0..{count - 1}"

    def _raise_first(self, damage: List[Damage]) -> None:
        if damage and not self.skip_damaged:
            raise min(damage, key=lambda d: (d.file, d.byte_offset)).error()


def scan_store(spark: SparkSession, path: str, *, skip_damaged: bool = False,
               persist: bool = True, task_bytes: int = 256 << 20) -> ImportedStore:
    """List a broker store at ``path`` (local directory or URI) and set up its parse.

    ``.commitlog`` and ``.consumequeue`` have exactly COMMITLOG_SCHEMA / CONSUMEQUEUE_SCHEMA
    (``filter_bitmap`` null, ``store_timestamp`` from the record each unit points to);
    ``.topics`` is ``[(topic, max queue id + 1)]`` from the consumequeue directories. Nothing is
    read until an action runs; ``persist`` caches the parse (release it with ``unpersist()``).
    ``task_bytes`` is the file volume one parse task aims at (whole files; 0 = one file per
    task). Raises FileNotFoundError when ``path`` has no ``commitlog/`` directory.
    """
    return ImportedStore(spark, path, skip_damaged=skip_damaged, persist=persist, task_bytes=task_bytes)
