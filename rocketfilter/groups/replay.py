"""``replay_group``: the messages each consumer of a group would consume from a topic, in one Spark
job over all queues.

The plan (:mod:`.plan`) decides on the driver who takes which queue and which broker filter
each consumer's pulls go through; usually all consumers share one (the group's subscription
table). Then, as Columns over the ConsumeQueue joined with the CommitLog:

1. each filter's flags (tag code or bitmap, then the compiled SQL92 selector), once per entry;
2. each entry repeated once per filter that some consumer pulls its queue with (with several
   filters, an ``explode`` of literal queue lists, no join), then the broker's pull loop per
   (filter, queue) (``pull_sequence``'s Arrow function, each in a partition of its own) from
   each queue's start offset;
3. each delivered entry repeated once per consumer pulling that queue with that filter, and the
   client's exact tag re-check (``PullAPIWrapper.processPullResult``) with the consumer's own
   subscription.

Consumers sharing a filter share the pulls, so BROADCASTING costs one pull loop per queue, not
one per consumer. No Python UDF evaluates a filter: the loop is vectorised numpy per queue.
When every filter is a tag filter, the loop runs over the ConsumeQueue alone and only the
delivered entries are joined with the CommitLog, so the loop's shuffle carries no strings;
``replay_group`` joins them only with the records whose tag some consumer keeps.
"""
from __future__ import annotations

import math
import warnings
from typing import Dict, List, Mapping, Optional, Sequence, Set, Union

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketfilter.arrow_batches import rows_only
from rocketfilter.checks import check_max_msg_nums
from rocketfilter.consumer.group import ConsumerGroup
from rocketfilter.pull.batch import LOOP_ROW_BYTES, pull_sequence, status_name
from rocketfilter.pull.get_message import pull_limits
from rocketfilter.groups.plan import GroupPlan, OffsetSpec, plan_group_pulls, resolve_group
from rocketfilter.pull.scan import is_sql_filter
from rocketfilter.spark_mode import default_parallelism
from rocketfilter.store import schema as S
from rocketfilter.tag_columns import kept_tag_set, tag_exact_predicate

REPLAY_COLUMNS = ("client_id", "topic", "queue_id", "queue_offset", "msg_id", "pull_number", "next_begin_offset",
                  "tags", "keys", "commitlog_offset", "store_timestamp", "pull_status")
REPLAY_SCHEMA = ("client_id string, topic string, queue_id int, queue_offset long, msg_id string, pull_number int, "
                 "next_begin_offset long, tags string, keys string, commitlog_offset long, store_timestamp long, "
                 "pull_status string")
# The CommitLog's columns of a delivered message, and what the pull loop carries along for it.
MESSAGE_COLUMNS = ("msg_id", "tags", "keys")
_CARRY = MESSAGE_COLUMNS + ("store_timestamp",)


def flagged_entries(store, plan: GroupPlan, queue_ids: List[int],
                    extra_cl: Optional[Mapping[str, Column]] = None, *,
                    message_columns: bool = True) -> DataFrame:
    """The ConsumeQueue entries of ``queue_ids`` from the lowest start offset on, left-joined with
    their CommitLog rows (``msg_id``, ``tags``, ``keys``; null when expired), with each filter's
    flags ``cq_<i>`` and ``cl_<i>`` and ``cl_present``. ``extra_cl`` adds Columns computed on the
    CommitLog rows (null for expired entries). ``message_columns=False`` leaves out ``msg_id``,
    ``tags`` and ``keys``, and the CommitLog altogether when no filter is SQL92 and nothing else
    is asked of it (the pull loop needs only the ConsumeQueue then)."""
    topic = plan.topic
    lowest = min(plan.starts[q] for q in queue_ids)
    cl_state = store.commitlog_state()
    # In the read's terms: files are pruned by them, and a term every file's stats prove (all
    # queues from their first offset) costs no row filter.
    cq = store.consumequeue.read(store.spark, where=[("topic", "=", topic), ("queue_offset", ">=", lowest),
                                                     ("queue_id", "in", list(queue_ids))])
    cq = cq.select("topic", "queue_id", "queue_offset", "commitlog_offset", "size", "tags_code", "store_timestamp",
                   (F.col("commitlog_offset") >= F.lit(cl_state.min_commitlog_offset)).alias("cl_present"),
                   *[f.consume_queue_column().alias(f"cq_{i}") for i, f in enumerate(plan.filters)])
    sql = {i: f for i, f in enumerate(plan.filters) if is_sql_filter(f)}
    flags = {f"cl_{i}": F.coalesce(F.col(f"cl_{i}"), F.lit(False)) if i in sql else F.lit(True)
             for i in range(len(plan.filters))}
    if not (message_columns or sql or extra_cl):
        return cq.withColumns(flags) if flags else cq
    cl = (store.commitlog.read(store.spark, where=[("topic", "=", topic)])
          .select("commitlog_offset", *(MESSAGE_COLUMNS if message_columns else ()),
                  *[f.commit_log_column().alias(f"cl_{i}") for i, f in sql.items()],
                  *[c.alias(name) for name, c in (extra_cl or {}).items()]))
    joined = cq.join(cl, "commitlog_offset", "left")
    return joined.withColumns(flags) if flags else joined


def filter_deliveries(store, plan: GroupPlan, entries: DataFrame, max_msg_nums: int,
                      output: str = "entries", carry: Sequence[str] = _CARRY,
                      status_codes: bool = False) -> Optional[DataFrame]:
    """The broker's pulls per (filter, queue) that some consumer makes: one row per delivered
    entry (``filter_index``, the entry, its pull, the ``carry`` columns of ``entries``), or per
    pull with ``output="pulls"``. None when nobody pulls. ``status_codes``: as in
    ``pull_sequence``."""
    sql = any(is_sql_filter(f) for f in plan.filters)
    # Only what the loop reads goes to its Python workers: no topic (one per plan), and for tag
    # filters no commit-log flags (present from min_commitlog_offset on; a tag filter's
    # isMatchedByCommitLog is always true).
    pulled = [i for i in range(len(plan.filters)) if plan.pulled_queues(i)]
    if not pulled:
        return None
    unit = lambda i: [F.lit(i).alias("filter_index"), F.col(f"cq_{i}").alias("cq_match"),  # noqa: E731
                      *([F.col(f"cl_{i}").alias("cl_match")] if sql else [])]
    carry = tuple(carry) if output == "entries" else ()
    base = ("queue_id", "queue_offset", "commitlog_offset", "size") + (("cl_present",) if sql else ()) + carry
    if len(pulled) == 1:   # the usual case: one filter, no rows to repeat
        per_filter = entries.where(F.col("queue_id").isin(plan.pulled_queues(pulled[0]))) \
            .select(*base, *unit(pulled[0]))
    else:
        units = [F.when(F.col("queue_id").isin(plan.pulled_queues(i)), F.struct(*unit(i))) for i in pulled]
        per_filter = (entries.select(*base, F.explode(F.array(*units)).alias("u"))
                      .where(F.col("u").isNotNull()).select(*base, "u.*"))
    key = lambda q: (plan.topic, q)  # noqa: E731
    cl = store.commitlog_state()
    # One filter: its index is a literal put back after the loop, not one more column to send.
    by = ("filter_index",) if len(pulled) > 1 else ()
    out = pull_sequence(per_filter, max_msg_nums=max_msg_nums, max_offset_py=cl.next_commitlog_offset,
                        limits=pull_limits(store.config),
                        start_offsets={key(q): s for q, s in plan.starts.items()},
                        end_offsets={key(q): e for q, e in plan.ends.items()},
                        min_offsets={key(q): lo for q, (lo, hi) in plan.bounds.items()},
                        max_offsets={key(q): hi for q, (lo, hi) in plan.bounds.items()},
                        output=output, by=by, carry=carry, topic=plan.topic, status_codes=status_codes,
                        min_commitlog_offset=None if sql else cl.min_commitlog_offset,
                        groups=[(i, q) if by else (q,) for i in pulled for q in plan.pulled_queues(i)
                                if q in plan.starts])
    return out if by else out.select(F.lit(pulled[0]).alias("filter_index"), "*")


def consumer_deliveries(plan: GroupPlan, deliveries: DataFrame) -> DataFrame:
    """Each delivered entry once per consumer pulling its queue with its filter, with ``kept``:
    the client's exact re-check with the consumer's own subscription."""
    units = [F.when((F.col("filter_index") == F.lit(c.filter_index)) & F.col("queue_id").isin(c.queue_ids),
                    F.struct(F.lit(c.client_id).alias("client_id"),
                             tag_exact_predicate(c.client, F.col("tags")).alias("kept")))
             for c in plan.consumers.values() if c.pulls]
    return (deliveries.select("*", F.explode(F.array(*units)).alias("c")).where(F.col("c").isNotNull())
            .select("c.client_id", "c.kept", *deliveries.columns))


def pulling_queues(plan: GroupPlan) -> List[int]:
    """The queues with entries that some consumer pulls."""
    return sorted({q for c in plan.consumers.values() if c.pulls for q in c.queue_ids} & set(plan.starts))


def kept_tags(plan: GroupPlan) -> Optional[Set[str]]:
    """The tags that some pulling consumer's exact re-check keeps; None when one keeps any."""
    tags: Set[str] = set()
    for c in plan.consumers.values():
        if c.pulls:
            kept = kept_tag_set(c.client)
            if kept is None:
                return None
            tags |= kept
    return tags


# Pulled entries per task of the join of the deliveries with the CommitLog: at 50M entries of 8
# queues on 2 cores (2 GB driver), 10 tasks of 5M spilled 647 MB and took 34.7 s of task time,
# 20 tasks of 2.5M spilled nothing and took 26.9 s.
JOIN_ENTRIES_PER_TASK = 2_500_000


def join_partitions(spark, plan: GroupPlan) -> int:
    """Partitions for joining the deliveries with the CommitLog: a multiple of the cores, so the
    last wave keeps them all busy, with about :data:`JOIN_ENTRIES_PER_TASK` pulled entries each.
    Spark's planner raises a sort-merge join's count to ``spark.sql.shuffle.partitions`` when that
    is larger (Spark 4.3), so this matters where the entries are many."""
    entries = sum(max(0, plan.ends.get(q, 0) - plan.starts[q])
                  for i in range(len(plan.filters)) for q in plan.pulled_queues(i) if q in plan.starts)
    cores = default_parallelism(spark)
    return cores * max(1, math.ceil(entries / (cores * JOIN_ENTRIES_PER_TASK)))


def group_deliveries(store, plan: GroupPlan, max_msg_nums: int = 32, *,
                     kept_only: bool = False) -> Optional[DataFrame]:
    """Every (consumer, entry) the broker delivers under ``plan``, with ``kept``; None when
    nobody pulls a queue with messages. ``kept_only`` may leave out rows that no consumer keeps
    (for callers that keep only ``kept``): fewer CommitLog rows meet the deliveries then."""
    queues = pulling_queues(plan)
    if not queues:
        return None
    if any(is_sql_filter(f) for f in plan.filters):   # the loop's input joins the CommitLog anyway
        deliveries = filter_deliveries(store, plan, flagged_entries(store, plan, queues), max_msg_nums)
        return consumer_deliveries(plan, deliveries)
    # Tags only: the loop pulls over the ConsumeQueue alone, and only what it delivers meets
    # the CommitLog (the loop's shuffle and Arrow transfer carry no strings). A delivered
    # entry's record is present, so its store_timestamp (the CQ's copy) comes from there.
    entries = flagged_entries(store, plan, queues, message_columns=False)
    deliveries = filter_deliveries(store, plan, entries, max_msg_nums, carry=(), status_codes=True)
    cl = store.commitlog.read(store.spark, where=[("topic", "=", plan.topic)]).select("commitlog_offset", *_CARRY)
    tags = kept_tags(plan) if kept_only else None
    if tags is not None:
        # Only records some consumer keeps: the tag test goes to the scan, and half as many
        # CommitLog rows (at the bench's two of four tags) are shuffled and sorted for the join.
        cl = cl.where(F.col("tags").isin(*sorted(tags)))
    # Never broadcast: Spark sizes the loop's output from the ConsumeQueue's compressed files,
    # and broadcast 2.5M deliveries at 5M messages (1.2 s on the driver, every core idle).
    parts = join_partitions(store.spark, plan)
    deliveries = deliveries.repartition(parts, "commitlog_offset").hint("merge").join(
        cl.repartition(parts, "commitlog_offset"), "commitlog_offset", "left" if tags is None else "inner")
    return consumer_deliveries(plan, deliveries.withColumn("pull_status", status_name(F.col("pull_status"))))


def warn_refusals(plan: GroupPlan) -> None:
    for c in plan.consumers.values():
        if c.refusal is not None and c.queues:
            warnings.warn(f"group {plan.group.group!r}: the broker refuses {c.client_id!r}'s pulls of "
                          f"{plan.topic!r} ({c.refusal}: {c.remark}); its queues {c.queue_ids} deliver nothing",
                          stacklevel=3)


def final_offsets(store, plan: GroupPlan, max_msg_nums: int = 32) -> Dict[int, int]:
    """queue id -> where its consumer resumes after the replay (the last pull's
    ``next_begin_offset``), for the queues with messages that some consumer pulls (one job)."""
    queues = pulling_queues(plan)
    if not queues:
        return {}
    pulls = filter_deliveries(store, plan, flagged_entries(store, plan, queues, message_columns=False),
                              max_msg_nums, output="pulls")
    with rows_only(store.spark, LOOP_ROW_BYTES):
        last = pulls.groupBy("filter_index", "queue_id").agg(
            F.max_by("next_begin_offset", "pull_number").alias("next_begin_offset")).collect()
    by_unit = {(r["filter_index"], r["queue_id"]): r["next_begin_offset"] for r in last}
    offsets: Dict[int, int] = {}
    for c in plan.consumers.values():
        for q in c.queue_ids if c.pulls else ():
            if (c.filter_index, q) in by_unit:   # several consumers of one queue (CONFIG): the furthest
                offsets[q] = max(offsets.get(q, 0), by_unit[(c.filter_index, q)])
    return offsets


def replay_group(store, group: Union[ConsumerGroup, str], topic: str, *, start: OffsetSpec = None,
                 end: OffsetSpec = None, max_msg_nums: int = 32, commit: bool = False) -> DataFrame:
    """The messages each consumer of ``group`` consumes from ``topic``, one row per (consumer,
    message): columns :data:`REPLAY_COLUMNS`.

    ``group`` is a ``ConsumerGroup`` or the name of a group stored in ``store``
    (``store.save_group``, or its consumers' heartbeats through a ``Broker``). Each consumer
    pulls the queues the group's strategy gives it (CLUSTERING; BROADCASTING: every queue) from
    ``start`` to ``end`` (``{queue_id: offset}``, or ``"earliest"``, ``"latest"``, a time or
    Kafka-style JSON as :mod:`rocketfilter.offsets_spec` reads them; default each queue's min and
    max offset),
    ``max_msg_nums`` per pull, through the broker's filter with the group's subscription (its
    own with ``post_subscription_when_pull``), and keeps what its own subscription's exact tag
    check keeps. ``pull_number`` counts the consumer's pulls of that queue from 0. A consumer the
    broker refuses (e.g. SUBSCRIPTION_NOT_EXIST when its topic flapped out of the group's table)
    consumes nothing, with a warning; ``diagnose_group`` explains what is lost.

    ``commit=True`` also stores, for each pulled queue, where its consumer resumes (the last
    pull's ``next_begin_offset``) as the group's consumer offset (one Spark job more, run now).
    BROADCASTING consumers keep offsets locally in RocketMQ, so it is refused there.

    >>> replay_group(store, "GID_orders", "OrderEvents").groupBy("client_id").count().show()  # doctest: +SKIP
    """
    check_max_msg_nums(max_msg_nums)
    group = resolve_group(store, group)
    if commit and group.message_model == "BROADCASTING":
        raise ValueError(f"group {group.group!r} is BROADCASTING: its consumers keep their offsets locally "
                         "(LocalFileOffsetStore), not in the broker's consumer offsets; replay without commit")
    plan = plan_group_pulls(store, group, topic, start, end)
    warn_refusals(plan)
    store.check_files(S.COMMITLOG, S.CONSUMEQUEUE)   # a lazy result: catch lost files now
    rows = group_deliveries(store, plan, max_msg_nums, kept_only=True)
    if commit:
        offsets = final_offsets(store, plan, max_msg_nums)
        store.commit_consumer_offsets([(group.group, topic, q, o) for q, o in sorted(offsets.items())])
    if rows is None:
        return store.spark.createDataFrame([], REPLAY_SCHEMA)
    return rows.where(F.col("kept")).select(*REPLAY_COLUMNS)
