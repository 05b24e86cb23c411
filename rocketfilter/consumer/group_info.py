"""The broker's record of a consumer group (``ConsumerGroupInfo``): its live clients and its one
subscription per topic, updated by every heartbeat. The ``Broker`` and ``ConsumerGroup`` share it.

The table is the group's, not a client's: a heartbeat sets each topic it lists (the higher
``subVersion`` wins) and drops every topic it does not list. Two consumers of one group with
different subscriptions therefore overwrite each other, heartbeat after heartbeat (RocketMQ
issues 2836, 2954, 5473, 7717).

>>> from rocketfilter.tags import build_subscription
>>> info = ConsumerGroupInfo("G")
>>> a, b = build_subscription("T", "tagA"), build_subscription("T", "tagB")
>>> a.sub_version, b.sub_version = 1, 2
>>> info.update_subscription([b]); info.update_subscription([a])
True
False
>>> info.find_subscription_data("T").sub_string   # A's older subVersion does not replace B's
'tagB'
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional

from rocketfilter.tags import SubscriptionData

MESSAGE_MODELS = ("CLUSTERING", "BROADCASTING")
CONSUME_TYPES = ("CONSUME_PASSIVELY", "CONSUME_ACTIVELY", "CONSUME_POP")
CONSUME_FROM_WHERE = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP",
                      "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST", "CONSUME_FROM_MIN_OFFSET",
                      "CONSUME_FROM_MAX_OFFSET")


def check_choice(what: str, name: str, value: object, allowed: tuple) -> str:
    """``value`` if it is one of ``allowed`` (RocketMQ's enum names, case-sensitive), else
    ValueError naming ``what`` and the choices."""
    if value not in allowed:
        raise ValueError(f"{what}: {name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SubVersionClock:
    """Hands out subVersions: the clock in ms (``System.currentTimeMillis``, as a new
    ``SubscriptionData`` takes), but strictly increasing. Two subscriptions made in the same
    millisecond would tie in Java, and a tie keeps the older one; here the later one always
    gets the higher version, so a later subscription wins deterministically."""

    def __init__(self, clock: Optional[Callable[[], int]] = None):
        self._clock = clock or _now_ms
        self._last = 0
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            self._last = max(self._clock(), self._last + 1)
            return self._last


#: The process-wide clock ``ConsumerGroup.add_consumer`` uses by default.
next_sub_version = SubVersionClock()


@dataclass
class ConsumerGroupInfo:
    """``ConsumerGroupInfo``: a group's live clients and its subscription table (one per topic)."""

    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    clients: Dict[str, int] = field(default_factory=dict)  # client id -> last heartbeat (ms)
    subscription_table: Dict[str, SubscriptionData] = field(default_factory=dict)

    def find_subscription_data(self, topic: str) -> Optional[SubscriptionData]:
        return self.subscription_table.get(topic)

    def get_subscribe_topics(self) -> List[str]:
        return list(self.subscription_table)

    def all_client_ids(self) -> List[str]:
        """``getAllClientId``, in registration order."""
        return list(self.clients)

    def update_channel(self, client_id: str, consume_type: str, message_model: str, consume_from_where: str,
                       timestamp: int) -> bool:
        """``updateChannel``: the group takes the heartbeat's settings and records the client;
        True when the client is new."""
        self.consume_type, self.message_model, self.consume_from_where = consume_type, message_model, consume_from_where
        new = client_id not in self.clients
        self.clients[client_id] = timestamp
        return new

    def unregister_client(self, client_id: str) -> bool:
        """``unregisterChannel``: the client leaves (its subscriptions stay in the table)."""
        return self.clients.pop(client_id, None) is not None

    def update_subscription(self, subscriptions: Iterable[SubscriptionData]) -> bool:
        """``updateSubscription``: a topic new to the table is added, a higher subVersion replaces
        the topic's subscription (an equal or lower one is ignored), and topics this heartbeat
        does not list are dropped. True when a topic was added or dropped (RocketMQ does not
        count a replacement as a change)."""
        updated = False
        topics = set()
        for sub in subscriptions:
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
            topics.add(sub.topic)
        for topic in [t for t in self.subscription_table if t not in topics]:
            del self.subscription_table[topic]
            updated = True
        return updated

    def register(self, client_id: str, subscriptions: Iterable[SubscriptionData], timestamp: int,
                 consume_type: str = "CONSUME_PASSIVELY", message_model: str = "CLUSTERING",
                 consume_from_where: str = "CONSUME_FROM_LAST_OFFSET") -> bool:
        """One heartbeat (``ConsumerManager.registerConsumer``): ``update_channel`` then
        ``update_subscription``; True when either changed the group."""
        new_client = self.update_channel(client_id, consume_type, message_model, consume_from_where, timestamp)
        changed = self.update_subscription(subscriptions)
        return new_client or changed
