"""The store and the pulls on a Spark Connect session answer exactly as on the classic one.

One small store is written through Spark Connect (puts from a list and from a DataFrame, with
bloom bitmaps for a SQL92 group) and the same messages through the classic session into a
mirror store: both must hold the same rows. Every pull then runs on both sessions over the
Connect-written store, and the answers (statuses, next_begin_offsets, delivered offsets and
messages) must be equal. Stores a test damages or expires are copies.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
from types import SimpleNamespace

import pytest

from rocketfilter.config import BrokerConfig, MessageStoreConfig
from rocketfilter.pull.broker import Broker, PullMessageRequestHeader, ResponseCode
from rocketfilter.pull.client import MessageQueue, PullConsumer
from rocketfilter.pull.filter import ExpressionMessageFilter
from rocketfilter.pull.result import GetMessageStatus
from rocketfilter.pull.sequence import pull_sequence
from rocketfilter.spark_mode import is_connect, restore_conf, set_conf
from rocketfilter.store import MessageStore
from rocketfilter.store.errors import StoreDamagedError, StoreNotFoundError
from rocketfilter.tags import build_subscription
from tests.connect.modes import classic_mode, connect_mode
from tests.test_replay_job import job

pytestmark = pytest.mark.connect

TOPIC, RETRY = "Orders", "%RETRY%R"  # R: the retry group
# Commit-log "files" of 1,000 bytes (messages are ~150), so expire has whole files to drop.
CONFIG = dict(mapped_file_size_commit_log=1000)
BROKER = dict(enable_calc_filter_bit_map=True, filter_support_retry=True)
LISTED = [{"topic": TOPIC, "tags": ("TagA", "TagB", "Aa", "BB")[i % 4], "keys": f"k{i}",
           "properties": {"a": str(i % 4), "n": str(i)}, "body": f"body {i}"} for i in range(24)]
# A retry message without RETRY_TOPIC: the retry filter fails its pull as RocketMQ's NPE does.
LISTED.append({"topic": RETRY, "properties": {"a": "3"}, "body": "retry"})
FRAMED = [(TOPIC, "TagC" if i % 2 else "TagA", i % 2, {"a": str(i), "n": str(100 + i)}, b"df %d" % i)
          for i in range(8)]
FRAMED_SCHEMA = "topic string, tags string, queue_id int, properties map<string,string>, body binary"


def _open(path, spark, create=True) -> MessageStore:
    return MessageStore.open(path, spark, MessageStoreConfig(**CONFIG), broker_config=BrokerConfig(**BROKER),
                             create=create)


def _fill(store: MessageStore) -> dict:
    """Topics, a SQL92 group (before the messages, so they get bitmaps) and two puts."""
    store.create_topic(TOPIC, read_queue_nums=3, write_queue_nums=2)  # queue 2: readable, never written
    store.create_topic(RETRY, read_queue_nums=1, write_queue_nums=1)
    store.filter_manager.register(TOPIC, "G", "a > 1", "SQL92", 1)
    listed = store.put_messages(LISTED)
    framed = store.put_messages(store.spark.createDataFrame(FRAMED, FRAMED_SCHEMA))
    return {"listed": listed, "framed": sorted(framed.collect())}


@pytest.fixture(scope="module")
def stores(spark, _connect_session, tmp_path_factory):
    """The Connect-written store, open on both sessions, and the classic-written mirror."""
    root = tmp_path_factory.mktemp("connect_store")
    with connect_mode(True):
        written = _open(str(root / "store"), _connect_session)
        put_connect = _fill(written)
    with classic_mode():
        mirror = _open(str(root / "mirror"), spark)
        put_classic = _fill(mirror)
        classic = _open(str(root / "store"), spark)
    return SimpleNamespace(path=str(root / "store"), connect=written, classic=classic, mirror=mirror,
                           put_connect=put_connect, put_classic=put_classic)


def both(stores, call):
    """``call(store)`` on the Connect session, then on the classic one: (connect, classic)."""
    with connect_mode(True):
        got = call(stores.connect)
    with classic_mode():
        return got, call(stores.classic)


def _answer(result) -> tuple:
    messages = [(m["queue_offset"], m["msg_id"], m["tags"], m["body"], sorted(m["properties"].items()))
                for m in result.messages]
    return (result.status, result.next_begin_offset, result.min_offset, result.max_offset,
            result.message_queue_offsets, result.buffer_total_size, result.filter_message_count,
            result.suggest_pulling_from_slave, dataclasses.asdict(result.funnel), messages)


def _plain(value):
    return tuple(sorted(value.items())) if isinstance(value, dict) else value


def _rows(df, drop=()) -> list:
    """The rows as sorted tuples of (column, value), without the columns ``drop``."""
    return sorted(tuple(sorted((k, _plain(v)) for k, v in r.asDict().items() if k not in drop))
                  for r in df.collect())


def test_the_session_is_a_connect_one(stores, connect_spark):
    assert is_connect(stores.connect.spark) and not is_connect(stores.classic.spark)


def test_put_and_dispatch_write_what_the_classic_session_writes(stores, connect_spark):
    assert stores.put_connect == stores.put_classic
    assert [r["queue_id"] for r in stores.put_connect["listed"][:4]] == [0, 1, 0, 1]  # round robin
    timed = ("store_timestamp", "born_timestamp")  # when the put ran
    with connect_mode(True):
        connect = {name: _rows(stores.connect.table(name).read(connect_spark), timed)
                   for name in ("commitlog", "consumequeue")}
        assert stores.connect.dispatch().entries == 0  # nothing left to dispatch
    with classic_mode():
        mirror = {name: _rows(stores.mirror.table(name).read(stores.mirror.spark), timed)
                  for name in ("commitlog", "consumequeue")}
    assert connect == mirror and len(connect["commitlog"]) == len(LISTED) + len(FRAMED)
    assert any(dict(r)["filter_bitmap"] is not None for r in connect["consumequeue"])  # bitmaps made
    assert stores.connect.consumequeue_state().queues == stores.mirror.consumequeue_state().queues
    assert stores.connect.commitlog_state().to_metadata() == stores.mirror.commitlog_state().to_metadata()


def _filters(stores) -> dict:
    manager = stores.connect.filter_manager
    sql = build_subscription(TOPIC, "a > 1", "SQL92")
    return {
        "none": None,
        "tag": ExpressionMessageFilter(build_subscription(TOPIC, "TagA || BB")),  # BB: Aa's tag code
        "sql92 with bitmaps": ExpressionMessageFilter(sql, manager.get(TOPIC, "G"), manager),
        "sql92 without": ExpressionMessageFilter(sql, manager.build(TOPIC, "H", "a > 1 AND n < 20", "SQL92", 1)),
    }


@pytest.mark.parametrize("kind", ["none", "tag", "sql92 with bitmaps", "sql92 without"])
def test_get_message_answers_as_on_the_classic_session(stores, connect_spark, kind):
    message_filter = _filters(stores)[kind]
    if kind == "sql92 with bitmaps":
        assert message_filter.uses_bitmap
    pulls = [(0, 0, 32), (0, 3, 4), (1, 11, 1), (1, 16, 32), (2, 0, 8), (0, 17, 32)]  # to and past the end
    statuses = []
    for queue_id, offset, max_nums in pulls:
        connect, classic = both(stores, lambda s: _answer(
            s.get_message("G", TOPIC, queue_id, offset, max_nums, message_filter)))
        assert connect == classic, (queue_id, offset, max_nums)
        statuses.append(connect[0])
    assert GetMessageStatus.FOUND in statuses
    assert statuses[-2:] == [GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.OFFSET_OVERFLOW_BADLY]


def test_a_pull_result_dataframe_belongs_to_its_session(stores, connect_spark):
    message_filter = _filters(stores)["tag"]
    connect, classic = both(stores, lambda s: s.get_message("G", TOPIC, 0, 0, 32, message_filter).dataframe)
    assert is_connect(connect) and not is_connect(classic)
    assert _rows(connect) == _rows(classic) and connect.count() > 0


def test_a_refused_setting_is_skipped_and_the_session_restored(stores, connect_spark, monkeypatch):
    """A server that refuses a setting (Databricks serverless allows only some) still answers the
    pull; the settings it took are put back, and the refused one is not asked again."""
    from rocketfilter import spark_mode
    from rocketfilter.pull import scan

    refused = "spark.sql.warehouse.dir"  # static: every session refuses to change it
    monkeypatch.setattr(scan, "SMALL_QUERY_CONF", {refused: "/elsewhere", **scan.SMALL_QUERY_CONF})
    kept = "spark.sql.files.minPartitionNum"
    message_filter = _filters(stores)["sql92 without"]
    for session in (stores.connect.spark, stores.classic.spark):
        spark_mode._REFUSED.pop(session, None)
        session.conf.set(kept, "3")
    try:
        connect, classic = both(stores, lambda s: _answer(s.get_message("G", TOPIC, 1, 0, 32, message_filter)))
        assert connect == classic
        for session in (stores.connect.spark, stores.classic.spark):
            assert spark_mode._REFUSED[session] == {refused}
            assert session.conf.get(kept) == "3"
            assert session.conf.get("spark.sql.codegen.wholeStage") == "true"  # unset again: the default
    finally:
        for session in (stores.connect.spark, stores.classic.spark):
            session.conf.unset(kept)
            spark_mode._REFUSED.pop(session, None)


def test_set_conf_reads_sets_and_restores_in_both_modes(stores, connect_spark):
    values = {"spark.sql.files.minPartitionNum": "1", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    for session in (stores.connect.spark, stores.classic.spark):
        session.conf.set("spark.sql.files.minPartitionNum", "5")
        previous = set_conf(session, values)
        assert previous == {"spark.sql.files.minPartitionNum": "5", "spark.sql.codegen.factoryMode": None}
        assert {k: session.conf.get(k) for k in values} == values
        restore_conf(session, previous)
        assert session.conf.get("spark.sql.files.minPartitionNum") == "5"
        assert session.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"  # the default again
        session.conf.unset("spark.sql.files.minPartitionNum")


@pytest.mark.parametrize("kind", ["tag", "sql92 with bitmaps"])
def test_pull_sequence_answers_as_on_the_classic_session(stores, connect_spark, kind):
    message_filter = _filters(stores)[kind]
    for output in ("entries", "pulls"):
        connect, classic = both(stores, lambda s: _rows(
            pull_sequence(s, TOPIC, message_filter, max_msg_nums=4, start_offsets={1: 3}, output=output)))
        assert connect == classic and connect, output


def test_broker_and_pull_consumer_answer_as_on_the_classic_session(stores, connect_spark):
    def pulls(store):
        consumer = PullConsumer(Broker(store), "C", client_id="c1")
        found = []
        for expression, kind in (("TagA || Aa", "TAG"), ("a > 1 AND n < 20", "SQL92")):
            consumer.subscribe(TOPIC, expression, kind)
            for queue_id in (0, 1, 2):
                r = consumer.pull(MessageQueue(TOPIC, "broker-a", queue_id), 2, 8)
                found.append((str(r.pull_status), r.next_begin_offset, r.min_offset, r.max_offset,
                              [m["msg_id"] for m in r.msg_found_list]))
        return found
    connect, classic = both(stores, pulls)
    assert connect == classic and any(f[4] for f in connect)


def test_the_retry_filter_npe_is_translated_on_connect(stores, connect_spark):
    """The Spark job of a retry pull fails on a message without RETRY_TOPIC; the Connect error,
    like the classic one, becomes RocketMQ's SYSTEM_ERROR with the NPE text."""
    def pull(store):
        broker = Broker(store)
        broker.register_consumer("R", "c1", [(RETRY, "a > 1", "SQL92")])
        response = broker.pull_message(PullMessageRequestHeader("R", RETRY, 0, 0))
        return response.code, response.remark
    connect, classic = both(stores, pull)
    assert connect == classic
    assert connect[0] == ResponseCode.SYSTEM_ERROR and "NullPointerException" in connect[1]


def test_the_replay_job_answers_as_on_the_classic_session(stores, connect_spark):
    def replay(store):
        sub = job.subscription(SimpleNamespace(group="G", topic=TOPIC, sql="a > 1", tags=None))
        delivered, pulls = job.replay(store, sub, "G", 4)
        counts = {r["queue_id"]: r["count"] for r in delivered.groupBy("queue_id").count().collect()}
        return (_rows(delivered), _rows(pulls),
                job.summary_lines(store, sub, counts, pulls))
    connect, classic = both(stores, replay)
    assert connect == classic and connect[0]


def test_table_frames_are_kept_per_session(stores, connect_spark):
    """One Table serves both sessions: each gets DataFrames of its own kind, reused."""
    table = stores.connect.commitlog
    with connect_mode(True):
        remote = table.read(connect_spark, [("queue_id", "=", 0)])
        assert table.read(connect_spark) is table.read(connect_spark)
    with classic_mode():
        local = table.read(stores.classic.spark, [("queue_id", "=", 0)])
        assert table.read(stores.classic.spark) is table.read(stores.classic.spark)
        assert not is_connect(local) and local.count() > 0
    assert is_connect(remote)
    assert remote.count() == local.count()


def test_open_refuses_a_path_without_a_store(connect_spark, tmp_path):
    with pytest.raises(StoreNotFoundError, match="no rocketfilter store at"):
        _open(str(tmp_path / "typo"), connect_spark, create=False)


def _copy(stores, tmp_path) -> str:
    target = str(tmp_path / "copy")
    shutil.copytree(stores.path, target)
    return target


def test_expire_compact_and_vacuum_on_connect(stores, connect_spark, tmp_path):
    path = _copy(stores, tmp_path)
    with connect_mode(True):
        store = _open(path, connect_spark)
        end = store.commitlog_state().next_commitlog_offset
        report = store.expire(before_commitlog_offset=end // 2, clean_consume_queue=False)
        assert report.commitlog_files_removed >= 1
    with classic_mode():
        classic = _open(path, stores.classic.spark)
    pair = SimpleNamespace(connect=store, classic=classic)
    pulls = [(q, o) for q in (0, 1) for o in (0, 5, 12)]
    removing, classic_removing = both(pair, lambda s: [_answer(s.get_message("G", TOPIC, q, o, 4)) for q, o in pulls])
    assert removing == classic_removing
    assert GetMessageStatus.MESSAGE_WAS_REMOVING in {a[0] for a in removing}
    with connect_mode(True):
        store.expire(before_commitlog_offset=end // 2)  # the consume queues follow
        store.compact()
        assert store.vacuum(0, enforce_retention_duration=False)
    cleaned, classic_cleaned = both(pair, lambda s: [_answer(s.get_message("G", TOPIC, q, o, 4)) for q, o in pulls])
    assert cleaned == classic_cleaned and GetMessageStatus.OFFSET_TOO_SMALL in {a[0] for a in cleaned}


def test_a_lost_data_file_is_named_on_connect(stores, connect_spark, tmp_path):
    """Spark Connect's read error is translated as the classic one: StoreDamagedError."""
    path = _copy(stores, tmp_path)
    with connect_mode(True):
        store = _open(path, connect_spark)
    with classic_mode():
        classic = _open(path, stores.classic.spark)
    lost = store.commitlog.files()[0].path
    os.remove(lost[len("file://"):])
    with connect_mode(True), pytest.raises(StoreDamagedError, match="lost 1 data file"):
        store.get_message("G", TOPIC, 0, 0, 32)
    with classic_mode(), pytest.raises(StoreDamagedError, match="lost 1 data file"):
        classic.get_message("G", TOPIC, 0, 0, 32)
