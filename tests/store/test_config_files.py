"""A broker's config/*.json files come with its store: read in RocketMQ's (fastjson) shapes, checked,
imported, and written back from a store's state."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rocketfilter.bloom import BloomFilter
from rocketfilter.store import MessageStore
from rocketfilter.store.config_files import (ConfigFileError, dumps_fastjson, export_broker_config,
                                             loads_fastjson, read_broker_config, subscription_groups)
from rocketfilter.broker_files.records import encode_cq_unit, encode_record
from rocketfilter.tags import tags_code

GROUP = "please_rename_unique_group_name_4"
BITS = BloomFilter(20, 32).bloom_data("GID_SQL", "TopicTest").bit_pos

# As a 5.x broker writes them (RemotingSerializable.toJson(this, true): fastjson, tab indents,
# sorted keys, bare numbers as the keys of Map<Integer, Long>).
CONSUMER_OFFSET = """{
\t"dataVersion":{
\t\t"counter":12,
\t\t"stateVersion":0,
\t\t"timestamp":1714557600000
\t},
\t"offsetTable":{
\t\t"TopicTest@%(group)s":{0:250,1:251,2:250,3:249
\t\t},
\t\t"%%RETRY%%%(group)s@%(group)s":{0:3
\t\t},
\t\t"RMQ_SYS_TRANS_HALF_TOPIC@CID_RMQ_SYS_TRANS":{0:26
\t\t}
\t}
}""" % {"group": GROUP}

TOPICS = """{
\t"dataVersion":{
\t\t"counter":7,
\t\t"stateVersion":0,
\t\t"timestamp":1714557600000
\t},
\t"topicConfigTable":{
\t\t"SCHEDULE_TOPIC_XXXX":{
\t\t\t"attributes":{},
\t\t\t"order":false,
\t\t\t"perm":6,
\t\t\t"readQueueNums":18,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"SCHEDULE_TOPIC_XXXX",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":18
\t\t},
\t\t"TopicTest":{
\t\t\t"attributes":{},
\t\t\t"order":false,
\t\t\t"perm":6,
\t\t\t"readQueueNums":8,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"TopicTest",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":8
\t\t},
\t\t"%RETRY%please_rename_unique_group_name_4":{
\t\t\t"attributes":{},
\t\t\t"order":false,
\t\t\t"perm":6,
\t\t\t"readQueueNums":1,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"%RETRY%please_rename_unique_group_name_4",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":1
\t\t},
\t\t"DefaultCluster":{
\t\t\t"attributes":{},
\t\t\t"order":false,
\t\t\t"perm":7,
\t\t\t"readQueueNums":16,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"DefaultCluster",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":16
\t\t}
\t}
}"""

SUBSCRIPTION_GROUP = """{
\t"dataVersion":{
\t\t"counter":2,
\t\t"stateVersion":0,
\t\t"timestamp":1714557600000
\t},
\t"forbiddenTable":{},
\t"subscriptionGroupTable":{
\t\t"%(group)s":{
\t\t\t"attributes":{},
\t\t\t"brokerId":0,
\t\t\t"consumeBroadcastEnable":true,
\t\t\t"consumeEnable":true,
\t\t\t"consumeFromMinEnable":true,
\t\t\t"consumeMessageOrderly":false,
\t\t\t"consumeTimeoutMinute":15,
\t\t\t"groupName":"%(group)s",
\t\t\t"groupRetryPolicy":{
\t\t\t\t"type":"CUSTOMIZED"
\t\t\t},
\t\t\t"groupSysFlag":0,
\t\t\t"notifyConsumerIdsChangedEnable":true,
\t\t\t"retryMaxTimes":3,
\t\t\t"retryQueueNums":1,
\t\t\t"whichBrokerWhenConsumeSlowly":1
\t\t}
\t}
}""" % {"group": GROUP}

CONSUMER_FILTER = """{
\t"filterDataByTopic":{
\t\t"TopicTest":{
\t\t\t"groupFilterData":{
\t\t\t\t"GID_SQL":{
\t\t\t\t\t"bloomFilterData":{
\t\t\t\t\t\t"bitNum":112,
\t\t\t\t\t\t"bitPos":[%(bits)s]
\t\t\t\t\t},
\t\t\t\t\t"bornTime":1714557600000,
\t\t\t\t\t"clientVersion":1714557600000,
\t\t\t\t\t"consumerGroup":"GID_SQL",
\t\t\t\t\t"deadTime":0,
\t\t\t\t\t"expression":"region = 'eu' AND amount > 100",
\t\t\t\t\t"expressionType":"SQL92",
\t\t\t\t\t"topic":"TopicTest"
\t\t\t\t}
\t\t\t},
\t\t\t"topic":"TopicTest"
\t\t}
\t}
}""" % {"bits": ",".join(map(str, BITS))}

SAMPLES = {"consumerOffset.json": CONSUMER_OFFSET, "topics.json": TOPICS,
           "subscriptionGroup.json": SUBSCRIPTION_GROUP, "consumerFilter.json": CONSUMER_FILTER}


def broker_store(root: Path, config: dict = SAMPLES, where: str = "config") -> Path:
    """A tiny broker store: two messages of TopicTest (queues 0 and 3) and their units, plus
    ``config`` files under ``where`` ("config" as a broker keeps them, "" beside commitlog/)."""
    (root / "commitlog").mkdir(parents=True)
    records, offset = [], 0
    for queue in (0, 3):
        raw = encode_record(topic="TopicTest", queue_id=queue, queue_offset=0, commitlog_offset=offset,
                            body=b"hi", properties={"TAGS": "TagA"}, store_timestamp=1714557600000)
        cq = root / "consumequeue" / "TopicTest" / str(queue)
        cq.mkdir(parents=True)
        (cq / f"{0:020d}").write_bytes(encode_cq_unit(offset, len(raw), tags_code("TagA")))
        records.append(raw)
        offset += len(raw)
    (root / "commitlog" / f"{0:020d}").write_bytes(b"".join(records).ljust(4096, b"\0"))
    target = root / where
    target.mkdir(exist_ok=True)
    for name, text in config.items():
        (target / name).write_text(text, encoding="utf-8")
    return root


def test_fastjson_text_round_trips():
    text = '{"t@g":{0:1, 12 :2},"s":"{0:1,\\"x\\"}","n":[1,{3:4}]}'
    assert loads_fastjson(text) == {"t@g": {"0": 1, "12": 2}, "s": '{0:1,"x"}', "n": [1, {"3": 4}]}
    value = {"offsetTable": {"T@G": {0: 5, 10: 7}}, "name": "{1:2}"}
    written = dumps_fastjson(value)
    assert '{\n\t\t\t0:5,\n\t\t\t10:7\n\t\t}' in written and '"name":"{1:2}"' in written
    assert loads_fastjson(written) == {"offsetTable": {"T@G": {"0": 5, "10": 7}}, "name": "{1:2}"}


@pytest.mark.parametrize("where", ["config", ""])
def test_the_samples_are_read_and_checked(tmp_path, where):
    files = read_broker_config(str(broker_store(tmp_path, where=where)))
    prefix = "config/" if where else ""
    assert files.found == {name: prefix + name for name in SAMPLES}
    assert files.offsets[(GROUP, "TopicTest", 1)] == 251
    assert files.offsets[(GROUP, "%RETRY%" + GROUP, 0)] == 3
    assert len(files.offsets) == 6
    assert (files.topics["TopicTest"].read_queue_nums, files.topics["DefaultCluster"].perm) == (8, 7)
    assert files.subscription_groups[GROUP]["retryMaxTimes"] == 3
    assert "GID_SQL" in files.filter_text and not files.skipped


@pytest.mark.parametrize("name, text, message", [
    ("consumerOffset.json", '{"offsetTable":{"TopicTest@G":{0:250,', "consumerOffset.json: not valid JSON"),
    ("consumerOffset.json", '{"dataVersion":{}}', "consumerOffset.json: no offsetTable object"),
    ("consumerOffset.json", '{"offsetTable":{"TopicTest":{0:1}}}',
     r"offsetTable\['TopicTest'\]: the key is not topic@group"),
    ("consumerOffset.json", '{"offsetTable":{"T@G":{0:-4}}}', r"offsetTable\['T@G'\]\[0\] must be an integer from 0"),
    ("consumerOffset.json", '{"offsetTable":{"T@G":{"a":1}}}', "queue id 'a' is not an integer"),
    ("consumerOffset.json", '{"offsetTable":{"T/x@G":{0:1}}}', "contains illegal characters"),
    ("topics.json", '{"topicConfigTable":{"T":{"readQueueNums":0}}}', r"topicConfigTable\['T'\].readQueueNums must be"),
    ("topics.json", '{"topicConfigTable":{"T":{"topicName":"U"}}}', "topicName 'U' differs from its key"),
    ("topics.json", '{"topicConfigTable":{"T":{"topicFilterType":"ANY"}}}', "topic_filter_type must be SINGLE_TAG"),
    ("subscriptionGroup.json", '{"subscriptionGroupTable":{"G":{"consumeEnable":"yes"}}}',
     "consumeEnable must be bool"),
    ("subscriptionGroup.json", '{"subscriptionGroupTable":[]}', "subscriptionGroupTable is not an object"),
    ("consumerFilter.json", '{"filterDataByTopic":{"T":{"groupFilterData":{"G":{"topic":"T"}}}}}',
     "consumerFilter.json: consumer filter data is not valid consumerFilter.json"),
])
def test_a_malformed_file_is_one_line_naming_it(tmp_path, name, text, message):
    root = broker_store(tmp_path, {**SAMPLES, name: text})
    with pytest.raises(ConfigFileError, match=message) as info:
        read_broker_config(str(root))
    assert str(info.value).startswith(f"config/{name}: ") and "\n" not in str(info.value)
    files = read_broker_config(str(root), skip_damaged=True)
    assert name not in files.found and files.skipped[name] == str(info.value)
    assert set(files.found) == set(SAMPLES) - {name}


def test_broadcast_offsets_of_a_5x_broker_are_read_and_left_out(tmp_path):
    """RocketMQ 5.3.3 (tests/broker) writes topic@group@broadcast keys for BROADCASTING groups."""
    text = '{"offsetTable":{"T@G":{0:4},"T@GB@broadcast":{0:2,1:3}}}'
    files = read_broker_config(str(broker_store(tmp_path, {**SAMPLES, "consumerOffset.json": text})))
    assert files.offsets == {("G", "T", 0): 4}
    with pytest.raises(ConfigFileError, match="the key is not topic@group"):
        read_broker_config(str(broker_store(tmp_path / "x", {**SAMPLES, "consumerOffset.json":
                                                             '{"offsetTable":{"T@G@other":{0:1}}}'})))


def test_the_own_topics_of_a_machine_room_broker_are_left_out(tmp_path):
    """A 5.3.3 broker named hz@broker-a writes topics with '@' in topics.json (tests/broker)."""
    text = ('{"topicConfigTable":{"T":{"readQueueNums":2,"writeQueueNums":2},'
            '"rmq_sys_SYNC_BROKER_MEMBER_hz@broker-a":{},"hz@broker-a":{}}}')
    files = read_broker_config(str(broker_store(tmp_path, {**SAMPLES, "topics.json": text})))
    assert set(files.topics) == {"T"}


def test_a_missing_or_empty_file_falls_back_to_its_backup_as_a_broker_does(tmp_path):
    root = broker_store(tmp_path, {**SAMPLES, "topics.json": "", "consumerOffset.json.bak": CONSUMER_OFFSET})
    (root / "config" / "consumerOffset.json").unlink()
    (root / "config" / "topics.json.bak").write_text(TOPICS)
    files = read_broker_config(str(root))
    assert files.found["consumerOffset.json"] == "config/consumerOffset.json.bak"
    assert files.found["topics.json"] == "config/topics.json.bak"
    # a damaged file is skipped for its backup too, when damage may be skipped
    (root / "config" / "subscriptionGroup.json.bak").write_text(SUBSCRIPTION_GROUP)
    (root / "config" / "subscriptionGroup.json").write_text("{oops")
    files = read_broker_config(str(root), skip_damaged=True)
    assert files.found["subscriptionGroup.json"] == "config/subscriptionGroup.json.bak"
    assert "subscriptionGroup.json" not in files.skipped


@pytest.fixture(scope="module")
def imported(spark, tmp_path_factory):
    root = broker_store(tmp_path_factory.mktemp("broker") / "store")
    store = MessageStore.open(str(tmp_path_factory.mktemp("target") / "s"), spark)
    report = store.import_store(str(root))
    return store, report


def test_import_brings_offsets_topics_groups_and_filter_data(imported):
    store, report = imported
    assert report.messages == 2 and set(report.config.imported) == set(SAMPLES)
    assert not report.config.skipped
    assert [store.query_consumer_offset(GROUP, "TopicTest", q) for q in range(4)] == [250, 251, 250, 249]
    assert store.query_consumer_offset("CID_RMQ_SYS_TRANS", "RMQ_SYS_TRANS_HALF_TOPIC", 0) == 26
    # topics.json wins over the queue count consumequeue/ suggests (TopicTest/3: 4 queues)
    assert store.topic_config("TopicTest").read_queue_nums == 8
    assert store.topic_config("SCHEDULE_TOPIC_XXXX").write_queue_nums == 18
    assert subscription_groups(store)[GROUP].retry_max_times == 3
    data = store.filter_manager.get("TopicTest", "GID_SQL")
    assert data.expression == "region = 'eu' AND amount > 100" and data.bloom_filter_data.bit_pos == BITS
    assert data.compiled is not None and data.is_dead()   # as after a broker restart: until a heartbeat


def test_a_store_round_trips_through_broker_config_files(imported, spark, tmp_path):
    store, _ = imported
    store.commit_consumer_offset("GID_SQL", "TopicTest", 7, 12)
    store.create_topic("OrderEvents", 2, 2)
    export_broker_config(store, str(tmp_path / "broker"))
    shutil.copytree(broker_store(tmp_path / "data", {}) / "commitlog", tmp_path / "broker" / "commitlog")
    again = MessageStore.open(str(tmp_path / "again"), spark)
    report = again.import_store(str(tmp_path / "broker"))
    assert set(report.config.imported) == set(SAMPLES)
    assert again.topics() == store.topics()
    from rocketfilter.store.offsets import consumer_offsets
    assert consumer_offsets(again) == consumer_offsets(store)
    assert subscription_groups(again) == subscription_groups(store)
    assert (loads_fastjson(again.read_config("consumerFilter.json"))
            == loads_fastjson(store.read_config("consumerFilter.json")))


def test_the_import_job_names_a_malformed_file_and_skips_it_when_told(tmp_path, capsys, spark, monkeypatch):
    import importlib.util

    from rocketfilter.jobs import common

    monkeypatch.setattr(common, "PROGRESS_OPTIONS", {"delay": 0})  # the progress line, however fast

    spec = importlib.util.spec_from_file_location(
        "import_store_job", Path(__file__).parents[2] / "spark_jobs" / "import_store.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    root = broker_store(tmp_path / "broker", {**SAMPLES, "topics.json": '{"topicConfigTable":{"T":{"perm":9}}}'})
    assert job.main(["--store", str(tmp_path / "a"), "--source", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("import_store.py: error: ConfigFileError: config/topics.json: ") and "\n" not in err
    assert job.main(["--store", str(tmp_path / "b"), "--source", str(root), "--skip-damaged"]) == 0
    out, err = capsys.readouterr()
    assert "topics.json: skipped: config/topics.json: topicConfigTable['T'].perm must be" in out
    assert re.fullmatch(r"import: 1 files in \d+:\d\d \([\d.,]+ files/s\)\n", err), err
    assert "consumerOffset.json: 6 committed offsets of 2 groups" in out
