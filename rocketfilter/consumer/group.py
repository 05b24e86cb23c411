"""A consumer group as data: its consumers, their subscriptions, the broker's view after their
heartbeats, and who takes which queue.

Seed 003: consumers A and B of one group subscribe the same topic with different tags. Every
heartbeat carries the consumer's subscriptions with their subVersion (the time they were made);
the broker keeps one subscription per topic for the whole group, the one with the higher
subVersion, so B's later ``tagB`` is what the broker filters everyone's pulls with. A's queues
then deliver only tagB messages, which A's own exact tag check drops.

>>> from rocketfilter.consumer.message_queue import MessageQueue
>>> group = ConsumerGroup("GID_seed003")
>>> _ = group.add_consumer("A", {"SUBSCRIBE_TEST": "tagA"})
>>> _ = group.add_consumer("B", {"SUBSCRIBE_TEST": "tagB"})
>>> group.effective_subscriptions["SUBSCRIBE_TEST"].sub_string
'tagB'
>>> mqs = [MessageQueue("SUBSCRIBE_TEST", "broker-a", i) for i in range(4)]
>>> {cid: [q.queue_id for q in queues] for cid, queues in group.allocate("SUBSCRIBE_TEST", mqs).items()}
{'A': [0, 1], 'B': [2, 3]}
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from rocketfilter.consumer.allocate import AbstractAllocateMessageQueueStrategy, AllocateMessageQueueAveragely
from rocketfilter.consumer.group_file import group_to_dict, parse_group_dict, read_group_file
from rocketfilter.consumer.group_info import (CONSUME_FROM_WHERE, MESSAGE_MODELS, ConsumerGroupInfo, check_choice,
                                              next_sub_version)
from rocketfilter.consumer.message_queue import MessageQueue
from rocketfilter.consumer.strategies import StrategyConfig, allocate_strategy_from_config
from rocketfilter.consumer.subscriptions import SubscriptionSpec, build_subscription_spec
from rocketfilter.javalang import LONG_MAX, LONG_MIN, string_sort_key
from rocketfilter.naming import validate_group
from rocketfilter.tags import SubscriptionData

SUBSCRIPTION_NOT_EXIST = "SUBSCRIPTION_NOT_EXIST"
SUBSCRIPTION_NOT_LATEST = "SUBSCRIPTION_NOT_LATEST"


@dataclass
class ConsumerData:
    """One consumer as its heartbeat describes it (RocketMQ's ``ConsumerData``, plus the client
    id): its own subscription per topic, all made at ``sub_version``, and whether its pulls send
    the subscription along (``postSubscriptionWhenPull``)."""

    client_id: str
    subscriptions: Dict[str, SubscriptionData]
    sub_version: int
    post_subscription_when_pull: bool = False


@dataclass(frozen=True)
class PullSubscription:
    """What a pull of one consumer on one topic is filtered with.

    ``broker`` is the subscription the broker filters with (None when it refuses the pull, and
    ``refusal`` names the response code); ``client`` is the consumer's own, which its exact tag
    re-check (``PullAPIWrapper.processPullResult``) always uses.
    """

    broker: Optional[SubscriptionData]
    client: SubscriptionData
    refusal: Optional[str] = None


@dataclass(frozen=True)
class HeartbeatStep:
    """One applied heartbeat: whose, whether it changed the group, and the group's table after it."""

    client_id: str
    changed: bool
    subscriptions: Dict[str, SubscriptionData] = field(repr=False)

    @property
    def topics(self) -> Dict[str, str]:
        """topic -> expression of the table after this heartbeat, for printing."""
        return {topic: sub.sub_string for topic, sub in self.subscriptions.items()}


class ConsumerGroup:
    """A consumer group: its settings, its consumers and the order of their heartbeats.

    Heartbeats are applied in the order consumers were added; :meth:`heartbeat` appends one more
    (a consumer's periodic heartbeat), which is how the table flaps when consumers disagree.
    ``message_model`` and ``consume_from_where`` are RocketMQ's enum names;
    ``allocate_strategy`` is a strategy or its config (``"AVG"``, ``{"name": ..., ...}``).
    """

    def __init__(self, group: str, message_model: str = "CLUSTERING",
                 allocate_strategy: Union[AbstractAllocateMessageQueueStrategy, StrategyConfig] =
                 AllocateMessageQueueAveragely(),
                 consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"):
        self.group = validate_group(group)
        self.message_model = check_choice(f"group {group!r}", "message_model", message_model, MESSAGE_MODELS)
        self.consume_from_where = check_choice(f"group {group!r}", "consume_from_where", consume_from_where,
                                               CONSUME_FROM_WHERE)
        try:
            self.allocate_strategy = allocate_strategy_from_config(allocate_strategy)
        except ValueError as error:
            raise ValueError(f"group {group!r}: allocate_strategy: {error}") from None
        self.consumers: Dict[str, ConsumerData] = {}
        self._heartbeats: List[str] = []
        self._departed: List[str] = []

    def __repr__(self) -> str:
        return (f"ConsumerGroup({self.group!r}, message_model={self.message_model!r}, "
                f"allocate_strategy={self.allocate_strategy!r}, consumers={self.consumer_ids()})")

    # -- consumers ---------------------------------------------------------------------------
    def add_consumer(self, client_id: str, subscriptions: Mapping[str, SubscriptionSpec], *,
                     sub_version: Optional[int] = None, post_subscription_when_pull: bool = False) -> ConsumerData:
        """Add a consumer and apply its first heartbeat.

        ``subscriptions`` maps each topic to a TAG expression (``"tagA || tagB"``, ``"*"``), or to
        ``(expression, "TAG"|"SQL92")``. ``sub_version`` defaults to now in ms, strictly
        increasing within the process, so of two consumers added one after the other the later
        always has the higher version (Java's ``currentTimeMillis`` could tie within one ms, and
        a tie keeps the older subscription).
        """
        where = f"group {self.group!r}, consumer {client_id!r}"
        if not isinstance(client_id, str) or not client_id:
            raise ValueError(f"group {self.group!r}: a consumer's client id must be a non-empty string, "
                             f"got {client_id!r}")
        if client_id in self.consumers:
            raise ValueError(f"{where}: already in the group (call heartbeat() to send another heartbeat)")
        if not isinstance(subscriptions, Mapping):
            raise ValueError(f"{where}: subscriptions must map topics to expressions, got {subscriptions!r}")
        if sub_version is None:
            sub_version = next_sub_version()
        elif (isinstance(sub_version, bool) or not isinstance(sub_version, int)
              or not LONG_MIN <= sub_version <= LONG_MAX):
            raise ValueError(f"{where}: sub_version must be a Java long, got {sub_version!r}")
        subs = {}
        for topic, spec in subscriptions.items():
            try:
                subs[topic] = build_subscription_spec(topic, spec, sub_version)
            except ValueError as error:
                raise ValueError(f"{where}, topic {topic!r}: {error}") from None
        consumer = ConsumerData(client_id, subs, sub_version, bool(post_subscription_when_pull))
        self.consumers[client_id] = consumer
        self._heartbeats.append(client_id)
        return consumer

    def consumer(self, client_id: str) -> ConsumerData:
        try:
            return self.consumers[client_id]
        except KeyError:
            raise ValueError(f"group {self.group!r} has no consumer {client_id!r} "
                             f"(it has {self.consumer_ids()})") from None

    def consumer_ids(self) -> List[str]:
        """The client ids of the consumers in the group (not those that left), in the order they
        were added."""
        return [cid for cid in self.consumers if cid not in self._departed]

    def heartbeat(self, client_id: str) -> None:
        """Apply one more heartbeat of ``client_id`` (same subscriptions, same subVersion); a
        consumer that left is back in the group."""
        self.consumer(client_id)
        self._heartbeats.append(client_id)
        if client_id in self._departed:
            self._departed.remove(client_id)

    def remove_consumer(self, client_id: str) -> None:
        """The consumer leaves (``ConsumerGroupInfo.unregisterChannel``): it takes no queues and
        pulls nothing, but what its heartbeats put in the group's table stays there, as in
        RocketMQ, so its heartbeats stay in :attr:`heartbeats`. When the last consumer leaves the
        broker forgets the group: every consumer and heartbeat is dropped (the settings stay)."""
        self.consumer(client_id)
        if client_id not in self._departed:
            self._departed.append(client_id)
        if len(self._departed) == len(self.consumers):
            self.consumers, self._heartbeats, self._departed = {}, [], []

    @property
    def departed(self) -> List[str]:
        """The consumers that left while others stayed, in the order they left."""
        return list(self._departed)

    def _live(self, client_id: str) -> ConsumerData:
        consumer = self.consumer(client_id)
        if client_id in self._departed:
            raise ValueError(f"group {self.group!r}: consumer {client_id!r} has left the group, so it pulls "
                             f"nothing (the group has {self.consumer_ids()})")
        return consumer

    @property
    def heartbeats(self) -> List[str]:
        """The client ids whose heartbeats make the group's table, in the order applied."""
        return list(self._heartbeats)

    def set_heartbeats(self, client_ids: Iterable[str]) -> None:
        """Replace the heartbeat sequence; every consumer must heartbeat at least once."""
        order = list(client_ids)
        for cid in order:
            self.consumer(cid)
        missing = [cid for cid in self.consumers if cid not in order]
        if missing:
            raise ValueError(f"group {self.group!r}: consumers {missing} never heartbeat, so the broker "
                             "would not know them; list each at least once")
        self._heartbeats = order

    # -- the broker's view -------------------------------------------------------------------
    def replay(self) -> List[HeartbeatStep]:
        """Every heartbeat applied in turn to a fresh ``ConsumerGroupInfo``, with the table after it."""
        info, steps = self._new_info(), []
        for i, cid in enumerate(self._heartbeats):
            changed = self._apply(info, cid, i)
            steps.append(HeartbeatStep(cid, changed, dict(info.subscription_table)))
        return steps

    def group_info(self) -> ConsumerGroupInfo:
        """The broker's ``ConsumerGroupInfo`` after all heartbeats (a client's value is the index
        of its last heartbeat: the model has no clock)."""
        info = self._new_info()
        for i, cid in enumerate(self._heartbeats):
            self._apply(info, cid, i)
        for cid in self._departed:
            info.unregister_client(cid)
        return info

    @property
    def effective_subscriptions(self) -> Dict[str, SubscriptionData]:
        """topic -> the subscription the broker holds for the whole group after all heartbeats."""
        return dict(self.group_info().subscription_table)

    def _new_info(self) -> ConsumerGroupInfo:
        return ConsumerGroupInfo(self.group, message_model=self.message_model,
                                 consume_from_where=self.consume_from_where)

    def _apply(self, info: ConsumerGroupInfo, client_id: str, timestamp: int) -> bool:
        subs = self.consumers[client_id].subscriptions.values()
        return info.register(client_id, subs, timestamp, message_model=self.message_model,
                             consume_from_where=self.consume_from_where)

    def subscription_of(self, client_id: str, topic: str) -> Optional[SubscriptionData]:
        """The consumer's own subscription of ``topic`` (None if it does not subscribe it)."""
        return self.consumer(client_id).subscriptions.get(topic)

    def subscription_for_pull(self, client_id: str, topic: str) -> PullSubscription:
        """Which subscription the broker filters this consumer's pulls of ``topic`` with.

        With ``post_subscription_when_pull`` the pull carries the consumer's own subscription and
        the broker uses it. Otherwise (RocketMQ's push consumer) the broker uses the group's
        table: refused with SUBSCRIPTION_NOT_EXIST when the table lacks the topic, and
        SUBSCRIPTION_NOT_LATEST when the table's subVersion is older than the consumer's.
        """
        own = self._live(client_id).subscriptions.get(topic)
        if own is None:
            raise ValueError(f"group {self.group!r}: consumer {client_id!r} does not subscribe {topic!r}, so it "
                             f"never pulls it (it subscribes {sorted(self.consumers[client_id].subscriptions)})")
        if self.consumers[client_id].post_subscription_when_pull:
            return PullSubscription(own, own)
        table = self.effective_subscriptions.get(topic)
        if table is None:
            return PullSubscription(None, own, SUBSCRIPTION_NOT_EXIST)
        if table.sub_version < own.sub_version:
            return PullSubscription(None, own, SUBSCRIPTION_NOT_LATEST)
        return PullSubscription(table, own)

    # -- queues ------------------------------------------------------------------------------
    def allocate(self, topic: str, mq_all: Iterable[MessageQueue]) -> Dict[str, List[MessageQueue]]:
        """client id -> the queues of ``topic`` it takes, as each consumer's ``RebalanceImpl``
        computes it: ``mq_all`` (a set) and all the group's client ids sorted, then the strategy.

        Every consumer in the group (not those that left) appears, in sorted order. A consumer
        that does not subscribe ``topic``
        never rebalances it and takes nothing, although the strategy counted it: its share is
        consumed by nobody (:meth:`unconsumed_queues`). BROADCASTING gives every subscriber every
        queue. No queues: everyone takes nothing (RocketMQ logs the strategy's error).
        """
        queues = self._sorted_queues(topic, mq_all)
        cid_all = sorted(self.consumer_ids(), key=string_sort_key)
        result: Dict[str, List[MessageQueue]] = {}
        for cid in cid_all:
            if topic not in self.consumers[cid].subscriptions or not queues:
                result[cid] = []
            elif self.message_model == "BROADCASTING":
                result[cid] = list(queues)
            else:
                try:
                    # RebalanceImpl keys its pull requests by queue: what a strategy hands out of another
                    # topic (CONFIG's fixed list) is not pulled for this one (seen on RocketMQ 5.3.3).
                    result[cid] = [mq for mq in self.allocate_strategy.allocate(self.group, cid, queues, cid_all)
                                   if mq.topic == topic]
                except ValueError as error:
                    raise ValueError(f"group {self.group!r}, topic {topic!r}, consumer {cid!r}: "
                                     f"{self.allocate_strategy.get_name()}: {error}") from None
        return result

    def unconsumed_queues(self, topic: str, mq_all: Iterable[MessageQueue]) -> List[MessageQueue]:
        """The queues of ``topic`` no consumer takes (sorted)."""
        taken = {mq for queues in self.allocate(topic, mq_all).values() for mq in queues}
        return [mq for mq in self._sorted_queues(topic, mq_all) if mq not in taken]

    def _sorted_queues(self, topic: str, mq_all: Iterable[MessageQueue]) -> List[MessageQueue]:
        queues = set()
        for mq in mq_all:
            if not isinstance(mq, MessageQueue):
                raise ValueError(f"group {self.group!r}: mq_all must hold MessageQueue items, got {mq!r}")
            if mq.topic != topic:
                raise ValueError(f"group {self.group!r}: {mq} is not a queue of topic {topic!r}")
            queues.add(mq)
        return sorted(queues)

    # -- as data -----------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """The group as a JSON-able document (:mod:`.group_file`'s shape); ``from_dict`` reads it
        back to an equal group, subVersions included, so a registry can persist groups."""
        return group_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: Optional[str] = None) -> "ConsumerGroup":
        """A group from a document of :mod:`.group_file`'s shape. Consumers heartbeat in the
        listed order (or as ``heartbeats`` says); one without ``subVersion`` gets now in ms.
        Raises :class:`GroupFileError` (a ValueError) naming ``source``, the consumer and the field."""
        spec = parse_group_dict(data, source)
        group = cls(spec.group, spec.message_model, spec.allocate_strategy, spec.consume_from_where)
        for c in spec.consumers:
            group.add_consumer(c.client_id, c.subscriptions, sub_version=c.sub_version,
                               post_subscription_when_pull=c.post_subscription_when_pull)
        if spec.heartbeats is not None:
            group.set_heartbeats(spec.heartbeats)
        group._departed = [c.client_id for c in spec.consumers if c.unregistered]
        return group

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike]) -> "ConsumerGroup":
        """A group from a ``.json``, ``.yaml`` or ``.yml`` file of :mod:`.group_file`'s shape."""
        return cls.from_dict(read_group_file(path), str(path))
