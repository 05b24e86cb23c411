"""``DefaultMessageStore#getMessage`` as two small DataFrame scans and the one batch-limit
function (SEMANTICS §12).

1. The ConsumeQueue window of one queue, read from the few files whose statistics overlap it,
   with ``isMatchedByConsumeQueue`` (tag code or bitmap) as a Column.
2. The CommitLog rows of the surviving entries, pruned to their offset range, with
   ``isMatchedByCommitLog`` (the compiled SQL92 selector) as a Column. Bodies come back only for
   the first entries that can fit in one batch.
3. :func:`rocketfilter.pull.window.get_message_window` on the driver over those few hundred
   flags: statuses, ``next_begin_offset`` and ``isTheBatchFull`` exactly as the broker's loop.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa
from pyspark.sql import Window
from pyspark.sql import functions as F

from rocketfilter.pull.result import GetMessageResult
from rocketfilter.pull.window import PullLimits, get_message_window, no_matched_logic_queue
from rocketfilter.store import schema as S

_EMPTY = np.zeros(0, dtype=np.int64)


def pull_limits(config) -> PullLimits:
    """The pull loop's limits from a ``MessageStoreConfig``."""
    return PullLimits(
        max_transfer_bytes_on_message_in_memory=config.max_transfer_bytes_on_message_in_memory,
        max_transfer_count_on_message_in_memory=config.max_transfer_count_on_message_in_memory,
        max_transfer_bytes_on_message_in_disk=config.max_transfer_bytes_on_message_in_disk,
        max_transfer_count_on_message_in_disk=config.max_transfer_count_on_message_in_disk,
        access_message_in_memory_max_ratio=config.access_message_in_memory_max_ratio,
        total_physical_memory=config.total_physical_memory,
        max_filter_message_size=config.max_filter_message_size,
        mapped_file_size_consume_queue=config.consume_queue_file_size,
        mapped_file_size_commitlog=config.mapped_file_size_commit_log,
        broker_role=config.broker_role,
        offset_check_in_slave=config.offset_check_in_slave,
    )


def _is_sql(message_filter) -> bool:
    from rocketfilter.tags import is_tag_type

    sub = getattr(message_filter, "subscription_data", None)
    return sub is not None and not is_tag_type(sub.expression_type)


def get_message(store, group: str, topic: str, queue_id: int, offset: int,
                max_msg_nums: int = 32, message_filter=None) -> GetMessageResult:
    """One pull: ``getMessage(group, topic, queueId, offset, maxMsgNums, messageFilter)``.

    ``message_filter`` is an :class:`rocketfilter.pull.filter.ExpressionMessageFilter` (or the
    retry variant), or None to accept everything. The result carries the found messages as
    MessageExt-like dicts (``messages``) and as a Spark DataFrame (``dataframe``).
    """
    limits = pull_limits(store.config)
    queue = store.consumequeue_state().offsets(topic, queue_id)
    if queue is None:
        return no_matched_logic_queue(offset, limits).to_get_message_result()
    min_offset, max_offset = queue
    max_offset_py = store.commitlog_state().next_commitlog_offset
    window = dict(offset=offset, max_msg_nums=max_msg_nums, min_offset=min_offset,
                  max_offset=max_offset, max_offset_py=max_offset_py, limits=limits)
    if not min_offset <= offset < max_offset:
        empty = (_EMPTY,) * 3 + (np.zeros(0, bool),) * 3
        return get_message_window(*empty, **window).to_get_message_result()

    end = min(offset + limits.window_entries(max_msg_nums),
              limits.roll_next_consume_queue_file(offset), max_offset)
    cq = _consumequeue_window(store, topic, queue_id, offset, end, message_filter)
    survivors = cq["commitlog_offset"].to_numpy()[cq["cq_match"].to_numpy(zero_copy_only=False)]
    bound = max(1, min(max_msg_nums, max(limits.max_transfer_count_on_message_in_memory,
                                         limits.max_transfer_count_on_message_in_disk)))
    cl = _commitlog_rows(store, survivors, message_filter, bound)
    by_offset = {int(o): i for i, o in enumerate(cl["commitlog_offset"].to_numpy())}
    positions = cq["commitlog_offset"].to_numpy()
    rows = np.array([by_offset.get(int(p), -1) for p in positions], dtype=np.int64)
    present = rows >= 0
    cl_match = np.zeros(len(rows), dtype=bool)
    cl_match[present] = cl["cl_match"].to_numpy(zero_copy_only=False)[rows[present]]

    answer = get_message_window(
        cq["queue_offset"].to_numpy(), positions, cq["size"].to_numpy(),
        cq["cq_match"].to_numpy(zero_copy_only=False), present, cl_match, **window)
    result = answer.to_get_message_result()
    _fill_funnel(result, answer, message_filter)
    found_rows = rows[answer.found_index]
    if len(found_rows) and not cl["body_loaded"].to_numpy(zero_copy_only=False)[found_rows].all():
        cl = _commitlog_rows(store, positions[answer.found_index], None, len(found_rows))
        found_rows = np.arange(len(found_rows))
    messages = cl.drop_columns(["cl_match", "body_loaded"]).take(pa.array(found_rows, pa.int64()))
    # Arrow hands a map over as (key, value) pairs; MessageExt's properties are a map.
    result.messages = [{**m, "properties": dict(m["properties"]) if m["properties"] is not None else None}
                       for m in messages.to_pylist()]
    result.dataframe = store.spark.createDataFrame(messages) if messages.num_rows \
        else store.spark.createDataFrame([], S.COMMITLOG_SCHEMA)
    return result


def _consumequeue_window(store, topic: str, queue_id: int, start: int, end: int,
                         message_filter) -> pa.Table:
    where = [("topic", "=", topic), ("queue_id", "=", queue_id),
             ("queue_offset", ">=", start), ("queue_offset", "<", end)]
    df = store.consumequeue.read(store.spark, where=where)
    cq_match = (message_filter.consume_queue_column() if message_filter is not None
                else F.lit(True))
    return (df.select("queue_offset", "commitlog_offset", "size", cq_match.alias("cq_match"))
            .orderBy("queue_offset").toArrow())


def _commitlog_rows(store, offsets: np.ndarray, message_filter, bound: int) -> pa.Table:
    """The CommitLog rows at ``offsets`` with ``cl_match``; bodies only for the first ``bound``
    matching rows, since no batch can hold more."""
    schema = S.arrow_schema(S.COMMITLOG_SCHEMA)
    if len(offsets) == 0:
        return schema.empty_table().append_column("cl_match", pa.array([], pa.bool_())) \
            .append_column("body_loaded", pa.array([], pa.bool_()))
    lo, hi = int(offsets.min()), int(offsets.max())
    df = (store.commitlog.read(store.spark, where=[("commitlog_offset", ">=", lo),
                                                    ("commitlog_offset", "<=", hi)])
          .where(F.col("commitlog_offset").isin([int(o) for o in offsets])))
    cl_match = (message_filter.commit_log_column() if message_filter is not None
                else F.lit(True))
    rank = F.sum(cl_match.cast("int")).over(Window.orderBy("commitlog_offset"))
    loaded = cl_match & (rank <= bound)
    columns = [F.when(loaded, F.col(f.name)).alias(f.name) if f.name == "body" else F.col(f.name)
               for f in S.COMMITLOG_SCHEMA.fields]
    return (df.withColumn("cl_match", cl_match)
            .select(*columns, "cl_match", loaded.alias("body_loaded"))
            .orderBy("commitlog_offset").toArrow())


def _fill_funnel(result: GetMessageResult, answer, message_filter: Optional[object]) -> None:
    """Split the consume-queue check into its tag-code and bitmap parts for the funnel."""
    funnel = result.funnel
    considered = answer.scanned - answer.skipped
    if _is_sql(message_filter):
        funnel.passed_tag_code = considered
        funnel.bitmap_passed = answer.passed_cq
        funnel.bitmap_skipped = considered - answer.passed_cq
    else:
        funnel.passed_tag_code = answer.passed_cq
