"""SQL92 consumer filter data, as the broker's ``ConsumerFilterManager`` keeps it (SEMANTICS §6).

A group's SQL92 subscription to a topic is compiled once at registration (heartbeat) and stored
with its bloom bits (``group + "#" + topic``). The dispatcher sets those bits in a message's bitmap
when the selector is TRUE for it (§10.4); a pull skips a message whose bitmap lacks them (§7).

>>> m = ConsumerFilterManager(clock=lambda: 1000)
>>> m.register("T", "G1", "a > 1", "SQL92", 1)
True
>>> m.get("T", "G1").bloom_filter_data.bit_pos     # the bits of "G1#T"
[48, 65, 29]
>>> m.register("T", "G2", "a >", "SQL92", 1)     # does not compile: not stored
False
"""
from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional

from rocketfilter.bloom import BloomFilter, BloomFilterData
from rocketfilter.broker_files.config_files import CONSUMER_FILTER as CONFIG_FILE_NAME
from rocketfilter.config import BrokerConfig, MessageStoreConfig
from rocketfilter.selector import Selector, parse
from rocketfilter.tags import SQL92, SubscriptionData, is_tag_type

log = logging.getLogger(__name__)

# Filter data loaded from disk is taken as dead since this long before the load (ms).
LOAD_DEAD_MARGIN_MS = 30 * 1000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def compile_expression(expression_type: Optional[str], expression: Optional[str]) -> Selector:
    """``FilterFactory.INSTANCE.get(type).compile(expr)``: only ``"SQL92"`` (case-sensitive) is
    registered; anything else fails as RocketMQ's null filter does."""
    if expression_type != SQL92:
        raise ValueError(f"no filter registered for expression type {expression_type!r} (only 'SQL92')")
    return parse(expression)


@dataclass
class ConsumerFilterData:
    """One group's compiled filter for one topic (``ConsumerFilterData``); times in epoch ms.

    ``compiled`` is None when the expression does not compile (only possible for data loaded
    from disk; registration never stores such data).
    """

    consumer_group: str
    topic: str
    expression: Optional[str]
    expression_type: Optional[str]
    born_time: int
    dead_time: int = 0
    bloom_filter_data: Optional[BloomFilterData] = None
    client_version: int = 0
    compiled: Optional[Selector] = field(default=None, repr=False, compare=False)

    def is_dead(self) -> bool:
        return self.dead_time >= self.born_time

    def how_long_after_death(self, now: int) -> int:
        """Milliseconds since death, or -1 while alive."""
        return now - self.dead_time if self.is_dead() else -1

    def is_msg_in_live(self, msg_store_time: int) -> bool:
        """Whether a message stored at that time had this filter's bits computed (§7)."""
        return msg_store_time > self.born_time

    def to_json(self) -> dict:
        bloom = self.bloom_filter_data
        return {
            "consumerGroup": self.consumer_group, "topic": self.topic, "expression": self.expression,
            "expressionType": self.expression_type, "bornTime": self.born_time, "deadTime": self.dead_time,
            "clientVersion": self.client_version,
            "bloomFilterData": None if bloom is None else {"bitPos": list(bloom.bit_pos), "bitNum": bloom.bit_num},
        }

    @classmethod
    def from_json(cls, body: dict) -> "ConsumerFilterData":
        bloom = body.get("bloomFilterData")
        return cls(
            consumer_group=body["consumerGroup"], topic=body["topic"], expression=body.get("expression"),
            expression_type=body.get("expressionType"), born_time=int(body.get("bornTime", 0)),
            dead_time=int(body.get("deadTime", 0)), client_version=int(body.get("clientVersion", 0)),
            bloom_filter_data=None if bloom is None else BloomFilterData(
                bit_pos=None if bloom.get("bitPos") is None else [int(p) for p in bloom["bitPos"]],
                bit_num=int(bloom.get("bitNum", 0))),
        )


class ConsumerFilterManager:
    """All groups' SQL92 filter data, by topic then group (``ConsumerFilterManager``).

    The bloom filter comes from ``broker_config`` (``maxErrorRateOfBloomFilter``,
    ``expectConsumerNumUseFilter``; 20 % and 32 groups by default, so k=3 and m=112), and its m
    is copied into ``store_config.bit_map_length_consume_queue_ext`` as RocketMQ does.

    State persists as RocketMQ's ``consumerFilter.json`` text through ``read_text()`` (None when
    there is nothing yet) and ``write_text(text)``; every change is written at once when
    ``write_text`` is given. ``clock`` returns epoch milliseconds (tests pass a fake one).
    """

    def __init__(self, broker_config: Optional[BrokerConfig] = None,
                 read_text: Optional[Callable[[], Optional[str]]] = None,
                 write_text: Optional[Callable[[str], None]] = None,
                 store_config: Optional[MessageStoreConfig] = None,
                 clock: Callable[[], int] = _now_ms):
        self.broker_config = broker_config or BrokerConfig()
        self.bloom = BloomFilter(self.broker_config.max_error_rate_of_bloom_filter,
                                 self.broker_config.expect_consumer_num_use_filter)
        if store_config is not None:
            store_config.bit_map_length_consume_queue_ext = self.bloom.m
        self._read_text = read_text
        self._write_text = write_text
        self._clock = clock
        self._lock = threading.RLock()
        self._by_topic: Dict[str, Dict[str, ConsumerFilterData]] = {}
        if read_text is not None:
            self.load()

    @classmethod
    def for_store(cls, store, name: str = CONFIG_FILE_NAME, clock: Callable[[], int] = _now_ms
                  ) -> "ConsumerFilterManager":
        """The manager of a store with ``broker_config``, ``config`` (MessageStoreConfig) and
        ``read_config(name)`` / ``write_config(name, text)``: kept as ``config/consumerFilter.json``
        like a broker's."""
        return cls(getattr(store, "broker_config", None),
                   read_text=lambda: store.read_config(name),
                   write_text=lambda text: store.write_config(name, text),
                   store_config=getattr(store, "config", None), clock=clock)

    # -- building and registering -------------------------------------------------------------
    def build(self, topic: str, group: str, expression: Optional[str], expression_type: Optional[str],
              client_version: int) -> Optional[ConsumerFilterData]:
        """``ConsumerFilterManager.build``: compiled data **without** bloom data, or None for a tag
        type or an expression that does not compile (never raises)."""
        if is_tag_type(expression_type):
            return None
        try:
            compiled = compile_expression(expression_type, expression)
        except Exception as error:  # Java catches Throwable here
            log.error("parse error: expr=%r, topic=%s, group=%s, error=%s", expression, topic, group, error)
            return None
        return ConsumerFilterData(consumer_group=group, topic=topic, expression=expression,
                                  expression_type=expression_type, born_time=self._clock(), dead_time=0,
                                  client_version=client_version, compiled=compiled)

    def register(self, topic: str, group: str, expression: Optional[str], expression_type: Optional[str],
                 client_version: int) -> bool:
        """Register (or refresh) one group's filter for one topic; True if the data is now live
        with this version. Version rules (§6): a higher ``client_version`` with a changed
        expression, type or bloom data rebuilds (a compile failure then **removes** the old
        entry); an equal or lower one is ignored, except that an equal one revives dead data."""
        with self._lock:
            changed = self._register_one(topic, group, expression, expression_type, client_version)
            self._persist_if_wanted()
            return changed

    def _register_one(self, topic: str, group: str, expression: Optional[str], expression_type: Optional[str],
                      client_version: int) -> bool:
        if is_tag_type(expression_type) or not expression:
            return False
        bloom_data = self.bloom.bloom_data(group, topic)
        groups = self._by_topic.setdefault(topic, {})
        changed = self._register(groups, topic, group, expression, expression_type, bloom_data, client_version)
        if not groups:
            del self._by_topic[topic]
        return changed

    def _register(self, groups: Dict[str, ConsumerFilterData], topic: str, group: str, expression: str,
                  expression_type: str, bloom_data: BloomFilterData, client_version: int) -> bool:
        old = groups.get(group)
        if old is None:
            data = self.build(topic, group, expression, expression_type, client_version)
            if data is None:
                return False
            data.bloom_filter_data = bloom_data
            groups[group] = data
            return True
        if client_version <= old.client_version:
            if expression_type != old.expression_type or expression != old.expression:
                log.info("Ignore consumer(%s : %s) filter, because of version %s <= %s, but maybe info changed!",
                         group, topic, client_version, old.client_version)
            if client_version == old.client_version and old.is_dead():
                old.dead_time = 0
                return True
            return False
        changed = (old.expression != expression or old.expression_type != expression_type
                   or old.bloom_filter_data != bloom_data)
        if not changed:
            old.client_version = client_version
            if old.is_dead():
                old.dead_time = 0
            return True
        data = self.build(topic, group, expression, expression_type, client_version)
        if data is None:
            # The new expression does not compile: drop the old one so pulls report the error.
            del groups[group]
            return False
        data.bloom_filter_data = bloom_data
        groups[group] = data
        return True

    def register_group(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """A heartbeat's subscriptions: register each, then mark dead the group's filter data for
        topics the heartbeat no longer subscribes."""
        subscriptions = list(subscriptions)
        with self._lock:
            for sub in subscriptions:
                self._register_one(sub.topic, group, sub.sub_string, sub.expression_type, sub.sub_version)
            topics = {sub.topic for sub in subscriptions}
            now = self._clock()
            for data in self.get_by_group(group):
                if data.topic not in topics and not data.is_dead():
                    data.dead_time = now
            self._persist_if_wanted()

    def unregister(self, group: str) -> None:
        """The group's last consumer left: all its filter data becomes dead now."""
        with self._lock:
            now = self._clock()
            for groups in self._by_topic.values():
                data = groups.get(group)
                if data is not None and not data.is_dead():
                    data.dead_time = now
            self._persist_if_wanted()

    # -- lookups ------------------------------------------------------------------------------
    def get(self, topic: Optional[str], group: str) -> Optional[ConsumerFilterData]:
        """The group's filter data for the topic (dead or alive), or None."""
        with self._lock:
            return self._by_topic.get(topic, {}).get(group)

    def filter_datas(self, topic: str) -> List[ConsumerFilterData]:
        """Every group's data for the topic, **including dead entries not cleaned yet**: what the
        bitmap dispatcher evaluates (§10.4)."""
        with self._lock:
            return list(self._by_topic.get(topic, {}).values())

    def get_by_group(self, group: str) -> List[ConsumerFilterData]:
        with self._lock:
            return [g[group] for g in self._by_topic.values() if group in g]

    def topics(self) -> List[str]:
        with self._lock:
            return list(self._by_topic)

    # -- life cycle and persistence -----------------------------------------------------------
    def clean(self) -> None:
        """Remove data dead for at least ``filterDataCleanTimeSpan`` (24 h by default)."""
        span = self.broker_config.filter_data_clean_time_span
        with self._lock:
            now = self._clock()
            for topic in list(self._by_topic):
                groups = self._by_topic[topic]
                for group in [g for g, d in groups.items() if d.how_long_after_death(now) >= span]:
                    log.info("Remove filter consumer %s#%s, died too long", group, topic)
                    del groups[group]
                if not groups:
                    del self._by_topic[topic]

    def encode(self, pretty: bool = False) -> str:
        """``consumerFilter.json`` text; cleans first, as RocketMQ's encode does."""
        with self._lock:
            self.clean()
            body = {"filterDataByTopic": {
                topic: {"topic": topic, "groupFilterData": {g: d.to_json() for g, d in groups.items()}}
                for topic, groups in self._by_topic.items()}}
        return json.dumps(body, indent=2 if pretty else None, ensure_ascii=False, sort_keys=pretty)

    def decode(self, text: Optional[str]) -> bool:
        """Load ``consumerFilter.json`` text. Every live entry becomes dead (deadTime = now - 30 s,
        or bornTime if later): consumers must heartbeat again. The whole text is ignored when any
        entry's bloom data does not fit the current bloom filter. Returns whether it was used."""
        if not text or not text.strip():
            return False
        try:
            body = json.loads(text)
            loaded = {topic: {group: ConsumerFilterData.from_json(d)
                              for group, d in (v or {}).get("groupFilterData", {}).items() if d is not None}
                      for topic, v in (body.get("filterDataByTopic") or {}).items() if v is not None}
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"consumer filter data is not valid consumerFilter.json: {error}") from None
        now = self._clock()
        for groups in loaded.values():
            for data in groups.values():
                try:
                    data.compiled = compile_expression(data.expression_type, data.expression)
                except Exception as error:
                    log.error("load filter data error, %s#%s %r: %s", data.consumer_group, data.topic,
                              data.expression, error)
                if not self.bloom.is_valid(data.bloom_filter_data):
                    log.info("Bloom filter is changed! So ignore all filter data persisted! %s, %s",
                             self.bloom, data.bloom_filter_data)
                    return False
                if data.dead_time == 0:
                    data.dead_time = max(now - LOAD_DEAD_MARGIN_MS, data.born_time)
        with self._lock:
            self._by_topic = {t: g for t, g in loaded.items() if g}
        return True

    def load(self) -> bool:
        """Read and decode the persisted text, if any."""
        return self._read_text is not None and self.decode(self._read_text())

    def persist(self) -> None:
        """Write the current state through ``write_text`` (no-op without one)."""
        if self._write_text is not None:
            self._write_text(self.encode(pretty=True))

    def _persist_if_wanted(self) -> None:
        if self._write_text is not None:
            self.persist()
