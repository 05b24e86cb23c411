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

from rocketfilter.store.state import DISPATCH_APP_ID, ConsumeQueueState
from rocketfilter.tags import tags_code_column


class ConsumeQueueGapError(RuntimeError):
    """The CommitLog holds queue offsets that do not continue the ConsumeQueue."""


@dataclass
class DispatchReport:
    entries: int
    from_commitlog_offset: int
    to_commitlog_offset: int
    queues: Dict[str, Dict[int, list]]


def consumequeue_rows(store, commitlog_rows: DataFrame) -> DataFrame:
    """CommitLog rows -> ConsumeQueue rows, with the filter bitmap when it is enabled."""
    bitmap = _bitmap_column(store, [r[0] for r in commitlog_rows.select("topic").distinct().collect()]) \
        if _bitmaps_on(store) else None
    return commitlog_rows.select(
        "topic", "queue_id", "queue_offset", "commitlog_offset",
        F.col("store_size").alias("size"),
        tags_code_column("tags").alias("tags_code"),
        "store_timestamp",
        (bitmap if bitmap is not None else F.lit(None).cast("binary")).alias("filter_bitmap"),
    )


def _bitmaps_on(store) -> bool:
    return bool(getattr(store.broker_config, "enable_calc_filter_bit_map", False))


def _bitmap_column(store, topics: List[str]):
    """One CASE over topics of each topic's bitmap Column (§10.4); None when no group filters."""
    from rocketfilter.store.bitmap import calc_bitmap_column

    manager = store.filter_manager
    branches = None
    for topic in topics:
        column = calc_bitmap_column(manager.filter_datas(topic), manager.bloom, "properties")
        if column is None:
            continue
        branches = (F.when(F.col("topic") == topic, column) if branches is None
                    else branches.when(F.col("topic") == topic, column))
    return branches


def write_consumequeue(store, rows: DataFrame, n_rows: int) -> list:
    """Write ConsumeQueue rows clustered by (topic, queue_id, queue_offset), one queue per file,
    so each file's statistics bound one stretch of one queue and a window read touches one or
    two files."""
    per_file = store.config.consume_queue_rows_per_file
    parts = max(1, math.ceil(n_rows / per_file))
    ordered = (rows.repartitionByRange(parts, "topic", "queue_id", "queue_offset")
               .sortWithinPartitions("topic", "queue_id", "queue_offset"))
    return store.consumequeue.write(ordered, max_rows_per_file=per_file, split_on=("topic", "queue_id"),
                                    row_group_rows=store.config.consume_queue_row_group_rows)


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


def dispatch(store, *, to_commitlog_offset: Optional[int] = None) -> DispatchReport:
    """Dispatch every CommitLog row not yet in the ConsumeQueue, in one ConsumeQueue commit."""
    from rocketfilter.store.store import retry_on_conflict

    def attempt() -> DispatchReport:
        cq = store.consumequeue.refresh()
        version = cq.version()
        state = store.consumequeue_state()
        done = cq.transaction_version(DISPATCH_APP_ID) or 0
        state.dispatched = max(state.dispatched, done)
        end = store.commitlog_state().next_commitlog_offset
        if to_commitlog_offset is not None:
            end = min(end, to_commitlog_offset)
        if end <= state.dispatched:
            return DispatchReport(0, state.dispatched, state.dispatched, state.queues)
        new = store.commitlog.read(store.spark, where=[("commitlog_offset", ">=", state.dispatched),
                                                       ("commitlog_offset", "<", end)])
        ranges = (new.groupBy("topic", "queue_id")
                  .agg(F.min("queue_offset").alias("lo"), F.max("queue_offset").alias("hi"),
                       F.count(F.lit(1)).alias("n"))
                  .collect())
        merged = _merge_queues(state, ranges)
        merged.dispatched = end
        n_rows = sum(int(r["n"]) for r in ranges)
        adds = write_consumequeue(store, consumequeue_rows(store, new), n_rows) if n_rows else []
        cq.commit(adds, expected_version=version, app_transaction=(DISPATCH_APP_ID, end),
                  custom_metadata=merged.to_metadata())
        return DispatchReport(n_rows, state.dispatched, end, merged.queues)

    return retry_on_conflict(attempt, "dispatch")
