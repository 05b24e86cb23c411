"""``DefaultMessageStore#getMessage`` as DataFrame scans and the one batch-limit function
(SEMANTICS §12).

1. The ConsumeQueue window of one queue, read from the few files whose statistics overlap it,
   with ``isMatchedByConsumeQueue`` (tag code or bitmap) as a Column.
2. For SQL92, the CommitLog rows of the entries that pass, pruned to their offset range, with
   ``isMatchedByCommitLog`` (the compiled selector) as a Column.
3. :func:`rocketfilter.pull.window.get_message_window` on the driver over those few hundred
   flags: statuses, ``next_begin_offset`` and ``isTheBatchFull`` exactly as the broker's loop.
4. The found messages (one batch at most), bodies included.

:mod:`rocketfilter.pull.scan` usually does 1, 2 and 4's reads in one Spark job (the CommitLog
side bounded by the window's commitlog offsets), and the driver joins them on offset.

By default (``store.pull_engine`` "auto" or "arrow") steps 1, 2 and 4 are parquet reads on the
driver instead (:mod:`rocketfilter.pull.arrow_window`), with the same answers: one window is at
most a few hundred rows, which pyarrow read in 23-29 ms on a 1M-message store where one Spark
job took 200-240 ms (bench/pull_latency.py). ``store.pull_engine = "spark"`` reads them with
Spark as above. Bulk work (``pull_sequence``, ``replay_group``, ``read_messages``) always runs
on Spark.

The driver-side window function was measured against running it as a grouped Arrow UDF in the
plan (0.76 s vs 1.24 s for one pull, under the same load), so single pulls use the driver.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Optional

import numpy as np

from rocketfilter.checks import check_max_msg_nums, check_pull_offset
from rocketfilter.pull import arrow_window
from rocketfilter.pull.arrow_window import arrow_pulls
from rocketfilter.pull.result import GetMessageResult
from rocketfilter.pull.scan import is_sql_filter, read_window, small_query_conf
from rocketfilter.pull.limits import PullLimits
from rocketfilter.pull.window import get_message_window
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


def get_message(store, group: str, topic: str, queue_id: int, offset: int,
                max_msg_nums: int = 32, message_filter=None) -> GetMessageResult:
    """One pull: ``getMessage(group, topic, queueId, offset, maxMsgNums, messageFilter)``.

    ``message_filter`` is an :class:`rocketfilter.pull.filter.ExpressionMessageFilter` (or the
    retry variant), or None to accept everything. The result carries the found messages as
    MessageExt-like dicts (``messages``) and as a Spark DataFrame (``dataframe``).
    """
    if message_filter is not None and not hasattr(message_filter, "is_matched_by_consume_queue"):
        raise TypeError("message_filter must be an ExpressionMessageFilter (e.g. "
                        "ExpressionMessageFilter(build_subscription(topic, \"TagA || TagB\"))) or "
                        f"None, not {type(message_filter).__name__}")
    check_max_msg_nums(max_msg_nums)
    check_pull_offset(offset)
    limits = pull_limits(store.config)
    # findOrCreateConsumeQueue: a queue that never received a message is an empty queue, so the
    # answer is NO_MESSAGE_IN_QUEUE, never NO_MATCHED_LOGIC_QUEUE (SEMANTICS §12.2).
    min_offset, max_offset = store.consumequeue_state().offsets(topic, queue_id) or (0, 0)
    commitlog = store.commitlog_state()  # one snapshot for the pull's max and min offsets
    max_offset_py = commitlog.next_commitlog_offset
    window = dict(offset=offset, max_msg_nums=max_msg_nums, min_offset=min_offset,
                  max_offset=max_offset, max_offset_py=max_offset_py, limits=limits)
    if not min_offset <= offset < max_offset:
        empty = (_EMPTY,) * 3 + (np.zeros(0, bool),) * 3
        return get_message_window(*empty, **window).to_get_message_result()

    end = min(offset + limits.window_entries(max_msg_nums),
              limits.roll_next_consume_queue_file(offset), max_offset)
    arrow = arrow_pulls(store)
    reader = arrow_window.read_window if arrow else read_window
    with (nullcontext() if arrow else small_query_conf(store.spark)), store.reading(S.COMMITLOG, S.CONSUMEQUEUE):
        scan = reader(store, topic, queue_id, offset, end, message_filter)
        # Retention removes a prefix of the CommitLog, so presence is one comparison.
        present = scan.positions >= commitlog.min_commitlog_offset
        cl_match = scan.commit_log_matches(store, scan.cq_match & present, message_filter)
        answer = get_message_window(scan.queue_offsets, scan.positions, scan.sizes, scan.cq_match,
                                    present, cl_match, **window)
        messages = scan.messages(store, scan.positions[answer.found_index])
    result = answer.to_get_message_result()
    _fill_funnel(result, answer, message_filter)
    result.spark_jobs = scan.jobs
    # Arrow hands a map over as (key, value) pairs; MessageExt's properties are a map.
    result.messages = [{**m, "properties": dict(m["properties"]) if m["properties"] is not None else None}
                       for m in messages.to_pylist()]
    if store.spark is not None:
        result.dataframe_factory = lambda: (store.spark.createDataFrame(messages) if messages.num_rows
                                            else store.spark.createDataFrame([], S.COMMITLOG_SCHEMA))
    return result


def _fill_funnel(result: GetMessageResult, answer, message_filter: Optional[object]) -> None:
    """Split the consume-queue check into its tag-code and bitmap parts for the funnel."""
    funnel = result.funnel
    considered = answer.scanned - answer.skipped
    if is_sql_filter(message_filter):
        funnel.passed_tag_code = considered
        funnel.bitmap_passed = answer.passed_cq
        funnel.bitmap_skipped = considered - answer.passed_cq
    else:
        funnel.passed_tag_code = answer.passed_cq
