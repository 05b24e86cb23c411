"""A consumer group's pulls of one topic, planned on the driver before any Spark work: who takes
which queue, which subscription the broker filters each consumer's pulls with (or why it refuses
them), the few distinct broker filters, and the offset range of each queue.

The decisions follow the broker (:class:`rocketfilter.pull.broker.Broker`) and the client:

* queues: the topic's readable queues on this store's broker, allocated by the group's strategy
  over the sorted queues and client ids (``ConsumerGroup.allocate``, as ``RebalanceImpl``);
* subscription: the group's table, or the consumer's own with ``post_subscription_when_pull``
  (``ConsumerGroup.subscription_for_pull``), refused with SUBSCRIPTION_NOT_EXIST or
  SUBSCRIPTION_NOT_LATEST as the broker refuses it;
* SQL92: the broker needs ``enablePropertyFilter`` (else SYSTEM_ERROR) and, on the group's
  table, filter data that compiled (else FILTER_DATA_NOT_EXIST); the store's registered filter
  data is used when it holds this selector (its bloom bits then prune), else the selector is
  compiled here. A post-subscription selector that does not compile matches everything, a
  quirk of RocketMQ's broker (SEMANTICS §6).

The filter data is the group table's selector as it is now; a broker whose registration lags
behind its table (a dropped and re-added topic with an older selector) is not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Dict, List, Mapping, Optional, Tuple, Union

from rocketfilter.checks import check_offset
from rocketfilter.consumer.group import ConsumerGroup
from rocketfilter.consumer.message_queue import MessageQueue
from rocketfilter.pull.filter import ExpressionForRetryMessageFilter, ExpressionMessageFilter
from rocketfilter.tags import SubscriptionData, is_tag_type

# {queue_id: offset}, or a spec as offsets_spec reads it: "earliest", "latest", a time, JSON.
OffsetSpec = Union[None, Mapping[int, int], str, int, datetime]


def _spec(store, topic: str, given, end: bool, name: str):
    """``given`` as ``{queue_id: offset}``: a dict of queue ids as it is, other spellings resolved
    by :mod:`rocketfilter.offsets_spec`; anything else is left for the checks below."""
    from rocketfilter.offsets_spec import OffsetSpec as Parsed
    from rocketfilter.offsets_spec import resolve_offsets

    if isinstance(given, Mapping) and all(isinstance(k, int) and not isinstance(k, bool) for k in given):
        return given
    if isinstance(given, (str, int, datetime, Parsed, Mapping)) and not isinstance(given, bool):
        return resolve_offsets(store, topic, given, end=end, what=name)
    return given


def queue_offsets(store, topic: str, start: OffsetSpec = None, end: OffsetSpec = None
                  ) -> Tuple[Dict[int, int], Dict[int, int]]:
    """``(starts, ends)``: the offset range ``[start, end)`` of each queue of ``topic`` that has
    entries. ``start``/``end`` map queue ids to offsets; a queue they leave out starts at its min
    offset and ends at its max (one past its last entry). They may also be given as Spark users
    give the Kafka source's offsets: ``"earliest"``, ``"latest"``, a time (epoch ms, ISO-8601,
    datetime: the first offset stored at or after it) or ``{"TopicA": {"0": 23, "1": -2}}``
    (:mod:`rocketfilter.offsets_spec`). ValueError names a bad queue or offset.
    """
    queues = store.consumequeue_state().queues.get(topic, {})
    config = store.topic_config(topic)
    known = set(queues) | set(range(config.read_queue_nums if config is not None else 0))
    chosen = []
    for name, given, default in (("start", start, 0), ("end", end, 1)):
        given = None if given is None else _spec(store, topic, given, name == "end", name)
        if given is not None and not isinstance(given, Mapping):
            raise ValueError(f"{name} must map queue ids to offsets, e.g. {{0: 100}}; got {given!r}")
        for q, offset in (given or {}).items():
            if q not in known:
                raise ValueError(f"{name}: {q!r} is not a queue of topic {topic!r} "
                                 f"(queues {sorted(known)})")
            check_offset(offset, f"{name} offset of queue {q}")
        chosen.append({q: (given or {}).get(q, bounds[default]) for q, bounds in queues.items()})
    starts, ends = chosen
    for q in starts:
        if starts[q] > ends[q]:
            raise ValueError(f"queue {q} of {topic!r}: start {starts[q]} is after end {ends[q]}")
    return starts, ends


@dataclass(frozen=True)
class ConsumerPulls:
    """One consumer's pulls of the topic: its queues and what the broker does with its pulls.

    ``filter_index`` points into :attr:`GroupPlan.filters` when it pulls; ``refusal`` is the
    response code when the broker refuses every pull (``remark`` says why). A consumer that does
    not subscribe the topic (``subscribes`` false) takes no queue, but in CLUSTERING the strategy
    counted it: ``orphaned`` is the share nobody consumes because of it.
    """

    client_id: str
    queues: Tuple[MessageQueue, ...]
    subscribes: bool
    client: Optional[SubscriptionData] = None
    broker: Optional[SubscriptionData] = None
    via_group_table: bool = True
    refusal: Optional[str] = None
    remark: Optional[str] = None
    filter_index: Optional[int] = None
    orphaned: Tuple[MessageQueue, ...] = ()

    @property
    def queue_ids(self) -> List[int]:
        return [q.queue_id for q in self.queues]

    @property
    def pulls(self) -> bool:
        """Whether it pulls anything: queues, and the broker answers."""
        return self.filter_index is not None and bool(self.queues)


@dataclass
class GroupPlan:
    """Everything the replay and the diagnosis decide before reading messages."""

    group: ConsumerGroup
    topic: str
    queues: List[MessageQueue]
    consumers: Dict[str, ConsumerPulls]
    filters: List[ExpressionMessageFilter] = field(default_factory=list)
    starts: Dict[int, int] = field(default_factory=dict)
    ends: Dict[int, int] = field(default_factory=dict)
    bounds: Dict[int, Tuple[int, int]] = field(default_factory=dict)   # queue -> (min, max offset)

    def pulled_queues(self, filter_index: int) -> List[int]:
        """The queues some consumer pulls with filter ``filter_index``."""
        return sorted({q for c in self.consumers.values() if c.pulls and c.filter_index == filter_index
                       for q in c.queue_ids})


def resolve_group(store, group: Union[ConsumerGroup, str]) -> ConsumerGroup:
    """``group`` itself, or the group of that name stored in ``store``."""
    if isinstance(group, ConsumerGroup):
        return group
    if isinstance(group, str):
        return store.load_group(group)
    raise ValueError(f"group must be a ConsumerGroup or the name of a group stored in the store, "
                     f"got {type(group).__name__}")


def _message_filter(store, group: str, sub: SubscriptionData, via_group_table: bool):
    """The broker's filter for ``sub``, or ``(code, remark)`` when it refuses the pulls."""
    manager = store.filter_manager
    filter_cls = (ExpressionForRetryMessageFilter if store.broker_config.filter_support_retry
                  else ExpressionMessageFilter)
    if is_tag_type(sub.expression_type):
        return filter_cls(sub, None, manager)
    data = manager.build(sub.topic, group, sub.sub_string, sub.expression_type, sub.sub_version)
    if via_group_table:
        registered = manager.get(sub.topic, group)
        if (registered is not None and registered.compiled is not None and not registered.is_dead()
                and (registered.expression, registered.expression_type) == (sub.sub_string, sub.expression_type)):
            data = registered
        elif data is None:
            return ("FILTER_DATA_NOT_EXIST",
                    "The broker's consumer filter data is not exist!Your expression may be wrong!")
    if not store.broker_config.enable_property_filter:
        return ("SYSTEM_ERROR", f"The broker does not support consumer to filter message by {sub.expression_type}")
    return filter_cls(sub, data, manager)


def topic_queues(store, topic: str) -> List[MessageQueue]:
    """The topic's readable queues on the store's broker, sorted; ValueError for an unknown topic."""
    config = store.topic_config(topic)
    queues = store.consumequeue_state().queues.get(topic, {})
    if config is None and not queues:
        known = ", ".join(sorted(store.topics())) or "none"
        raise ValueError(f"topic {topic!r} does not exist in store {store.uri} (topics: {known})")
    ids = range(config.read_queue_nums) if config is not None else sorted(queues)
    return [MessageQueue(topic, store.broker_config.broker_name, q) for q in ids]


def plan_group_pulls(store, group: ConsumerGroup, topic: str, start: OffsetSpec = None,
                     end: OffsetSpec = None) -> GroupPlan:
    """The plan of ``group``'s pulls of ``topic`` on ``store`` (see the module docstring)."""
    mq_all = topic_queues(store, topic)
    starts, ends = queue_offsets(store, topic, start, end)
    state = store.consumequeue_state().queues.get(topic, {})
    plan = GroupPlan(group, topic, mq_all, {}, starts=starts, ends=ends,
                     bounds={q: (lo, hi) for q, (lo, hi) in state.items()})
    keys: Dict[tuple, int] = {}
    allocation = group.allocate(topic, mq_all)
    cid_all = list(allocation)   # sorted, as RebalanceImpl sorts them
    for cid, queues in allocation.items():
        own = group.subscription_of(cid, topic)
        if own is None:
            share = () if group.message_model == "BROADCASTING" or not mq_all else tuple(
                group.allocate_strategy.allocate(group.group, cid, sorted(mq_all), cid_all))
            plan.consumers[cid] = ConsumerPulls(cid, (), subscribes=False, orphaned=share)
            continue
        pull = group.subscription_for_pull(cid, topic)
        via_table = not group.consumer(cid).post_subscription_when_pull
        if pull.refusal is not None:
            remark = ("the consumer's subscription not exist" if pull.refusal == "SUBSCRIPTION_NOT_EXIST"
                      else "the consumer's subscription not latest")
            plan.consumers[cid] = ConsumerPulls(cid, tuple(queues), True, own, None, via_table, pull.refusal, remark)
            continue
        key = (via_table, pull.broker.expression_type, pull.broker.sub_string)
        if key not in keys:   # consumers pulling with the same subscription share one filter
            made = _message_filter(store, group.group, pull.broker, via_table)
            if not isinstance(made, tuple):
                plan.filters.append(made)
                made = len(plan.filters) - 1
            keys[key] = made
        found = keys[key]
        refusal = found if isinstance(found, tuple) else (None, None)
        plan.consumers[cid] = ConsumerPulls(cid, tuple(queues), True, own, pull.broker, via_table, *refusal,
                                            filter_index=None if isinstance(found, tuple) else found)
    return plan
