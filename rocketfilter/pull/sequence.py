"""``pull_sequence`` on a store: the pulls a consumer would make over a range, for every queue of
a topic, in one Spark job.

The filter flags do not depend on where a pull starts, so they are computed once per entry with
Columns (the tag code or bitmap check on the ConsumeQueue, then the compiled SQL92 selector on
the CommitLog rows it lets through, joined on ``commitlog_offset``). The same batch-limit function
that single pulls use then runs per queue as a grouped Arrow UDF.
"""
from __future__ import annotations

from typing import Dict, Optional

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rocketfilter.pull.batch import pull_sequence as _pull_sequence
from rocketfilter.pull.get_message import pull_limits
from rocketfilter.pull.scan import is_sql_filter


def pull_sequence(store, topic: str, message_filter=None, *, max_msg_nums: int = 32,
                  start_offsets: Optional[Dict[int, int]] = None,
                  end_offsets: Optional[Dict[int, int]] = None,
                  output: str = "entries") -> DataFrame:
    """Every delivered message of ``topic`` from ``start_offsets`` (default: each queue's min
    offset) to ``end_offsets`` (default: its max), with the pull number that delivered it and
    that pull's ``next_begin_offset`` and status. ``output="pulls"`` gives one row per pull.

    >>> from rocketfilter.pull.filter import ExpressionMessageFilter
    >>> f = ExpressionMessageFilter(build_subscription("T", "TagA"))       # doctest: +SKIP
    >>> pull_sequence(store, "T", f).groupBy("queue_id").count().show()   # doctest: +SKIP
    """
    state = store.consumequeue_state()
    queues = state.queues.get(topic, {})
    if not queues:
        raise ValueError(f"topic {topic!r} has no dispatched queue in store {store.uri}")
    key = lambda q: (topic, q)  # noqa: E731
    starts = {key(q): (start_offsets or {}).get(q, lo) for q, (lo, hi) in queues.items()}
    ends = {key(q): (end_offsets or {}).get(q, hi) for q, (lo, hi) in queues.items()}
    cl = store.commitlog_state()

    cq = store.consumequeue.read(store.spark, where=[("topic", "=", topic)])
    lowest = min(starts.values())
    cq = cq.where(F.col("queue_offset") >= F.lit(lowest))
    cq_match = message_filter.consume_queue_column() if message_filter is not None else F.lit(True)
    entries = cq.select("topic", "queue_id", "queue_offset", "commitlog_offset", "size",
                        cq_match.alias("cq_match"),
                        (F.col("commitlog_offset") >= cl.min_commitlog_offset).alias("cl_present"))
    if is_sql_filter(message_filter):
        matched = (store.commitlog.read(store.spark, where=[("topic", "=", topic)])
                   .select("commitlog_offset", message_filter.commit_log_column().alias("cl_match")))
        entries = entries.join(matched, "commitlog_offset", "left") \
            .withColumn("cl_match", F.coalesce("cl_match", F.lit(False)))
    else:
        entries = entries.withColumn("cl_match", F.lit(True))
    return _pull_sequence(entries, max_msg_nums=max_msg_nums,
                          max_offset_py=cl.next_commitlog_offset, limits=pull_limits(store.config),
                          start_offsets=starts, end_offsets=ends,
                          min_offsets={key(q): lo for q, (lo, hi) in queues.items()},
                          max_offsets={key(q): hi for q, (lo, hi) in queues.items()},
                          output=output)


