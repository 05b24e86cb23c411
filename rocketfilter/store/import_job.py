"""``MessageStore.import_store``: a RocketMQ broker's store directory into the Delta tables.

The files are parsed and checked by :mod:`.importer` on the executors. Nothing is committed
until the whole source validated (or, with ``skip_damaged``, until the damage is counted). The
consume-queue units are imported as they are, then the CommitLog messages they do not cover yet
are dispatched, as a broker's recovery re-puts the tail of its commit log.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from rocketfilter.store.dispatch import write_consumequeue
from rocketfilter.store.state import DISPATCH_APP_ID, CommitLogState, ConsumeQueueState


class StoreNotEmptyError(RuntimeError):
    """Importing into a store that already holds messages would mix two offset spaces."""


def import_store(store, path: str, *, skip_damaged: bool = False):
    """Import ``path`` (holding ``commitlog/`` and ``consumequeue/``) into an empty store and
    return the importer's report (files, messages, units, damaged records)."""
    from rocketfilter.store.importer import scan_store

    if store.commitlog_state().next_commitlog_offset or store.commitlog.refresh().files():
        raise StoreNotEmptyError(f"store {store.uri} already holds messages; import into a new store")
    scanned = scan_store(store.spark, path, skip_damaged=skip_damaged)
    report = scanned.validate()

    for topic, queue_count in scanned.topics:
        existing = store.topic_config(topic)
        if existing is None or existing.read_queue_nums < queue_count:
            store.create_topic(topic, read_queue_nums=max(queue_count, 1), write_queue_nums=max(queue_count, 1))

    cl = scanned.commitlog
    marks = cl.agg(F.min("commitlog_offset").alias("lo"),
                   F.max(F.col("commitlog_offset") + F.col("store_size")).alias("hi")).first()
    queue_ends = (cl.groupBy("topic", "queue_id").agg(F.max("queue_offset").alias("last")).collect())
    state = CommitLogState(
        # Past the end-of-file blanks too: the broker's next message goes where its data ends.
        next_commitlog_offset=max(int(marks["hi"] or 0), int(report.commitlog_end)),
        min_commitlog_offset=int(marks["lo"] or 0),
        queues={},
    )
    for r in queue_ends:
        state.queues.setdefault(r["topic"], {})[r["queue_id"]] = int(r["last"]) + 1
    table = store.commitlog.refresh()
    version = table.version()
    adds = table.write(cl.repartitionByRange(report_partitions(report), "commitlog_offset")
                       .sortWithinPartitions("commitlog_offset"))
    table.commit(adds, expected_version=version, custom_metadata=state.to_metadata(),
                 operation="WRITE")

    cq = scanned.consumequeue
    ranges = (cq.groupBy("topic", "queue_id")
              .agg(F.min("queue_offset").alias("lo"), F.max("queue_offset").alias("hi"),
                   F.count(F.lit(1)).alias("n"),
                   F.max(F.col("commitlog_offset") + F.col("size")).alias("end"))
              .collect())
    dispatched = max((int(r["end"]) for r in ranges), default=state.min_commitlog_offset)
    cq_state = ConsumeQueueState(dispatched, {})
    for r in ranges:
        cq_state.queues.setdefault(r["topic"], {})[r["queue_id"]] = [int(r["lo"]), int(r["hi"]) + 1]
    n_units = sum(int(r["n"]) for r in ranges)
    cq_table = store.consumequeue.refresh()
    cq_version = cq_table.version()
    adds = write_consumequeue(store, cq, n_units) if n_units else []
    cq_table.commit(adds, expected_version=cq_version, app_transaction=(DISPATCH_APP_ID, dispatched),
                    custom_metadata=cq_state.to_metadata())
    scanned.unpersist()
    store.dispatch()
    return report


def report_partitions(report) -> int:
    """Output files of about a million messages each, clustered by offset."""
    return max(1, -(-report.messages // 1_000_000))
