"""Dispatch: derive ConsumeQueue entries (and bitmaps) from new CommitLog rows, as RocketMQ's
reput service runs ``CommitLogDispatcherBuildConsumeQueue`` and ``CommitLogDispatcherCalcBitMap``.

Idempotent: the ConsumeQueue's Delta application transaction ``rocketfilter.dispatch`` records
how far the CommitLog has been dispatched, and the commit that adds the entries is the one that
moves it. A crash between a put and its dispatch leaves the ConsumeQueue lagging; the next
``dispatch()`` (``MessageStore.open`` runs one) picks up exactly what is missing.
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Dict, List, Optional

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rocketfilter.arrow_batches import rows_only
from rocketfilter.spark_mode import default_parallelism
from rocketfilter.spark_progress import ProgressOption, progress_block
from rocketfilter.store import schema as S
from rocketfilter.delta.write import delete_files, write_dataframe
from rocketfilter.store.errors import StoreDamagedError
from rocketfilter.delta.table import ConcurrentCommitError
from rocketfilter.delta.retry import RETRIES, retry_on_conflict
from rocketfilter.store.state import DISPATCH_APP_ID, ConsumeQueueState
from rocketfilter.store.sub_bits import bits_column, plan_slots, shared_parses
from rocketfilter.store.tables import StoreTables
from rocketfilter.tag_columns import tags_code_column


log = logging.getLogger(__name__)


class ConsumeQueueGapError(RuntimeError):
    """The CommitLog holds queue offsets that do not continue the ConsumeQueue."""


@dataclass
class DispatchReport:
    entries: int
    from_commitlog_offset: int
    to_commitlog_offset: int
    queues: Dict[str, Dict[int, list]]


def consumequeue_rows(tables: StoreTables, commitlog_rows: DataFrame,
                      slots: Optional[Dict[str, Dict[str, dict]]] = None) -> DataFrame:
    """CommitLog rows -> ConsumeQueue rows, with the filter bitmap when it is enabled and the
    exact subscription bits of ``slots`` (:mod:`.sub_bits`) when the table has the column."""
    promoted = tables.promoted_properties()
    has_bits = S.SUB_BITS in tables.consumequeue.schema.fieldNames()
    # The SQL92 slots' properties parsed once per row for all of them, in a projection of
    # their own (sub_bits.shared_parses), with the tag code: the TAG bits test it again.
    shared, parsed = shared_parses(slots or {}, promoted) if has_bits else ({}, {})
    promoted = {**promoted, **parsed}
    bitmap = _bitmap_column(tables, [r[0] for r in commitlog_rows.select("topic").distinct().collect()],
                            promoted) if _bitmaps_on(tables) else None
    rows = commitlog_rows.withColumns({"tags_code": tags_code_column("tags"), **shared})
    columns = [
        "topic", "queue_id", "queue_offset", "commitlog_offset",
        F.col("store_size").alias("size"), "tags_code", "store_timestamp",
        (bitmap if bitmap is not None else F.lit(None).cast("binary")).alias("filter_bitmap"),
    ]
    if has_bits:
        bits = bits_column(slots or {}, promoted)
        columns.append((bits if bits is not None else F.lit(None).cast("bigint")).alias(S.SUB_BITS))
    return rows.select(*columns)


def _bitmaps_on(tables: StoreTables) -> bool:
    return bool(getattr(tables.broker_config, "enable_calc_filter_bit_map", False))


def _bitmap_column(tables: StoreTables, topics: List[str], promoted: Dict[str, str]):
    """One CASE over topics of each topic's bitmap Column (§10.4); None when no group filters."""
    from rocketfilter.store.bitmap import calc_bitmap_column

    manager = tables.filter_manager
    branches = None
    for topic in topics:
        column = calc_bitmap_column(manager.filter_datas(topic), manager.bloom, "properties", promoted)
        if column is None:
            continue
        branches = (F.when(F.col("topic") == topic, column) if branches is None
                    else branches.when(F.col("topic") == topic, column))
    return branches


# A ConsumeQueue row: a topic (127 characters at most), numbers and a filter bitmap of a few
# hundred bytes; a generous bound for the Arrow batches that write them.
_CQ_ROW_BYTES = 4096


def write_consumequeue(tables: StoreTables, rows: DataFrame, n_rows: Optional[int] = None) -> list:
    """Write ConsumeQueue rows clustered by (topic, queue_id, queue_offset), one queue per file,
    so each file's statistics bound one stretch of one queue and a window read touches one or
    two files; return the files' descriptions (``delta_write.RESULT_SCHEMA`` dicts; commit
    them as ``table._adds(rows, True)``). Rows are hash-partitioned by queue (a range partitioning would first sample the
    input in a job of its own); ``n_rows``, when known, bounds the number of tasks."""
    per_file = tables.config.consume_queue_rows_per_file
    parts = default_parallelism(tables.spark)
    if n_rows is not None:
        parts = max(1, min(parts, math.ceil(n_rows / per_file)))
    if S.SUB_BITS in tables.consumequeue.schema.fieldNames() and S.SUB_BITS not in rows.columns:
        rows = rows.withColumn(S.SUB_BITS, F.lit(None).cast("bigint"))  # imported units: no bits
    ordered = (rows.repartition(parts, "topic", "queue_id")
               .sortWithinPartitions("topic", "queue_id", "queue_offset"))
    table = tables.consumequeue
    table._check_writable()
    ordered = ordered.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in table.schema.fields])
    with rows_only(tables.spark, _CQ_ROW_BYTES):
        return write_dataframe(ordered, table.uri, table.arrow_schema, table.stats_columns,
                               max_rows_per_file=per_file, split_on=("topic", "queue_id"),
                               row_group_rows=tables.config.consume_queue_row_group_rows,
                               storage_options=table.storage_options)


def _ranges(written: list) -> List[dict]:
    """Each queue's (lo, hi, n) over the files ``written``, one queue each (split on it)."""
    out: Dict[tuple, dict] = {}
    for file in written:
        stats = json.loads(file["stats"])
        lo, hi = stats["minValues"], stats["maxValues"]
        key = tuple(json.loads(file["split_key"]))
        r = out.setdefault(key, {"topic": key[0], "queue_id": key[1], "lo": lo["queue_offset"],
                                 "hi": hi["queue_offset"], "n": 0})
        r["lo"], r["hi"] = min(r["lo"], lo["queue_offset"]), max(r["hi"], hi["queue_offset"])
        r["n"] += int(stats["numRecords"])
    return list(out.values())


def _merge_queues(state: ConsumeQueueState, ranges: List) -> ConsumeQueueState:
    queues = {t: {q: list(o) for q, o in qs.items()} for t, qs in state.queues.items()}
    for r in ranges:
        topic, queue_id = r["topic"], r["queue_id"]
        lo, hi, n = int(r["lo"]), int(r["hi"]), int(r["n"])
        old = queues.setdefault(topic, {}).get(queue_id)
        expected = old[1] if old else lo
        if lo != expected or hi - lo + 1 != n:
            raise ConsumeQueueGapError(
                f"topic {topic!r} queue {queue_id}: new entries cover offsets {lo}..{hi} ({n} rows) "
                f"but the ConsumeQueue ends at {expected}")
        queues[topic][queue_id] = [old[0] if old else lo, hi + 1]
    return ConsumeQueueState(state.dispatched, queues, state.bits)


def _rows_within(files, lo: int, hi: int) -> Optional[int]:
    """The rows of ``files`` when their statistics put every row in ``[lo, hi)`` of the
    CommitLog (what a put leaves for its dispatch), else None: a progress total for free."""
    if not files or any(f.num_records < 0 or f.min.get("commitlog_offset") is None
                        or f.max.get("commitlog_offset") is None for f in files):
        return None
    if all(lo <= f.min["commitlog_offset"] and f.max["commitlog_offset"] < hi for f in files):
        return sum(f.num_records for f in files)
    return None


def dispatch(tables: StoreTables, *, to_commitlog_offset: Optional[int] = None,
             progress: ProgressOption = False) -> DispatchReport:
    """Dispatch every CommitLog row not yet in the ConsumeQueue, in one ConsumeQueue commit.
    ``progress`` shows the ConsumeQueue write as put_messages does."""
    def attempt() -> DispatchReport:
        cq = tables.table(S.CONSUMEQUEUE)
        version = cq.version()
        state = tables.consumequeue_state()
        done = cq.transaction_version(DISPATCH_APP_ID) or 0
        state.dispatched = max(state.dispatched, done)
        end = tables.commitlog_state().next_commitlog_offset
        if to_commitlog_offset is not None:
            end = min(end, to_commitlog_offset)
        if end <= state.dispatched:
            return DispatchReport(0, state.dispatched, state.dispatched, state.queues)
        slots = plan_slots(tables, state)
        if slots and S.SUB_BITS not in cq.schema.fieldNames():
            version = cq.add_columns([S.SUB_BITS_FIELD], expected_version=version)
        where = [("commitlog_offset", ">=", state.dispatched), ("commitlog_offset", "<", end)]
        files = tables.commitlog.files(where)
        missing = tables.commitlog.missing_files(files)
        if missing:
            raise StoreDamagedError(f"store {tables.uri}: cannot dispatch: the commitlog table lost "
                                    f"{len(missing)} data file(s) its Delta log lists, e.g. {missing[0]}")
        new = tables.commitlog.read(tables.spark, where=where, files=files)
        # One read of the new rows: each file written holds one stretch of one queue, so the
        # queues' new ranges come from the files' own statistics.
        total = _rows_within(files, state.dispatched, end)
        with progress_block(tables.spark, progress, "dispatch", unit="messages" if total else "tasks",
                            total=total):
            written = write_consumequeue(tables, consumequeue_rows(tables, new, slots))
        adds = cq._adds(written, True)
        try:
            ranges = _ranges(written)
            merged = _merge_queues(state, ranges)
            merged.dispatched, merged.bits = end, slots
            cq.commit(adds, expected_version=version, app_transaction=(DISPATCH_APP_ID, end),
                      custom_metadata=merged.to_metadata())
        except BaseException:
            delete_files(cq.uri, [a.path for a in adds])
            raise
        return DispatchReport(sum(r["n"] for r in ranges), state.dispatched, end, merged.queues)

    return retry_on_conflict(attempt, "dispatch")


def finish_dispatch(tables: StoreTables, end: int, *, progress: ProgressOption = False) -> None:
    """Dispatch after a put's CommitLog commit landed: the put has succeeded by then, so a lost
    dispatch race is never the caller's error (a caller that retried would store the messages
    twice). Each lost race means another dispatch landed: try again until the ConsumeQueue
    covers ``end``; after RETRIES losses leave the rest to the next dispatch (any put's, and
    ``MessageStore.open``'s repair)."""
    for _ in range(RETRIES):
        try:
            dispatch(tables, progress=progress)
            return
        except ConcurrentCommitError:
            if tables.consumequeue_state().dispatched >= end:
                return
    log.warning("store %s: the dispatch of a put up to commit-log offset %d lost %d commit races; "
                "the messages are stored, and the next dispatch (or opening the store) indexes them",
                tables.uri, end, RETRIES)
