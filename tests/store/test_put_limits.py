"""The limits RocketMQ's broker enforces on a put (issue 19 §6.5): a body over maxMessageSize
(MessageExtEncoder: MESSAGE_ILLEGAL), a properties string over Short.MAX_VALUE bytes
(PROPERTIES_SIZE_EXCEEDED), and a topic a producer may not send to (SCHEDULE_TOPIC_XXXX and the
other ``TopicValidator.isNotAllowedSendTopic`` topics: NO_PERMISSION). Each is refused with a
PutMessageError naming the message and the limit, and nothing is written."""
from __future__ import annotations

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.naming import NOT_ALLOWED_SEND_TOPICS
from rocketfilter.store import MessageStore
from rocketfilter.store.put import PutMessageError

MAX_PROPERTIES = 32767


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("limits") / "s"), spark,
                          MessageStoreConfig(max_message_size=1000))
    s.create_topic("T", read_queue_nums=1, write_queue_nums=1)
    return s


def _unchanged(store, action):
    before = store.commitlog_state().next_commitlog_offset
    action()
    assert store.commitlog_state().next_commitlog_offset == before


def test_a_body_over_max_message_size_is_refused(store):
    messages = [{"topic": "T", "body": b"x" * 1000}, {"topic": "T", "body": b"x" * 1001}]
    with pytest.raises(PutMessageError, match=r"message 1: field 'body': 1001 bytes, over "
                                              r"maxMessageSize 1000") as info:
        _unchanged(store, lambda: store.put_messages(messages))
    assert "\n" not in str(info.value)


def test_the_default_limit_is_4_mib(spark, tmp_path):
    assert MessageStoreConfig().max_message_size == 4 * 1024 * 1024
    s = MessageStore.open(str(tmp_path / "s"), spark)
    with pytest.raises(PutMessageError, match="message 0: field 'body': 10000000 bytes, over "
                                              "maxMessageSize 4194304"):
        s.put_messages([{"topic": "T", "body": b"x" * 10_000_000}])
    assert s.commitlog_state().next_commitlog_offset == 0


def _properties_for(store, wire: int) -> dict:
    """User properties whose message's properties string (with the WAIT and CLUSTER the
    producer and broker add) is ``wire`` bytes long."""
    cluster = store.broker_config.broker_cluster_name
    fixed = len("WAIT") + len("true") + 2 + len("CLUSTER") + len(cluster) + 2 + len("p") + 2
    return {"p": "v" * (wire - fixed)}


def test_a_properties_string_over_32767_bytes_is_refused(store):
    with pytest.raises(PutMessageError, match=rf"message 0: field 'properties': the properties "
                                              rf"string is {MAX_PROPERTIES + 1} bytes, over "
                                              rf"{MAX_PROPERTIES}"):
        _unchanged(store, lambda: store.put_messages(
            [{"topic": "T", "properties": _properties_for(store, MAX_PROPERTIES + 1)}]))
    put = store.put_messages([{"topic": "T", "properties": _properties_for(store, MAX_PROPERTIES)}])
    assert len(put) == 1


def test_dataframe_input_is_held_to_the_same_limits(store, spark):
    big_body = spark.createDataFrame([("T", b"x" * 1001)], "topic string, body binary")
    with pytest.raises(PutMessageError, match=r"topic 'T'.*1001 bytes, over maxMessageSize 1000"):
        _unchanged(store, lambda: store.put_messages(big_body))
    props = _properties_for(store, MAX_PROPERTIES + 1)
    big_props = spark.createDataFrame([("T", props)], "topic string, properties map<string,string>")
    with pytest.raises(PutMessageError, match=rf"topic 'T'.*{MAX_PROPERTIES + 1} bytes, over "
                                              rf"{MAX_PROPERTIES}"):
        _unchanged(store, lambda: store.put_messages(big_props))


@pytest.mark.parametrize("topic", ["SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC"])
def test_a_put_to_a_topic_producers_may_not_send_to_is_refused(store, topic):
    assert topic in NOT_ALLOWED_SEND_TOPICS
    with pytest.raises(PutMessageError, match=rf"message 0: Sending message to topic\[{topic}\] "
                                              r"is forbidden"):
        _unchanged(store, lambda: store.put_messages([{"topic": topic, "body": b"x"}]))
    assert topic not in store.topics()  # not auto-created either
