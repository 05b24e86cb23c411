"""The broker's pull checks in RocketMQ's order, every response code, and heartbeat registration
(SEMANTICS §6, §12.3), against an in-memory test double of the store interface."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import pytest

from rocketfilter.config import BrokerConfig, MessageStoreConfig, SubscriptionGroupConfig, TopicConfig
from rocketfilter.pull.broker import (Broker, PullMessageRequestHeader, PullSysFlag, ResponseCode,
                                      status_to_response_code)
from rocketfilter.pull.filter import CqExtUnit, ExpressionForRetryMessageFilter, ExpressionMessageFilter
from rocketfilter.pull.result import GetMessageResult, GetMessageStatus
from rocketfilter.store.bitmap import calc_bitmap
from rocketfilter.store.filter_data import ConsumerFilterManager
from rocketfilter.tags import build_subscription, tags_code


class FakeClock:
    def __init__(self, now: int = 1_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now


class FakeStore:
    """TEST DOUBLE (not shipped): the store interface the Broker relies on, in memory.

    ``get_message`` is a plain Python walk of one queue with the filter's Python checks (no batch
    size limits); set ``forced`` to make it answer a given GetMessageResult (or None).
    """

    def __init__(self, clock: Optional[FakeClock] = None, bitmaps: bool = True):
        self.clock = clock or FakeClock()
        self.broker_config = BrokerConfig(broker_name="broker-a")
        self.config = MessageStoreConfig()
        self.filter_manager = ConsumerFilterManager(self.broker_config, store_config=self.config, clock=self.clock)
        self.topics: Dict[str, TopicConfig] = {}
        self.queues: Dict[Tuple[str, int], List[dict]] = {}
        self.offsets: Dict[Tuple[str, str, int], int] = {}
        self.bitmaps = bitmaps
        self.forced = "unset"
        self.calls: list = []

    # -- the interface -----------------------------------------------------------------------
    def topic_config(self, topic: str) -> Optional[TopicConfig]:
        return self.topics.get(topic)

    def commit_consumer_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.offsets[(group, topic, queue_id)] = offset

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        return self.offsets.get((group, topic, queue_id), -1)

    def get_message(self, group, topic, queue_id, offset, max_msg_nums, message_filter):
        self.calls.append((group, topic, queue_id, offset, max_msg_nums, message_filter))
        if self.forced != "unset":
            return self.forced
        S = GetMessageStatus
        queue = self.queues.get((topic, queue_id))
        if queue is None:
            return GetMessageResult(S.NO_MATCHED_LOGIC_QUEUE, 0)
        high = len(queue)
        if high == 0:
            return GetMessageResult(S.NO_MESSAGE_IN_QUEUE, 0)
        if offset < 0:
            return GetMessageResult(S.OFFSET_TOO_SMALL, 0, 0, high)
        if offset >= high:
            status = S.OFFSET_OVERFLOW_ONE if offset == high else S.OFFSET_OVERFLOW_BADLY
            return GetMessageResult(status, offset if offset == high else high, 0, high)
        result = GetMessageResult(S.NO_MATCHED_MESSAGE, offset, 0, high)
        for m in queue[offset:]:
            if len(result.messages) >= max_msg_nums:
                break
            result.next_begin_offset = m["queue_offset"] + 1
            ext = CqExtUnit(m["tags_code"], m["store_timestamp"], m["filter_bitmap"])
            if message_filter is not None and not (
                    message_filter.is_matched_by_consume_queue(m["tags_code"], ext)
                    and message_filter.is_matched_by_commit_log(m["properties"])):
                continue
            result.messages.append(m)
            result.message_queue_offsets.append(m["queue_offset"])
            result.status = S.FOUND
        result.message_count = len(result.messages)
        return result

    # -- test helpers ------------------------------------------------------------------------
    def create_topic(self, topic: str, queues: int = 4, perm: int = 6) -> None:
        self.topics[topic] = TopicConfig(topic, read_queue_nums=queues, write_queue_nums=queues, perm=perm)

    def put(self, topic: str, queue_id: int, tags: Optional[str] = None, **props: str) -> dict:
        """Store a message now (after every filter registered so far)."""
        self.clock.now += 1
        properties = dict(props, **({"TAGS": tags} if tags else {}))
        queue = self.queues.setdefault((topic, queue_id), [])
        bitmap = calc_bitmap(self.filter_manager.filter_datas(topic), self.filter_manager.bloom, properties) \
            if self.bitmaps else None
        message = {"topic": topic, "queue_id": queue_id, "queue_offset": len(queue), "tags": tags,
                   "properties": properties, "store_timestamp": self.clock.now, "tags_code": tags_code(tags),
                   "filter_bitmap": bitmap}
        queue.append(message)
        return message


def make_broker(**broker_settings) -> Tuple[Broker, FakeStore]:
    store = FakeStore()
    store.create_topic("T")
    store.broker_config = BrokerConfig(broker_name="broker-a", **broker_settings)
    return Broker(store, clock=store.clock), store


def pull(broker: Broker, group: str = "G", topic: str = "T", queue_id: int = 0, offset: int = 0, **kw):
    return broker.pull_message(PullMessageRequestHeader(group, topic, queue_id, offset, **kw))


SUB_FLAG = PullSysFlag.build_sys_flag(False, False, True, False)


def test_sys_flag_bits():
    assert (PullSysFlag.FLAG_COMMIT_OFFSET, PullSysFlag.FLAG_SUSPEND, PullSysFlag.FLAG_SUBSCRIPTION,
            PullSysFlag.FLAG_CLASS_FILTER) == (1, 2, 4, 8)
    flag = PullSysFlag.build_sys_flag(True, True, True, True)
    assert flag == 15 and all(f(flag) for f in (PullSysFlag.has_commit_offset_flag, PullSysFlag.has_suspend_flag,
                                                 PullSysFlag.has_subscription_flag, PullSysFlag.has_class_filter_flag))
    assert not PullSysFlag.has_subscription_flag(3)


# -- every refusal, in the processor's order ---------------------------------------------------
def test_slave_without_slave_read_is_rejected_first():
    broker, store = make_broker()
    broker.store_config = MessageStoreConfig(broker_role="SLAVE")
    assert pull(broker, group="never registered").code == ResponseCode.SYSTEM_BUSY


def test_broker_not_readable():
    broker, _ = make_broker(broker_permission=2)
    r = pull(broker)
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "the broker[127.0.0.1] pulling message is forbidden")


def test_subscription_group_missing_or_auto_created():
    broker, _ = make_broker(auto_create_subscription_group=False)
    r = pull(broker, group="G")
    assert (r.code, r.remark) == (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group [G] does not exist")
    assert pull(broker, group="CID_RMQ_SYS_x").code != ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST  # system group
    broker, _ = make_broker()
    assert pull(broker, group="G").code == ResponseCode.SUBSCRIPTION_NOT_EXIST  # auto-created, then no consumer
    assert "G" in broker.subscription_groups
    # An invalid name is never auto-created.
    assert pull(broker, group="bad group").code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


def test_group_consume_disabled():
    broker, _ = make_broker()
    broker.update_subscription_group(SubscriptionGroupConfig("G", consume_enable=False))
    r = pull(broker)
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "subscription group no permission, G")


def test_topic_missing_and_not_readable():
    broker, store = make_broker()
    assert pull(broker, topic="Nope").code == ResponseCode.TOPIC_NOT_EXIST
    store.create_topic("W", perm=2)
    r = pull(broker, topic="W")
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "the topic[W] pulling message is forbidden")


@pytest.mark.parametrize("queue_id", [-1, 4, 99])
def test_invalid_queue_id(queue_id):
    broker, _ = make_broker()
    r = pull(broker, queue_id=queue_id)
    assert r.code == ResponseCode.INVALID_PARAMETER and f"queueId[{queue_id}] is illegal" in r.remark


@pytest.mark.parametrize("subscription, expression_type", [("||", "TAG"), ("", "SQL92"), (None, "SQL92")])
def test_subscription_parse_failed(subscription, expression_type):
    broker, _ = make_broker()
    r = pull(broker, sys_flag=SUB_FLAG, subscription=subscription, expression_type=expression_type)
    assert (r.code, r.remark) == (ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")


def test_subscription_flag_pull_builds_its_own_filter():
    broker, store = make_broker()
    for a in ("0", "5"):
        store.put("T", 0, a=a)
    r = pull(broker, sys_flag=SUB_FLAG, subscription="a > 1", expression_type="SQL92")
    assert r.code == ResponseCode.SUCCESS and [m["properties"]["a"] for m in r.messages] == ["5"]
    assert store.calls[-1][-1].consumer_filter_data.bloom_filter_data is None  # build() has no bloom data
    # The quirk: a selector that does not compile gives no filter data, so everything matches.
    r = pull(broker, sys_flag=SUB_FLAG, subscription="a >", expression_type="SQL92")
    assert r.code == ResponseCode.SUCCESS and len(r.messages) == 2
    r = pull(broker, sys_flag=SUB_FLAG, subscription="*", expression_type=None)
    assert r.code == ResponseCode.SUCCESS and len(r.messages) == 2


def test_subscription_not_exist():
    broker, store = make_broker()
    r = pull(broker)
    assert (r.code, r.remark) == (ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist")
    store.create_topic("Other")
    broker.register_consumer("G", "c1", [("Other", "*")])
    r = pull(broker)
    assert (r.code, r.remark) == (ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist")


def test_broadcast_not_allowed():
    broker, _ = make_broker()
    broker.update_subscription_group(SubscriptionGroupConfig("G", consume_broadcast_enable=False))
    broker.register_consumer("G", "c1", [("T", "*")], message_model="BROADCASTING")
    r = pull(broker)
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "the consumer group[G] can not consume by broadcast way")


def test_read_forbidden_for_the_topic():
    broker, _ = make_broker()
    broker.register_consumer("G", "c1", [("T", "*")])
    broker.set_read_forbidden("G", "T")
    r = pull(broker)
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "the consumer group[G] is forbidden for topic[T]")
    broker.set_read_forbidden("G", "T", False)
    assert pull(broker).code == ResponseCode.PULL_NOT_FOUND


def test_subscription_not_latest():
    broker, _ = make_broker()
    broker.register_consumer("G", "c1", [("T", "*")], sub_version=100)
    assert pull(broker, sub_version=100).code != ResponseCode.SUBSCRIPTION_NOT_LATEST
    r = pull(broker, sub_version=101)
    assert (r.code, r.remark) == (ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")


def test_filter_data_not_exist_for_a_selector_that_does_not_compile():
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "a >", "SQL92")], sub_version=100)
    assert store.filter_manager.get("T", "G") is None
    r = pull(broker, sub_version=100)
    assert r.code == ResponseCode.FILTER_DATA_NOT_EXIST
    assert r.remark == "The broker's consumer filter data is not exist!Your expression may be wrong!"


def test_filter_data_not_latest():
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "a > 1", "SQL92")], sub_version=100)
    # Filter data older than the subscription (e.g. loaded from disk before a newer heartbeat).
    store.filter_manager.get("T", "G").client_version = 99
    r = pull(broker, sub_version=100)
    assert (r.code, r.remark) == (ResponseCode.FILTER_DATA_NOT_LATEST, "the consumer's consumer filter data not latest")
    assert pull(broker, sub_version=99).code != ResponseCode.FILTER_DATA_NOT_LATEST


def test_sql92_refused_when_property_filter_disabled():
    broker, _ = make_broker(enable_property_filter=False)
    broker.register_consumer("G", "c1", [("T", "a > 1", "SQL92")])
    r = pull(broker)
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR,
                                  "The broker does not support consumer to filter message by SQL92")
    r = pull(broker, sys_flag=SUB_FLAG, subscription="a > 1", expression_type="SQL92")
    assert r.code == ResponseCode.SYSTEM_ERROR
    broker.register_consumer("G", "c1", [("T", "TagA")])  # tags still work
    assert pull(broker).code == ResponseCode.PULL_NOT_FOUND


def test_store_returning_none_is_a_system_error():
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "*")])
    store.forced = None
    assert (pull(broker).code, pull(broker).remark) == (ResponseCode.SYSTEM_ERROR, "store getMessage return null")


# -- getMessage statuses -> response codes ----------------------------------------------------
CODE_TABLE = {
    "FOUND": (0, 0), "NO_MATCHED_MESSAGE": (20, 20), "MESSAGE_WAS_REMOVING": (20, 20),
    "NO_MATCHED_LOGIC_QUEUE": (19, 21), "NO_MESSAGE_IN_QUEUE": (19, 21), "OFFSET_FOUND_NULL": (19, 19),
    "OFFSET_OVERFLOW_ONE": (19, 19), "OFFSET_OVERFLOW_BADLY": (21, 21), "OFFSET_TOO_SMALL": (21, 21),
    "OFFSET_RESET": (21, 21),
}


@pytest.mark.parametrize("status", list(GetMessageStatus))
def test_status_to_response_code(status):
    at_zero, elsewhere = CODE_TABLE[status.value]
    assert (status_to_response_code(status, 0), status_to_response_code(status, 7)) == (at_zero, elsewhere)
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "*")])
    store.forced = GetMessageResult(status, next_begin_offset=5, min_offset=1, max_offset=9)
    r = pull(broker, offset=7)
    assert (r.code, r.remark, r.next_begin_offset, r.min_offset, r.max_offset, r.suggest_which_broker_id) == (
        elsewhere, status.value, 5, 1, 9, 0)


def test_statuses_from_a_real_walk():
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "TagA")])
    assert pull(broker).code == ResponseCode.PULL_NOT_FOUND          # no queue yet, offset 0
    assert pull(broker, offset=3).code == ResponseCode.PULL_OFFSET_MOVED
    store.put("T", 0, "TagB")
    store.put("T", 0, "TagA")
    r = pull(broker)
    assert (r.code, r.next_begin_offset, [m["tags"] for m in r.messages]) == (0, 2, ["TagA"])
    r = pull(broker, offset=0, max_msg_nums=1, sub_version=0)
    assert r.code == ResponseCode.SUCCESS and r.next_begin_offset == 2   # TagB skipped, then TagA
    store.put("T", 0, "TagB")
    r = pull(broker, offset=2)
    assert (r.code, r.remark, r.next_begin_offset) == (20, "NO_MATCHED_MESSAGE", 3)
    assert pull(broker, offset=3).code == ResponseCode.PULL_NOT_FOUND  # OFFSET_OVERFLOW_ONE
    assert pull(broker, offset=9).code == ResponseCode.PULL_OFFSET_MOVED


def test_slave_broker_sends_consumers_to_the_master():
    broker, store = make_broker(broker_id=1, slave_read_enable=True)
    broker.store_config = MessageStoreConfig(broker_role="SLAVE")
    broker.register_consumer("G", "c1", [("T", "*")])
    store.forced = GetMessageResult(GetMessageStatus.NO_MATCHED_MESSAGE, 3)
    r = pull(broker)
    assert (r.code, r.suggest_which_broker_id) == (ResponseCode.PULL_RETRY_IMMEDIATELY, 0)
    store.forced = GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, 3)
    assert pull(broker).code == ResponseCode.PULL_RETRY_IMMEDIATELY   # no offset correction on a slave
    store.forced = GetMessageResult(GetMessageStatus.FOUND, 3, suggest_pulling_from_slave=True)
    r = pull(broker)
    assert (r.code, r.suggest_which_broker_id) == (0, 1)              # whichBrokerWhenConsumeSlowly


def test_offset_moved_on_a_master_stays():
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "*")])
    store.forced = GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, 4)
    assert pull(broker, offset=10).code == ResponseCode.PULL_OFFSET_MOVED


def test_commit_offset_flag_commits_the_request_offset():
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "*")])
    store.put("T", 1, "x")
    pull(broker, queue_id=1, commit_offset=42)
    assert store.query_consumer_offset("G", "T", 1) == -1                 # flag not set
    r = pull(broker, queue_id=1, sys_flag=PullSysFlag.FLAG_COMMIT_OFFSET, commit_offset=42)
    assert r.code == 0 and broker.query_consumer_offset("G", "T", 1) == 42
    pull(broker, queue_id=1, offset=5, sys_flag=PullSysFlag.FLAG_COMMIT_OFFSET, commit_offset=43)
    assert store.offsets[("G", "T", 1)] == 43                             # committed on any result


def test_filter_class_follows_filter_support_retry():
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "*")])
    pull(broker)
    assert type(store.calls[-1][-1]) is ExpressionMessageFilter
    broker.broker_config = BrokerConfig(filter_support_retry=True)
    pull(broker)
    assert type(store.calls[-1][-1]) is ExpressionForRetryMessageFilter


def test_retry_message_without_retry_topic_fails_the_pull():
    broker, store = make_broker(filter_support_retry=True)
    store.create_topic("%RETRY%G", queues=1)
    broker.register_consumer("G", "c1", [("T", "a > 1", "SQL92"), ("%RETRY%G", "a > 3", "SQL92")])
    store.put("%RETRY%G", 0, a="5", RETRY_TOPIC="T")
    store.put("%RETRY%G", 0, a="0", RETRY_TOPIC="T")
    r = pull(broker, topic="%RETRY%G")
    assert r.code == 0 and [m["properties"]["a"] for m in r.messages] == ["5"]   # judged by G's filter on T
    store.put("%RETRY%G", 0, a="5")
    r = pull(broker, topic="%RETRY%G", offset=2)
    assert r.code == ResponseCode.SYSTEM_ERROR and "NullPointerException" in r.remark and "RETRY_TOPIC" in r.remark


# -- heartbeat ---------------------------------------------------------------------------------
def test_register_consumer_last_writer_wins():
    """Seed 003: two consumers of one group subscribe TagA and TagB; the later registration wins."""
    broker, store = make_broker()
    for tag in ("TagA", "TagB", "TagA", "TagB"):
        store.put("T", 0, tag)
    broker.register_consumer("G", "c1", [("T", "TagA")])
    broker.register_consumer("G", "c2", [("T", "TagB")])
    sub = broker.consumer_group_info("G").find_subscription_data("T")
    assert sub.sub_string == "TagB" and broker.consumer_ids("G") == ["c1", "c2"]
    r = pull(broker)
    assert [m["tags"] for m in r.messages] == ["TagB", "TagB"]
    # A registration with an older subVersion does not replace the newer one.
    broker.register_consumer("G", "c1", [("T", "TagA")], sub_version=1)
    assert broker.consumer_group_info("G").find_subscription_data("T").sub_string == "TagB"


def test_register_consumer_sql92_last_writer_wins_and_topics_left_out_are_dropped():
    broker, store = make_broker()
    store.create_topic("U")
    assert broker.register_consumer("G", "c1", [("T", "a > 1", "SQL92"), ("U", "*")]) is True
    broker.register_consumer("G", "c2", [("T", "a < 1", "SQL92")])
    assert store.filter_manager.get("T", "G").expression == "a < 1"
    info = broker.consumer_group_info("G")
    assert sorted(info.subscription_table) == ["T"]                  # c2's heartbeat dropped U
    store.put("T", 0, a="0")
    store.put("T", 0, a="5")
    assert [m["properties"]["a"] for m in pull(broker).messages] == ["0"]


def test_broker_and_consumer_group_agree_on_the_group_table():
    """The same heartbeats, through the Broker and through a ConsumerGroup, leave the same table."""
    from rocketfilter.consumer import ConsumerGroup

    broker, store = make_broker()
    store.create_topic("U")
    group = ConsumerGroup("G")
    heartbeats = [("c1", {"T": "TagA", "U": "*"}, 5), ("c2", {"T": ("a > 1", "SQL92")}, 7), ("c3", {"U": "x"}, 6)]
    for cid, subs, version in heartbeats:
        group.add_consumer(cid, subs, sub_version=version)
        as_tuples = [(t, s) if isinstance(s, str) else (t, *s) for t, s in subs.items()]
        broker.register_consumer("G", cid, as_tuples, sub_version=version)
    group.heartbeat("c1")
    broker.register_consumer("G", "c1", [("T", "TagA"), ("U", "*")], sub_version=5)
    table = {t: (s.sub_string, s.sub_version) for t, s in broker.consumer_group_info("G").subscription_table.items()}
    assert table == {t: (s.sub_string, s.sub_version) for t, s in group.effective_subscriptions.items()}
    # c3 dropped T; c1's last heartbeat re-adds its own T, while U keeps c3's higher version.
    assert table == {"T": ("TagA", 5), "U": ("x", 6)}


def test_register_consumer_rejects_bad_input():
    broker, _ = make_broker()
    with pytest.raises(ValueError, match="group"):
        broker.register_consumer("a/b", "c1", [("T", "*")])
    with pytest.raises(ValueError, match="topic"):
        broker.register_consumer("G", "c1", [("../T", "*")])
    with pytest.raises(ValueError, match="split"):
        broker.register_consumer("G", "c1", [("T", "||")])
    with pytest.raises(ValueError, match="message_model"):
        broker.register_consumer("G", "c1", [("T", "*")], message_model="clustering")
    with pytest.raises(TypeError):
        broker.register_consumer("G", "c1", ["T"])


def test_register_accepts_subscription_data():
    broker, store = make_broker()
    sub = build_subscription("T", "a = 1", "SQL92")
    sub.sub_version = 77
    broker.register_consumer("G", "c1", [sub])
    assert store.filter_manager.get("T", "G").client_version == 77
    assert pull(broker, sub_version=77).code == ResponseCode.PULL_NOT_FOUND


def test_unregister_last_consumer_kills_filter_data():
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "a > 1", "SQL92")])
    broker.register_consumer("G", "c2", [("T", "a > 1", "SQL92")])
    broker.unregister_consumer("G", "c1")
    assert not store.filter_manager.get("T", "G").is_dead()
    broker.unregister_consumer("G", "c2")
    assert store.filter_manager.get("T", "G").is_dead() and broker.consumer_group_info("G") is None
    broker.unregister_consumer("nobody", "c")


def test_bitmap_skips_at_the_consume_queue():
    """Messages stored after registration carry bitmaps; the group's unset bits reject them at the
    consume queue, before the selector runs."""
    broker, store = make_broker()
    broker.register_consumer("G", "c1", [("T", "a > 1", "SQL92")])
    store.put("T", 0, a="0")
    store.put("T", 0, a="5")
    r = pull(broker)
    assert [m["properties"]["a"] for m in r.messages] == ["5"]
    filt = store.calls[-1][-1]
    first = store.queues[("T", 0)][0]
    assert not filt.is_matched_by_consume_queue(first["tags_code"], CqExtUnit(0, first["store_timestamp"],
                                                                              first["filter_bitmap"]))


def test_from_conf(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("enablePropertyFilter=false\nbrokerId=0\n")
    broker = Broker.from_conf(FakeStore(), conf)
    assert broker.broker_config.enable_property_filter is False
