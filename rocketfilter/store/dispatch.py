"""Dispatch: derive ConsumeQueue entries (and bitmaps) from new CommitLog rows, as RocketMQ's
reput service runs ``CommitLogDispatcherBuildConsumeQueue`` and ``CommitLogDispatcherCalcBitMap``.

Idempotent: the ConsumeQueue's Delta application transaction ``rocketfilter.dispatch`` records
how far the CommitLog has been dispatched, and the commit that adds the entries is the one that
moves it. A crash between a put and its dispatch leaves the ConsumeQueue lagging; the next
``dispatch()`` (``MessageStore.open`` runs one) picks up exactly what is missing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rocketfilter.spark_progress import ProgressOption, progress_block
from rocketfilter.store import schema as S
from rocketfilter.store.errors import StoreDamagedError
from rocketfilter.store.retry import retry_on_conflict
from rocketfilter.store.state import DISPATCH_APP_ID, ConsumeQueueState
from rocketfilter.store.tables import StoreTables
from rocketfilter.tags import tags_code_column


class ConsumeQueueGapError(RuntimeError):
    """The CommitLog holds queue offsets that do not continue the ConsumeQueue."""


@dataclass
class DispatchReport:
    entries: int
    from_commitlog_offset: int
    to_commitlog_offset: int
    queues: Dict[str, Dict[int, list]]


def consumequeue_rows(tables: StoreTables, commitlog_rows: DataFrame) -> DataFrame:
    """CommitLog rows -> ConsumeQueue rows, with the filter bitmap when it is enabled."""
    bitmap = _bitmap_column(tables, [r[0] for r in commitlog_rows.select("topic").distinct().collect()]) \
        if _bitmaps_on(tables) else None
    return commitlog_rows.select(
        "topic", "queue_id", "queue_offset", "commitlog_offset",
        F.col("store_size").alias("size"),
        tags_code_column("tags").alias("tags_code"),
        "store_timestamp",
        (bitmap if bitmap is not None else F.lit(None).cast("binary")).alias("filter_bitmap"),
    )


def _bitmaps_on(tables: StoreTables) -> bool:
    return bool(getattr(tables.broker_config, "enable_calc_filter_bit_map", False))


def _bitmap_column(tables: StoreTables, topics: List[str]):
    """One CASE over topics of each topic's bitmap Column (§10.4); None when no group filters."""
    from rocketfilter.store.bitmap import calc_bitmap_column

    manager = tables.filter_manager
    branches = None
    for topic in topics:
        column = calc_bitmap_column(manager.filter_datas(topic), manager.bloom, "properties")
        if column is None:
            continue
        branches = (F.when(F.col("topic") == topic, column) if branches is None
                    else branches.when(F.col("topic") == topic, column))
    return branches


def write_consumequeue(tables: StoreTables, rows: DataFrame, n_rows: int) -> list:
    """Write ConsumeQueue rows clustered by (topic, queue_id, queue_offset), one queue per file,
    so each file's statistics bound one stretch of one queue and a window read touches one or
    two files."""
    per_file = tables.config.consume_queue_rows_per_file
    parts = max(1, math.ceil(n_rows / per_file))
    ordered = (rows.repartitionByRange(parts, "topic", "queue_id", "queue_offset")
               .sortWithinPartitions("topic", "queue_id", "queue_offset"))
    return tables.consumequeue.write(ordered, max_rows_per_file=per_file, split_on=("topic", "queue_id"),
                                     row_group_rows=tables.config.consume_queue_row_group_rows)


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
    return ConsumeQueueState(state.dispatched, queues)


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
        where = [("commitlog_offset", ">=", state.dispatched), ("commitlog_offset", "<", end)]
        files = tables.commitlog.files(where)
        missing = tables.commitlog.missing_files(files)
        if missing:
            raise StoreDamagedError(f"store {tables.uri}: cannot dispatch: the commitlog table lost "
                                    f"{len(missing)} data file(s) its Delta log lists, e.g. {missing[0]}")
        new = tables.commitlog.read(tables.spark, where=where, files=files)
        ranges = (new.groupBy("topic", "queue_id")
                  .agg(F.min("queue_offset").alias("lo"), F.max("queue_offset").alias("hi"),
                       F.count(F.lit(1)).alias("n"))
                  .collect())
        merged = _merge_queues(state, ranges)
        merged.dispatched = end
        n_rows = sum(int(r["n"]) for r in ranges)
        with progress_block(tables.spark, progress if n_rows else False, "dispatch", unit="messages",
                            total=n_rows):
            adds = write_consumequeue(tables, consumequeue_rows(tables, new), n_rows) if n_rows else []
        cq.commit(adds, expected_version=version, app_transaction=(DISPATCH_APP_ID, end),
                  custom_metadata=merged.to_metadata())
        return DispatchReport(n_rows, state.dispatched, end, merged.queues)

    return retry_on_conflict(attempt, "dispatch")
