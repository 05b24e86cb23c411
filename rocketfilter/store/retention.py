"""Retention and maintenance: expire old messages, compact small files, vacuum, checkpoint.

A broker deletes whole commit-log files, oldest first, then its clean service moves each
consume queue's min offset to the first entry whose message still exists and deletes consume-
queue files that point only at deleted messages. ``expire`` does the same with Delta files.
Between the two steps a pull of an expired entry answers MESSAGE_WAS_REMOVING; after the
clean-up, OFFSET_TOO_SMALL. ``clean_consume_queue=False`` stops after the first step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from pyspark.sql import functions as F

from rocketfilter.store import schema as S
from rocketfilter.delta.retry import retry_on_conflict
from rocketfilter.store.state import ConsumeQueueState
from rocketfilter.store.tables import StoreTables


@dataclass
class ExpireReport:
    commitlog_files_removed: int
    consumequeue_files_removed: int
    min_commitlog_offset: int


def _boundary(tables: StoreTables, state, before_offset: Optional[int], before_timestamp: Optional[int]) -> int:
    """The start of the first commit-log file (``mapped_file_size_commit_log`` bytes each) that
    must stay: files wholly before ``before_offset``, or whose every message was stored before
    ``before_timestamp``, go; the file being written never does, as on a broker."""
    size = tables.config.mapped_file_size_commit_log
    last_file = state.next_commitlog_offset // size * size
    keep = state.min_commitlog_offset // size * size
    if before_offset is not None:
        keep = max(keep, before_offset // size * size)
    if before_timestamp is not None:
        newest = (tables.commitlog.read(tables.spark)
                  .groupBy(F.floor(F.col("commitlog_offset") / size).alias("file"))
                  .agg(F.max("store_timestamp").alias("newest"))
                  .where(F.col("newest") >= before_timestamp)
                  .agg(F.min("file")).first()[0])
        keep = max(keep, last_file if newest is None else int(newest) * size)
    return min(keep, last_file)


def expire(tables: StoreTables, before_commitlog_offset: Optional[int] = None,
           before_timestamp: Optional[int] = None, *, clean_consume_queue: bool = True) -> ExpireReport:
    """Delete the oldest commit-log files, as a broker's CleanCommitLogService does, then clean
    the ConsumeQueue.

    Commit-log "files" are the ``mapped_file_size_commit_log``-byte ranges of physical offsets a
    broker would have: the ones wholly before ``before_commitlog_offset``, or whose messages were
    all stored before ``before_timestamp`` (ms), are removed. Delta files straddling the new
    start are rewritten without the expired rows, so the CommitLog's min offset lands on a file
    boundary, where a pull's ``skipUntilPhy`` expects the next live message.
    """
    if before_commitlog_offset is None and before_timestamp is None:
        raise ValueError("expire() needs before_commitlog_offset or before_timestamp")

    def drop_commitlog():
        table = tables.table(S.COMMITLOG)
        version = table.version()
        state = tables.commitlog_state()
        keep = _boundary(tables, state, before_commitlog_offset, before_timestamp)
        files = table.files()
        gone = [f for f in files if f.max["commitlog_offset"] < keep]
        straddle = [f for f in files if f.min["commitlog_offset"] < keep <= f.max["commitlog_offset"]]
        adds = []
        if straddle:
            rest = table.read(tables.spark, files=straddle).where(F.col("commitlog_offset") >= keep)
            adds = table.write(rest.orderBy("commitlog_offset"))
        if keep > state.min_commitlog_offset or gone or straddle:
            state.min_commitlog_offset = max(keep, state.min_commitlog_offset)
            table.commit(adds, gone + straddle, expected_version=version,
                         custom_metadata=state.to_metadata(), operation="DELETE")
        return len(gone) + len(straddle), state.min_commitlog_offset

    removed, min_offset = retry_on_conflict(drop_commitlog, "expire")
    cq_removed = clean_consumequeue(tables, min_offset) if clean_consume_queue else 0
    return ExpireReport(removed, cq_removed, min_offset)


def clean_consumequeue(tables: StoreTables, min_commitlog_offset: int) -> int:
    """``correctMinOffset`` and ``deleteExpiredFile`` of every consume queue."""
    def attempt():
        table = tables.table(S.CONSUMEQUEUE)
        version = table.version()
        state = tables.consumequeue_state()
        files = table.files()
        gone = [f for f in files if f.max.get("commitlog_offset") is not None
                and f.max["commitlog_offset"] < min_commitlog_offset]
        firsts = (table.read(tables.spark, files=[f for f in files if f not in gone])
                  .where(F.col("commitlog_offset") >= min_commitlog_offset)
                  .groupBy("topic", "queue_id").agg(F.min("queue_offset").alias("first"))
                  .collect())
        first = {(r["topic"], r["queue_id"]): int(r["first"]) for r in firsts}
        queues = {t: {q: [first.get((t, q), hi), hi] for q, (lo, hi) in qs.items()}
                  for t, qs in state.queues.items()}
        table.commit(removes=gone, expected_version=version, operation="DELETE",
                     custom_metadata=ConsumeQueueState(state.dispatched, queues, state.bits).to_metadata())
        return len(gone)

    return retry_on_conflict(attempt, "consume-queue clean-up")


def compact(tables: StoreTables, *, small_file_rows: Optional[int] = None) -> dict:
    """Merge small files (fewer than ``small_file_rows`` rows) of the CommitLog and the
    ConsumeQueue into large clustered ones, then write checkpoints. Returns files before/after."""
    limit = small_file_rows or tables.config.consume_queue_rows_per_file // 2
    result = {}
    for name, sort_by, split_on, state_of in (
            ("commitlog", ("commitlog_offset",), (), tables.commitlog_state),
            ("consumequeue", ("topic", "queue_id", "queue_offset"), ("topic", "queue_id"),
             tables.consumequeue_state)):
        def attempt(name=name, sort_by=sort_by, split_on=split_on, state_of=state_of):
            table = tables.table(name)
            before = table.files()
            small = [f for f in before if f.num_records < limit]
            if len(small) > 1:
                table.rewrite(tables.spark, small, sort_by=sort_by, split_on=split_on,
                              max_rows_per_file=tables.config.consume_queue_rows_per_file,
                              custom_metadata=state_of().to_metadata())
            table.checkpoint()
            return len(before), len(table.refresh().files())
        result[name] = retry_on_conflict(attempt, f"compaction of {name}")
    return result


def vacuum(tables: StoreTables, retention_hours: float = 168, *, enforce_retention_duration: bool = True) -> List[str]:
    """Delete data files no longer referenced by any table version within the retention."""
    deleted: List[str] = []
    for name in S.TABLES:
        deleted += tables.table(name).vacuum(retention_hours,
                                          enforce_retention_duration=enforce_retention_duration)
    return deleted
