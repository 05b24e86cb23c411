"""Settings: RocketMQ's names and defaults, loading broker.conf and spark.rocketfilter.* keys, and
topic/group name validation."""
from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from rocketfilter.config import (BrokerConfig, ConfigError, InvalidNameError, MessageStoreConfig, PermName,
                                 SubscriptionGroupConfig, TopicConfig, is_not_allowed_send_topic, is_system_topic,
                                 load_broker_conf, parse_properties, physical_memory, spark_conf_items,
                                 to_properties, validate_group, validate_topic)

CONF = Path(__file__).resolve().parents[1] / "conf" / "broker.conf"


def test_rocketmq_defaults():
    b, s = BrokerConfig(), MessageStoreConfig()
    assert (b.broker_permission, b.enable_calc_filter_bit_map, b.filter_support_retry,
            b.max_error_rate_of_bloom_filter, b.expect_consumer_num_use_filter, b.filter_data_clean_time_span,
            b.auto_create_subscription_group, b.broker_id, b.slave_read_enable) == (
        6, False, False, 20, 32, 86_400_000, True, 0, False)
    assert b.enable_property_filter is True          # the documented deviation (RocketMQ: false)
    assert (s.mapped_file_size_commit_log, s.mapped_file_size_consume_queue, s.max_transfer_bytes_on_message_in_memory,
            s.max_transfer_count_on_message_in_memory, s.max_transfer_bytes_on_message_in_disk,
            s.max_transfer_count_on_message_in_disk, s.access_message_in_memory_max_ratio,
            s.max_filter_message_size, s.enable_consume_queue_ext, s.bit_map_length_consume_queue_ext,
            s.broker_role, s.offset_check_in_slave, s.file_reserved_time) == (
        1073741824, 6_000_000, 262144, 32, 65536, 8, 40, 16000, False, 64, "ASYNC_MASTER", False, 72)
    assert s.total_physical_memory == physical_memory() > 0
    assert (s.consume_queue_file_size, s.consume_queue_file_units) == (6_000_000, 300_000)
    assert MessageStoreConfig(mapped_file_size_consume_queue=1281).consume_queue_file_size == 1300


def test_key_names_are_rocketmqs():
    keys = to_properties(BrokerConfig(), MessageStoreConfig())
    for key in ("enablePropertyFilter", "enableCalcFilterBitMap", "filterSupportRetry", "maxErrorRateOfBloomFilter",
                "expectConsumerNumUseFilter", "filterDataCleanTimeSpan", "brokerPermission", "brokerIP1",
                "autoCreateSubscriptionGroup", "mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue",
                "bitMapLengthConsumeQueueExt", "maxTransferBytesOnMessageInMemory", "accessMessageInMemoryMaxRatio",
                "travelCqFileNumWhenGetMessage", "offsetCheckInSlave", "brokerRole", "fileReservedTime"):
        assert key in keys, key
    assert keys["enablePropertyFilter"] == "true" and keys["brokerRole"] == "ASYNC_MASTER"


def test_example_conf_file_holds_the_defaults():
    broker, store = load_broker_conf(CONF)
    assert broker == BrokerConfig() and store == MessageStoreConfig()
    documented = (CONF.parents[1] / "docs" / "configuration.md").read_text(encoding="utf-8")
    for key in to_properties(BrokerConfig(namesrv_addr="x"), MessageStoreConfig(store_path_commit_log="x")):
        assert f"`{key}`" in documented, f"{key} is not in docs/configuration.md"


def test_load_file_with_types_and_java_syntax(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("# comment\n! also a comment\n\n  enablePropertyFilter = FALSE\nbrokerName:broker-\\\n   b\n"
                    "maxErrorRateOfBloomFilter 10\nfilterDataCleanTimeSpan=3600000\nbrokerRole=SLAVE\n"
                    "storePathRootDir=/data/store\\tx\nnamesrvAddr=\nbrokerName=broker-\\u0063\n")
    broker, store = load_broker_conf(conf)
    assert (broker.enable_property_filter, broker.broker_name, broker.max_error_rate_of_bloom_filter,
            broker.filter_data_clean_time_span, broker.namesrv_addr) == (False, "broker-c", 10, 3600000, None)
    assert (store.broker_role, store.store_path_root_dir) == ("SLAVE", "/data/store\tx")


def test_parse_properties():
    assert parse_properties("a=1\nb = 2 \n  c:3\nd\\\n  e=4\nf\n#g=5\nh=\\=x\\\\") == [
        ("a", "1", 1), ("b", "2 ", 2), ("c", "3", 3), ("de", "4", 4), ("f", "", 6), ("h", "=x\\", 8)]


@pytest.mark.parametrize("text, message", [
    ("enablePropertyFiltre=true", "broker.conf:2: unknown setting 'enablePropertyFiltre' (did you mean "
                                  "'enablePropertyFilter'?)"),
    ("enablePropertyFilter=yes", "broker.conf:2: enablePropertyFilter must be true or false, got 'yes'"),
    ("maxErrorRateOfBloomFilter=2O", "broker.conf:2: maxErrorRateOfBloomFilter must be an integer, got '2O'"),
    ("maxErrorRateOfBloomFilter=100", "broker.conf:2: maxErrorRateOfBloomFilter must be 1..99"),
    ("brokerRole=MASTER", "broker.conf:2: MessageStoreConfig.broker_role must be one of"),
    ("brokerPermission=8", "broker.conf:2: brokerPermission must be 0..7"),
    ("mappedFileSizeCommitLog=4294967296", "broker.conf:2: MessageStoreConfig.mapped_file_size_commit_log = "
                                           "4294967296 is outside Java's int range"),
])
def test_bad_settings_name_key_and_line(tmp_path, text, message):
    conf = tmp_path / "broker.conf"
    conf.write_text("# first line\n" + text + "\n")
    with pytest.raises(ConfigError) as info:
        load_broker_conf(conf)
    assert message in str(info.value)


def test_unknown_keys_can_be_warnings(tmp_path, caplog):
    conf = tmp_path / "broker.conf"
    conf.write_text("sendMessageThreadPoolNums=4\nenablePropertyFilter=false\n")
    with caplog.at_level(logging.WARNING, logger="rocketfilter.config"):
        broker, _ = load_broker_conf(conf, strict=False)
    assert broker.enable_property_filter is False and "sendMessageThreadPoolNums" in caplog.text


def test_spark_conf_keys_override_the_file():
    spark_conf = {"spark.rocketfilter.enablePropertyFilter": "false", "spark.rocketfilter.brokerRole": "SLAVE",
                  "spark.rocketfilter.totalPhysicalMemory": "1024", "spark.sql.shuffle.partitions": "2"}
    broker, store = load_broker_conf(CONF, spark_conf)
    assert (broker.enable_property_filter, store.broker_role, store.total_physical_memory) == (False, "SLAVE", 1024)
    with pytest.raises(ConfigError, match=r"Spark conf spark\.rocketfilter\.brokerRoll: unknown setting"):
        load_broker_conf(spark_conf={"spark.rocketfilter.brokerRoll": "SLAVE"})


def test_spark_conf_sources():
    class SparkConfLike:
        def getAll(self):
            return [("spark.rocketfilter.brokerId", "1"), ("spark.app.name", "x")]

    class RuntimeConfigLike:
        getAll = {"spark.rocketfilter.brokerId": "2"}

    class SessionLike:
        conf = RuntimeConfigLike()

    assert spark_conf_items(SparkConfLike()) == {"brokerId": "1"}
    assert spark_conf_items(SessionLike()) == {"brokerId": "2"}
    assert spark_conf_items(None) == {}
    assert load_broker_conf(spark_conf=SparkConfLike())[0].broker_id == 1


def test_dataclasses_check_types():
    with pytest.raises(ConfigError, match="must be a bool"):
        BrokerConfig(enable_property_filter="false")
    with pytest.raises(ConfigError, match="must be an int"):
        MessageStoreConfig(max_filter_message_size=1.5)
    assert dataclasses.replace(BrokerConfig(), broker_id=3).broker_id == 3


@pytest.mark.parametrize("topic", ["TopicTest", "iot_sensor-metrics", "%RETRY%G", "a|b", "x" * 127,
                                   "%RETRY%" + "g" * 248, "SCHEDULE_TOPIC_XXXX"])
def test_valid_topics(topic):
    assert validate_topic(topic) == topic
    assert TopicConfig(topic).topic_name == topic


@pytest.mark.parametrize("topic, why", [
    ("", "blank"), ("   ", "blank"), (None, "blank"), ("../etc", "illegal characters"), ("a/b", "illegal characters"),
    ("a.b", "illegal characters"), ("温度", "illegal characters"), ("x" * 128, "longer than topic max length: 127"),
    ("%DLQ%" + "g" * 251, "max length: 255"),
])
def test_invalid_topics(topic, why):
    with pytest.raises(InvalidNameError, match=why) as info:
        validate_topic(topic)
    assert repr(topic)[:20] in str(info.value) or topic is None


def test_groups_and_system_names():
    assert validate_group("g" * 120)
    with pytest.raises(InvalidNameError, match="longer than group max length: 120"):
        validate_group("g" * 121)
    with pytest.raises(InvalidNameError, match="illegal"):
        SubscriptionGroupConfig("a b")
    assert is_system_topic("rmq_sys_x") and is_system_topic("TBW102") and not is_system_topic("T")
    assert is_not_allowed_send_topic("SCHEDULE_TOPIC_XXXX") and not is_not_allowed_send_topic("TBW102")


def test_topic_config():
    t = TopicConfig("T")
    assert (t.read_queue_nums, t.write_queue_nums, t.perm, t.topic_filter_type) == (4, 4, 6, "SINGLE_TAG")
    with pytest.raises(ConfigError, match="perm"):
        TopicConfig("T", perm=9)
    with pytest.raises(ConfigError, match="read_queue_nums"):
        TopicConfig("T", read_queue_nums=-1)


def test_perm_name():
    assert (PermName.PERM_READ, PermName.PERM_WRITE, PermName.PERM_INHERIT) == (4, 2, 1)
    assert PermName.is_readable(6) and PermName.is_writeable(6) and not PermName.is_readable(2)
    assert [PermName.perm2string(p) for p in (6, 4, 2, 7, 0)] == ["RW-", "R--", "-W-", "RWX", "---"]
    assert PermName.is_valid(7) and not PermName.is_valid(8) and not PermName.is_valid(-1)
