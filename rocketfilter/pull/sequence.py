"""``pull_sequence`` on a store: the pulls a consumer would make over a range, for every queue of
a topic, in one Spark job.

The filter flags do not depend on where a pull starts, so they are computed once per entry with
Columns (the tag code or bitmap check on the ConsumeQueue, then the compiled SQL92 selector on
the CommitLog rows it lets through, joined on ``commitlog_offset``). The same batch-limit function
that single pulls use then runs per queue as a grouped Arrow UDF.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Union

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rocketfilter.checks import check_max_msg_nums
from rocketfilter.offsets_spec import queue_offsets
from rocketfilter.pull.batch import ENTRY_SCHEMA, PULL_SCHEMA
from rocketfilter.pull.bits import bit, slot_for_filter
from rocketfilter.pull.batch import pull_sequence as _pull_sequence
from rocketfilter.pull.get_message import pull_limits
from rocketfilter.pull.scan import is_sql_filter
from rocketfilter.pull.window import no_message_in_queue
from rocketfilter.store import schema as S


def pull_sequence(store, topic: str, message_filter=None, *, max_msg_nums: int = 32,
                  start_offsets: Union[None, Dict[int, int], Any] = None,
                  end_offsets: Union[None, Dict[int, int], Any] = None,
                  output: str = "entries") -> DataFrame:
    """Every delivered message of ``topic`` from ``start_offsets`` (default: each queue's min
    offset) to ``end_offsets`` (default: its max), with the pull number that delivered it and
    that pull's ``next_begin_offset`` and status. ``output="pulls"`` gives one row per pull; a
    readable queue that never received a message answers one NO_MESSAGE_IN_QUEUE pull, as a
    broker's getMessage does.

    ``start_offsets`` and ``end_offsets`` are ``{queue_id: offset}`` dicts (a queue left out
    starts at its min offset, ends at its max), or a spec as Spark's Kafka source takes it:
    ``"earliest"``, ``"latest"``, a time (epoch ms, ISO-8601, datetime) or
    ``{"TopicA": {"0": 23, "1": -2}}`` (see :mod:`rocketfilter.offsets_spec`).

    >>> from rocketfilter.pull.filter import ExpressionMessageFilter
    >>> f = ExpressionMessageFilter(build_subscription("T", "TagA"))       # doctest: +SKIP
    >>> pull_sequence(store, "T", f).groupBy("queue_id").count().show()   # doctest: +SKIP
    """
    check_max_msg_nums(max_msg_nums)
    if output not in ("entries", "pulls"):
        raise ValueError(f"output must be 'entries' or 'pulls', not {output!r}")
    config = store.topic_config(topic)
    queues = store.consumequeue_state().queues.get(topic, {})
    if config is None and not queues:
        known = ", ".join(sorted(store.topics())) or "none"
        raise ValueError(f"topic {topic!r} does not exist in store {store.uri} (topics: {known})")
    start_offsets = queue_offsets(store, topic, start_offsets, what="start_offsets")
    end_offsets = queue_offsets(store, topic, end_offsets, end=True, what="end_offsets")
    readable = range(config.read_queue_nums) if config is not None else ()
    empty = sorted(set(readable) - set(queues))
    if not queues:
        return _empty_queue_pulls(store, topic, empty, start_offsets, output)
    store.check_files(S.COMMITLOG, S.CONSUMEQUEUE)  # a lazy result: catch lost files now
    key = lambda q: (topic, q)  # noqa: E731
    starts = {key(q): (start_offsets or {}).get(q, lo) for q, (lo, hi) in queues.items()}
    ends = {key(q): (end_offsets or {}).get(q, hi) for q, (lo, hi) in queues.items()}
    cl = store.commitlog_state()

    cq = store.consumequeue.read(store.spark, where=[("topic", "=", topic)])
    lowest = min(starts.values())
    cq = cq.where(F.col("queue_offset") >= F.lit(lowest))
    cq_match = message_filter.consume_queue_column() if message_filter is not None else F.lit(True)
    # Exact subscription bits of this decision (covering every start): no CommitLog read at all.
    slot = slot_for_filter(store, topic, message_filter, {q: s for (_, q), s in starts.items()})
    sql = is_sql_filter(message_filter)
    if slot is not None and not sql:
        cq_match = bit(slot)
    entries = cq.select("topic", "queue_id", "queue_offset", "commitlog_offset", "size",
                        cq_match.alias("cq_match"),
                        (F.col("commitlog_offset") >= cl.min_commitlog_offset).alias("cl_present"),
                        *([bit(slot).alias("cl_match")] if slot is not None and sql else []))
    if sql and slot is None:
        matched = (store.commitlog.read(store.spark, where=[("topic", "=", topic)])
                   .select("commitlog_offset", message_filter.commit_log_column(
                       promoted=store.promoted_properties()).alias("cl_match")))
        entries = entries.join(matched, "commitlog_offset", "left") \
            .withColumn("cl_match", F.coalesce("cl_match", F.lit(False)))
    elif not sql:
        entries = entries.withColumn("cl_match", F.lit(True))
    result = _pull_sequence(entries, max_msg_nums=max_msg_nums,
                            max_offset_py=cl.next_commitlog_offset, limits=pull_limits(store.config),
                            start_offsets=starts, end_offsets=ends,
                            min_offsets={key(q): lo for q, (lo, hi) in queues.items()},
                            max_offsets={key(q): hi for q, (lo, hi) in queues.items()},
                            output=output, topic=topic, groups=[(q,) for q in queues])
    if output == "pulls" and empty:
        result = result.unionByName(_empty_queue_pulls(store, topic, empty, start_offsets, output))
    return result


def _empty_queue_pulls(store, topic: str, queue_ids, start_offsets, output: str) -> DataFrame:
    """The one pull each queue without messages answers (NO_MESSAGE_IN_QUEUE), or no entries."""
    if output == "entries" or not queue_ids:
        return store.spark.createDataFrame([], ENTRY_SCHEMA if output == "entries" else PULL_SCHEMA)
    limits = pull_limits(store.config)
    rows = []
    for q in queue_ids:
        offset = (start_offsets or {}).get(q, 0)
        r = no_message_in_queue(offset, limits)
        rows.append((topic, q, 0, offset, r.status.value, r.next_begin_offset, 0, 0, 0, False, 0, 0, 0))
    return store.spark.createDataFrame(rows, PULL_SCHEMA)
