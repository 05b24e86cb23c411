"""``MessageStore.import_store``: a RocketMQ broker's store directory into the Delta tables.

The files are parsed and checked by :mod:`.importer` (with :mod:`rocketfilter.broker_files`) on the executors. Nothing is committed
until the whole source validated (or, with ``skip_damaged``, until the damage is counted). The
consume-queue units are imported as they are, then the CommitLog messages they do not cover yet
are dispatched, as a broker's recovery re-puts the tail of its commit log. The broker's
``config/*.json`` files (committed offsets, topics, subscription groups, SQL92 filter data) are
checked before anything is committed and applied last (:mod:`.config_files`).
"""
from __future__ import annotations

from pyspark.sql import functions as F

from rocketfilter.arrow_batches import rows_only
from rocketfilter.spark_mode import default_parallelism
from rocketfilter.spark_progress import ProgressOption, progress_block
from rocketfilter.store import schema as S
from rocketfilter.store.config_files import apply_broker_config, read_broker_config
from rocketfilter.store.dispatch import consumequeue_rows, dispatch, write_consumequeue
# StoreNotEmptyError is re-exported: callers import it from here.
from rocketfilter.store.errors import StoreNotEmptyError
from rocketfilter.store.importer import scan_store
from rocketfilter.store.promote import promote_configured
from rocketfilter.store.promoted import frequent_user_properties, with_promoted
from rocketfilter.store.state import DISPATCH_APP_ID, CommitLogState, ConsumeQueueState
from rocketfilter.store.tables import StoreTables
from rocketfilter.store.topics import create_topic, topic_config

__all__ = ["import_store", "StoreNotEmptyError", "report_partitions"]


def import_store(tables: StoreTables, path: str, *, skip_damaged: bool = False,
                 progress: ProgressOption = False):
    """Import ``path`` (holding ``commitlog/`` and ``consumequeue/``) into an empty store and
    return the importer's report (files, messages, units, damaged records).

    ``progress=True`` shows the import's phases on stderr when it lasts more than a few seconds:
    ``reading`` counts the commit-log files parsed (``import: reading 12/40 files ...``; the parse
    runs one task per run of whole files, so its tasks count files, see
    :mod:`rocketfilter.spark_progress`), then ``writing`` and ``committing``.
    """
    if tables.commitlog_state().next_commitlog_offset or tables.table(S.COMMITLOG).files():
        raise StoreNotEmptyError(f"store {tables.uri} already holds messages; import into a new store")
    scanned = scan_store(tables.spark, path, skip_damaged=skip_damaged)
    configs = read_broker_config(path, skip_damaged=skip_damaged, broker_config=tables.broker_config)
    files = scanned.commitlog_file_count
    with progress_block(tables.spark, progress if files else False, "import", unit="files",
                        total=files, tasks=scanned.commitlog_tasks or None, phase="reading",
                        after="writing") as shown:
        report = _import(tables, scanned, shown)
    report.config = apply_broker_config(tables, configs)
    return report


def _phase(shown, phase: str) -> None:
    """Tell the progress display (if it has phases) that the import moved on to ``phase``."""
    set_phase = getattr(shown, "set_phase", None)
    if set_phase is not None:
        set_phase(phase)


def _import(tables: StoreTables, scanned, shown=None):
    """Validate the parse, then write the CommitLog, the ConsumeQueue and dispatch the rest."""
    report = scanned.validate()

    for topic, queue_count in scanned.topics:
        existing = topic_config(tables, topic)
        if existing is None or existing.read_queue_nums < queue_count:
            create_topic(tables, topic, read_queue_nums=max(queue_count, 1),
                         write_queue_nums=max(queue_count, 1))

    cl = scanned.commitlog
    # One pass: each queue's end and the log's marks (the log's are its queues' extremes).
    queue_ends = (cl.groupBy("topic", "queue_id")
                  .agg(F.max("queue_offset").alias("last"), F.min("commitlog_offset").alias("lo"),
                       F.max(F.col("commitlog_offset") + F.col("store_size")).alias("hi"),
                       F.max(2 * F.col("store_size")
                             + F.coalesce(F.length("body"), F.lit(0))).alias("widest"))
                  .collect())
    data_end = max((int(r["hi"]) for r in queue_ends), default=0)
    state = CommitLogState(
        # Past the end-of-file blanks too: the broker's next message goes where its data ends.
        next_commitlog_offset=max(data_end, int(report.commitlog_end)),
        min_commitlog_offset=min((int(r["lo"]) for r in queue_ends), default=0),
        queues={},
    )
    for r in queue_ends:
        state.queues.setdefault(r["topic"], {})[r["queue_id"]] = int(r["last"]) + 1
    # Promote what the settings name, and each topic's most frequent user properties.
    top = tables.config.promote_top_properties
    promote_configured(tables, frequent_user_properties(cl, top) if top else ())
    table = tables.table(S.COMMITLOG)
    version = table.version()
    rows = with_promoted(cl, table.schema)
    # Each parse task's rows are one ascending offset range: written as they are, unless records
    # were dropped by a join, or there are fewer tasks than cores and files to write (one huge file).
    files = report_partitions(report)
    if not scanned.in_offset_order or scanned.commitlog_tasks < min(default_parallelism(tables.spark), files):
        rows = (rows.repartitionByRange(files, "commitlog_offset")
                .sortWithinPartitions("commitlog_offset"))
    # A row holds its record's fields, its properties again in the promoted columns and its
    # body as stored or, when the broker compressed it, inflated (hence the body's own length).
    with rows_only(tables.spark, max((int(r["widest"] or 0) for r in queue_ends), default=0) + 4096):
        adds = table.write(rows)
    _phase(shown, "committing")   # the CommitLog's commit, then the ConsumeQueue's and the dispatch
    table.commit(adds, expected_version=version, custom_metadata=state.to_metadata(),
                 operation="WRITE")

    cq, report.cq_units_rebuilt = _with_rebuilt_units(tables, cl, scanned.consumequeue, report)
    ranges = scanned.unit_ranges   # counted by the validation, unless units were rebuilt since
    if report.cq_units_rebuilt or ranges is None:
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
    cq_table = tables.table(S.CONSUMEQUEUE)
    cq_version = cq_table.version()
    adds = cq_table._adds(write_consumequeue(tables, cq, n_units), True) if n_units else []
    cq_table.commit(adds, expected_version=cq_version, app_transaction=(DISPATCH_APP_ID, dispatched),
                    custom_metadata=cq_state.to_metadata())
    scanned.unpersist()
    dispatch(tables)
    return report


def _with_rebuilt_units(tables: StoreTables, cl, cq, report):
    """The imported units plus one rebuilt from each CommitLog record that no unit points to
    although the ConsumeQueue had gone past it (a unit file lost to damage), and how many were
    rebuilt. The CommitLog is the truth: a broker's recovery re-dispatches it the same way.
    Records past every unit are left to the dispatch that follows; records below a queue's
    first unit (its older files deleted by retention) stay out of the ConsumeQueue. Without
    damage, a record with no unit is one validation counted: none, and there is nothing to look for."""
    if not report.records_without_unit and not report.damaged_count:
        return cq, 0
    ends = cq.groupBy("topic", "queue_id").agg(F.min("queue_offset").alias("_lo"))
    dispatched = cq.agg(F.max(F.col("commitlog_offset") + F.col("size"))).first()[0]
    if dispatched is None:
        return cq, 0
    orphans = (cl.filter(F.col("commitlog_offset") < F.lit(int(dispatched)))
               .join(cq.select("commitlog_offset"), "commitlog_offset", "left_anti")
               .join(F.broadcast(ends), ["topic", "queue_id"], "left")
               .filter(F.col("_lo").isNull() | (F.col("queue_offset") >= F.col("_lo")))
               .drop("_lo"))
    n = orphans.count()
    if not n:
        return cq, 0
    rebuilt = consumequeue_rows(tables, orphans).select(*cq.columns)
    return cq.unionByName(rebuilt), n


def report_partitions(report) -> int:
    """Output files of about a million messages each, clustered by offset."""
    return max(1, -(-report.messages // 1_000_000))
