"""What happens to every message of a topic under a consumer group, as Columns: who wants it,
who consumes it, and for the messages some consumer wants that the group never consumes, why.

A consumer *wants* a message when its own subscription would deliver it: the tag-code check and
the exact tag check for TAG, the selector TRUE for SQL92 (one that does not compile wants
nothing). A message is *lost* (CLUSTERING) when some consumer wants it and no consumer consumes
it; BROADCASTING, when a consumer wants it and that consumer does not consume it. A lost message
gets the reason of the consumer that came closest to consuming it (its queue's owner), first in
this order:

``dropped_by_client_recheck``
    the broker delivered it to ``client_id``, whose own subscription's exact tag check drops it
    (``PullAPIWrapper.processPullResult``; the offset still advances past it)
``filtered_by_group_subscription``
    the broker filtered ``client_id``'s pulls with the group's subscription table, which rejects it
``filtered_by_own_subscription``
    ``client_id`` pulls with its own subscription (``post_subscription_when_pull``), which rejects it
``skipped_by_broker``
    the filter accepts it but getMessage passed over it (the rest of a commit-log file being
    removed, MESSAGE_WAS_REMOVING)
``pull_refused``
    the broker refuses ``client_id``'s pulls of the topic (SUBSCRIPTION_NOT_EXIST when the topic
    flapped out of the group's table, SUBSCRIPTION_NOT_LATEST, FILTER_DATA_NOT_EXIST, ...)
``queue_not_consumed``
    the strategy gave the queue to ``client_id``, which does not subscribe the topic (so never
    pulls it), or no consumer owns the queue (``client_id`` null)

The pulls are the replay's (:mod:`.replay`); the rest is literal per-consumer expressions
over the ConsumeQueue joined with the CommitLog, in the same Spark job.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketfilter.groups.plan import GroupPlan
from rocketfilter.groups.replay import filter_deliveries, flagged_entries, pulling_queues
from rocketfilter.selector import parse
from rocketfilter.tags import SubscriptionData, is_tag_type
from rocketfilter.tag_columns import tag_code_predicate, tag_exact_predicate

LOST_REASONS = ("dropped_by_client_recheck", "filtered_by_group_subscription", "filtered_by_own_subscription",
                "skipped_by_broker", "pull_refused", "queue_not_consumed")
LOST_SCHEMA = ("topic string, queue_id int, queue_offset long, msg_id string, reason string, client_id string, "
               "wanted_by array<string>, tags string, commitlog_offset long")
_RANK = {reason: i + 1 for i, reason in enumerate(LOST_REASONS)}   # 0: consumed
_OWNER_TYPE = "array<struct<rank:int,reason:string,client_id:string,wants:boolean>>"


def wants_column(sub: SubscriptionData) -> Column:
    """Whether ``sub`` itself would deliver a message, over CommitLog columns ``tags``,
    ``tags_code`` and ``properties``: never null."""
    if is_tag_type(sub.expression_type):
        return tag_code_predicate(sub, F.col("tags_code")) & tag_exact_predicate(sub, F.col("tags"))
    try:
        return F.coalesce(parse(sub.sub_string).to_column(F.col("properties")), F.lit(False))
    except ValueError:
        return F.lit(False)


def _outcome(plan: GroupPlan) -> Column:
    """An array of one struct per consumer owning the row's queue: ``rank`` (0 consumed, else the
    reason's place in :data:`LOST_REASONS`, from 1), ``reason`` (null when consumed),
    ``client_id`` and ``wants``."""
    units = []
    for c in plan.consumers.values():
        queues = c.queues or c.orphaned
        if not queues:
            continue
        if c.pulls:
            ok = F.col(f"cq_{c.filter_index}") & F.col(f"cl_{c.filter_index}")
            delivered = F.array_contains(F.col("delivered_to"), F.lit(c.filter_index))
            cases = [(delivered & tag_exact_predicate(c.client, F.col("tags")), None),
                     (delivered, "dropped_by_client_recheck"),
                     (~ok, "filtered_by_group_subscription" if c.via_group_table else "filtered_by_own_subscription"),
                     (F.lit(True), "skipped_by_broker")]
        else:
            cases = [(F.lit(True), "pull_refused" if c.subscribes else "queue_not_consumed")]
        (first, first_why), rest = cases[0], cases[1:]
        reason = F.when(first, F.lit(first_why).cast("string"))
        rank = F.when(first, F.lit(_RANK.get(first_why, 0)))
        for condition, why in rest:
            reason = reason.when(condition, F.lit(why).cast("string"))
            rank = rank.when(condition, F.lit(_RANK.get(why, 0)))
        units.append(F.when(F.col("queue_id").isin([q.queue_id for q in queues]),
                            F.struct(rank.alias("rank"), reason.alias("reason"), F.lit(c.client_id).alias("client_id"),
                                     F.array_contains(F.col("wanted_by"), F.lit(c.client_id)).alias("wants"))))
    if not units:
        return F.array().cast(_OWNER_TYPE)
    return _non_null(units, _OWNER_TYPE)


def _non_null(items: List[Column], array_type: str) -> Column:
    """The array of ``items`` that are not null, in order (they are distinct). Not ``filter``
    with a lambda: a higher-order function runs its whole argument interpreted, and these
    arguments are a CASE per consumer (measured at 1M messages, 8 consumers: the owners took
    2.6 s more through ``filter``)."""
    return F.array_except(F.array(*items), F.array(F.lit(None)).cast(array_type))


def _nobody() -> Column:
    return F.struct(F.lit(_RANK["queue_not_consumed"]).alias("rank"), F.lit("queue_not_consumed").alias("reason"),
                    F.lit(None).cast("string").alias("client_id"), F.lit(False).alias("wants"))


def _per_queue(offsets: Dict[int, int]) -> Column:
    """The row's queue's value in ``offsets`` as a Column (a literal map)."""
    return F.element_at(F.create_map(*[x for q, o in offsets.items() for x in (F.lit(q), F.lit(o))]),
                        F.col("queue_id"))


def _delivered_to(store, plan: GroupPlan, max_msg_nums: int) -> Optional[DataFrame]:
    """``queue_id, queue_offset, delivered_to``: the filters whose pulls delivered each entry."""
    queues = pulling_queues(plan)
    if not queues:
        return None
    entries = flagged_entries(store, plan, queues, message_columns=False)
    deliveries = filter_deliveries(store, plan, entries, max_msg_nums, carry=())
    pulled = [set(plan.pulled_queues(i)) for i in range(len(plan.filters))]
    if all(not (a & b) for i, a in enumerate(pulled) for b in pulled[i + 1:]):
        # One filter per queue: an entry is delivered at most once, so no aggregation (at 50M
        # messages collect_set's sort-based aggregation of 25M keys was a third of diagnose_group).
        return deliveries.select("queue_id", "queue_offset", F.array("filter_index").alias("delivered_to"))
    return deliveries.groupBy("queue_id", "queue_offset").agg(F.collect_set("filter_index").alias("delivered_to"))


def message_outcomes(store, plan: GroupPlan, max_msg_nums: int = 32) -> Optional[DataFrame]:
    """One row per message of the topic in the plan's range: where it is, ``wanted_by`` (the
    consumers whose own subscription wants it) and ``owners`` (:func:`_outcome`); None when the
    topic has no messages."""
    queues = sorted(plan.starts)
    if not queues:
        return None
    subscribers = [c for c in plan.consumers.values() if c.subscribes]
    sql = any(not is_tag_type(c.client.expression_type) for c in subscribers)
    entries = flagged_entries(store, plan, queues, extra_cl={"properties": F.col("properties")} if sql else None)
    entries = entries.where(F.col("msg_id").isNotNull() & (F.col("queue_offset") >= _per_queue(plan.starts))
                            & (F.col("queue_offset") < _per_queue(plan.ends)))
    wanted = [F.when(wants_column(c.client), F.lit(c.client_id)) for c in subscribers]
    entries = entries.withColumn("wanted_by", _non_null(wanted, "array<string>") if wanted
                                 else F.array().cast("array<string>"))
    delivered = _delivered_to(store, plan, max_msg_nums)
    no_filter = F.array().cast("array<int>")
    if delivered is None:
        entries = entries.withColumn("delivered_to", no_filter)
    else:
        # Never broadcast: Spark sizes the pull loop's output from the ConsumeQueue's compressed
        # files and broadcast 5M deliveries (736 MiB) at 10M messages, out of a 2 GiB driver.
        entries = (entries.join(delivered.hint("merge"), ["queue_id", "queue_offset"], "left")
                   .withColumn("delivered_to", F.coalesce("delivered_to", no_filter)))
    return entries.select("topic", "queue_id", "queue_offset", "msg_id", "tags", "commitlog_offset", "wanted_by",
                          _outcome(plan).alias("owners"))


def _lost(broadcasting: bool) -> Column:
    """The row's lost events as ``array<struct<reason, client_id>>`` (see the module docstring)."""
    if broadcasting:
        return F.transform(F.filter("owners", lambda o: (o["rank"] > 0) & o["wants"]),
                           lambda o: F.struct(o["reason"].alias("reason"), o["client_id"].alias("client_id")))
    best = F.array_min(F.when(F.size("owners") > 0, F.col("owners")).otherwise(F.array(_nobody())))
    return F.when((best["rank"] > 0) & (F.size("wanted_by") > 0),
                  F.array(F.struct(best["reason"].alias("reason"), best["client_id"].alias("client_id")))
                  ).otherwise(F.array().cast("array<struct<reason:string,client_id:string>>"))


def lost_messages(outcomes: DataFrame, broadcasting: bool) -> DataFrame:
    """The lost messages (:data:`LOST_SCHEMA`) of :func:`message_outcomes`' rows."""
    return (outcomes.select("*", F.explode(_lost(broadcasting)).alias("l"))
            .select("topic", "queue_id", "queue_offset", "msg_id", F.col("l.reason").alias("reason"),
                    F.col("l.client_id").alias("client_id"), "wanted_by", "tags", "commitlog_offset"))


def outcome_counts(outcomes: DataFrame, broadcasting: bool) -> DataFrame:
    """One pass over :func:`message_outcomes`' rows: per (``topic``, ``kind``, ``reason``,
    ``client_id``) a count ``n`` and the first message's ``example_position`` (:func:`position_of`);
    ``kind`` is ``message`` (every message in range), ``consumed`` or ``lost``."""
    event = "struct<kind:string,reason:string,client_id:string>"
    events = F.concat(
        F.array(F.struct(F.lit("message").alias("kind"), F.lit(None).cast("string").alias("reason"),
                         F.lit(None).cast("string").alias("client_id"))).cast(f"array<{event}>"),
        F.transform(F.filter("owners", lambda o: o["rank"] == 0),
                    lambda o: F.struct(F.lit("consumed").alias("kind"), F.lit(None).cast("string").alias("reason"),
                                       o["client_id"].alias("client_id"))),
        F.transform(_lost(broadcasting), lambda x: F.struct(F.lit("lost").alias("kind"), x["reason"].alias("reason"),
                                                            x["client_id"].alias("client_id"))))
    return (outcomes.select("topic", "queue_id", "queue_offset", "msg_id", F.explode(events).alias("e"))
            .groupBy("topic", F.col("e.kind").alias("kind"), F.col("e.reason").alias("reason"),
                     F.col("e.client_id").alias("client_id"))
            .agg(F.count(F.lit(1)).alias("n"), F.min(_position()).alias("example_position")))


# The first message of a count as one long, (queue_id, queue_offset): a min over it is a hash
# aggregate, where a min over a struct made Spark sort every event (2.3 GB spilled at 50M).
POSITION_FACTOR = 1 << 44      # queue ids below 2**19, offsets below 2**44


def _position() -> Column:
    return F.col("queue_id").cast("long") * F.lit(POSITION_FACTOR) + F.col("queue_offset")


def position_of(value: int) -> tuple:
    """(queue_id, queue_offset) of an ``example_position``."""
    return divmod(value, POSITION_FACTOR)
