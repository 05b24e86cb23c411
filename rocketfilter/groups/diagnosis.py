"""``diagnose_group``: whether a consumer group's consumers agree, who owns which queues, and every
message some consumer wants that the group never consumes, with the reason (:mod:`.outcomes`).

RocketMQ's admin tool says only that "subscriptions differ"; this names the consumers, the
queues and the lost messages. Seed 003: A subscribes ``tagA``, then B ``tagB``; the broker keeps
B's (the later subVersion) for the whole group, so A's queues deliver only tagB messages, which A
drops, and no tagA message reaches anyone.

>>> d = diagnose_group(store, group, "SUBSCRIBE_TEST")     # doctest: +SKIP
>>> d.consistent, d.lost.groupBy("reason").count().collect()   # doctest: +SKIP
>>> print(d)                                                 # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce
from typing import Dict, List, Optional, Tuple, Union

from pyspark.sql import DataFrame

from rocketfilter.arrow_batches import rows_only
from rocketfilter.checks import check_max_msg_nums
from rocketfilter.consumer.group import ConsumerGroup
from rocketfilter.consumer.message_queue import MessageQueue
from rocketfilter.groups.message_locate import at_position
from rocketfilter.groups.outcomes import (LOST_REASONS, LOST_SCHEMA, lost_messages, message_outcomes, outcome_counts,
                                          position_of)
from rocketfilter.groups.plan import GroupPlan, plan_group_pulls, resolve_group
from rocketfilter.groups.replay import REPLAY_COLUMNS, REPLAY_SCHEMA, group_deliveries
from rocketfilter.pull.batch import LOOP_ROW_BYTES
from rocketfilter.store import schema as S
from rocketfilter.tags import TAG, SubscriptionData, is_tag_type

Key = Tuple[str, Optional[str], Optional[str]]   # (topic, reason, client_id)


def _spec(sub: Optional[SubscriptionData]) -> Optional[tuple]:
    return None if sub is None else (TAG if is_tag_type(sub.expression_type) else sub.expression_type, sub.sub_string)


@dataclass
class GroupDiagnosis:
    """What :func:`diagnose_group` found. The DataFrames are lazy; :meth:`counts` (and ``str``)
    run one Spark job, once.

    * ``consistent``: every consumer lists every diagnosed topic with the same expression, and
      the group's table holds it;
    * ``effective_subscriptions``: topic -> the group's subscription (a topic missing has
      flapped out of the table);
    * ``assignments``: client id -> the queues it takes, over the diagnosed topics;
    * ``lost``: one row per lost message (BROADCASTING: per consumer that lost it), columns
      ``topic, queue_id, queue_offset, msg_id, reason, client_id, wanted_by, tags, commitlog_offset``;
    * ``flapping_topics``: topic -> the consumers whose heartbeats drop it from the table (only
      some consumers list it);
    * ``consumers_without_queues``: topic -> subscribers the strategy gives no queue;
    * ``unconsumed_queues``: topic -> queues nobody pulls (owner not subscribing, refused, none);
    * ``refusals``: topic -> client id -> why the broker refuses its pulls;
    * ``missing_topics``: subscribed topics the store does not have (not diagnosed).
    """

    group: ConsumerGroup
    topics: List[str]
    consistent: bool
    effective_subscriptions: Dict[str, SubscriptionData]
    assignments: Dict[str, List[MessageQueue]]
    lost: DataFrame
    flapping_topics: Dict[str, List[str]] = field(default_factory=dict)
    consumers_without_queues: Dict[str, List[str]] = field(default_factory=dict)
    unconsumed_queues: Dict[str, List[MessageQueue]] = field(default_factory=dict)
    refusals: Dict[str, Dict[str, str]] = field(default_factory=dict)
    missing_topics: List[str] = field(default_factory=list)
    plans: Dict[str, GroupPlan] = field(default_factory=dict, repr=False)
    max_msg_nums: int = 32
    _store: object = field(default=None, repr=False)
    _outcomes: Dict[str, DataFrame] = field(default_factory=dict, repr=False)
    _counts: Optional[Dict[Key, Dict[str, tuple]]] = field(default=None, repr=False)

    @property
    def consumed(self) -> DataFrame:
        """What each consumer consumes, as ``replay_group`` gives it, over the diagnosed topics."""
        frames = []
        for plan in self.plans.values():
            rows = group_deliveries(self._store, plan, self.max_msg_nums, kept_only=True)
            if rows is not None:
                frames.append(rows.where("kept").select(*REPLAY_COLUMNS))
        if not frames:
            return self._store.spark.createDataFrame([], REPLAY_SCHEMA)
        return reduce(DataFrame.unionByName, frames)

    def counts(self) -> Dict[str, Dict[Key, tuple]]:
        """``{"message": ..., "consumed": ..., "lost": ...}``, each ``(topic, reason, client_id) ->
        (count, (queue_id, queue_offset, msg_id) of the first such message)``; one Spark job."""
        if self._counts is None:
            broadcasting = self.group.message_model == "BROADCASTING"
            frames = [outcome_counts(o, broadcasting) for o in self._outcomes.values()]
            self._counts = {"message": {}, "consumed": {}, "lost": {}}
            if frames:
                looked_up: Dict[tuple, Optional[tuple]] = {}   # counts share first messages
                with rows_only(self._store.spark, LOOP_ROW_BYTES):
                    counted = reduce(DataFrame.unionByName, frames).collect()
                for r in counted:
                    where = (r["topic"], r["example_position"])
                    if where not in looked_up:
                        looked_up[where] = self._example(*where)
                    example = looked_up[where]
                    self._counts[r["kind"]][(r["topic"], r["reason"], r["client_id"])] = (r["n"], example)
        return self._counts

    def _example(self, topic: str, position: Optional[int]) -> Optional[tuple]:
        """(queue_id, queue_offset, msg_id) of a count's first message: two point reads."""
        if position is None:
            return None
        queue_id, queue_offset = position_of(position)
        return (queue_id, queue_offset, at_position(self._store, topic, queue_id, queue_offset, "example").msg_id)

    def lost_counts(self) -> Dict[str, int]:
        """reason -> how many messages are lost for it, in :data:`LOST_REASONS` order."""
        out = {reason: 0 for reason in LOST_REASONS}
        for (_, reason, _), (n, _) in self.counts()["lost"].items():
            out[reason] += n
        return {reason: n for reason, n in out.items() if n}

    def consumed_counts(self) -> Dict[str, int]:
        """client id -> how many messages it consumes (every consumer, 0 included)."""
        out = {cid: 0 for cid in self.group.consumer_ids()}
        for (_, _, cid), (n, _) in self.counts()["consumed"].items():
            out[cid] = out.get(cid, 0) + n
        return out

    def __str__(self) -> str:
        from rocketfilter.groups.report import render

        return render(self)


def _consistent(group: ConsumerGroup, topics: List[str]) -> bool:
    table = group.effective_subscriptions
    for topic in topics:
        specs = {_spec(group.subscription_of(cid, topic)) for cid in group.consumer_ids()}
        if len(specs) != 1 or None in specs or _spec(table.get(topic)) not in specs:
            return False
    return True


def diagnose_group(store, group: Union[ConsumerGroup, str], topic: Optional[str] = None, *,
                   max_msg_nums: int = 32) -> GroupDiagnosis:
    """Diagnose ``group`` (a ``ConsumerGroup`` or the name of one stored in ``store``) on ``topic``,
    or on every topic its consumers subscribe (``topic=None``), over each queue's whole range.

    The pulls are those of :func:`rocketfilter.groups.replay.replay_group`, ``max_msg_nums``
    per pull. ``str(diagnosis)`` is the report a person reads.
    """
    check_max_msg_nums(max_msg_nums)
    group = resolve_group(store, group)
    live = group.consumer_ids()
    if topic is not None:
        topics = [topic]
    else:
        topics = sorted({t for cid in live for t in group.consumer(cid).subscriptions})
    plans: Dict[str, GroupPlan] = {}
    missing = []
    for t in topics:
        try:
            plans[t] = plan_group_pulls(store, group, t)
        except ValueError:
            if topic is not None:
                raise
            missing.append(t)
    if plans:
        store.check_files(S.COMMITLOG, S.CONSUMEQUEUE)
    outcomes = {t: o for t, p in plans.items() if (o := message_outcomes(store, p, max_msg_nums)) is not None}
    broadcasting = group.message_model == "BROADCASTING"
    lost = [lost_messages(o, broadcasting) for o in outcomes.values()]
    table = group.effective_subscriptions
    assignments: Dict[str, List[MessageQueue]] = {cid: [] for cid in sorted(live)}
    diagnosis = GroupDiagnosis(
        group=group, topics=list(plans), consistent=_consistent(group, list(plans)),
        effective_subscriptions={t: table[t] for t in plans if t in table}, assignments=assignments,
        lost=reduce(DataFrame.unionByName, lost) if lost else store.spark.createDataFrame([], LOST_SCHEMA),
        missing_topics=missing, plans=plans, max_msg_nums=max_msg_nums, _store=store, _outcomes=outcomes)
    for t, plan in plans.items():
        listing = [cid for cid in live if t in group.consumer(cid).subscriptions]
        if listing and len(listing) < len(live):
            diagnosis.flapping_topics[t] = [cid for cid in live if cid not in listing]
        for c in plan.consumers.values():
            assignments[c.client_id] += list(c.queues)
            if c.refusal is not None:
                diagnosis.refusals.setdefault(t, {})[c.client_id] = f"{c.refusal}: {c.remark}"
        idle = [c.client_id for c in plan.consumers.values() if c.subscribes and not c.queues]
        if idle:
            diagnosis.consumers_without_queues[t] = idle
        pulled = {q for c in plan.consumers.values() if c.pulls for q in c.queues}
        unconsumed = [q for q in plan.queues if q not in pulled]
        if unconsumed:
            diagnosis.unconsumed_queues[t] = unconsumed
    return diagnosis
