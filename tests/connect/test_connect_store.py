"""The store and the pulls on a Spark Connect session answer exactly as on the classic one.

The Connect-written store (tests/connect/conftest.py) must hold the rows the classic session
writes for the same puts; every pull then runs on both sessions over it, and the answers
(statuses, next_begin_offsets, delivered offsets and messages) must be equal. ``pull_sequence``
runs in the replay job's test (test_connect_reads.py).
"""
from __future__ import annotations

import json
import os

import pytest

from rocketfilter.pull.broker import Broker, PullMessageRequestHeader, ResponseCode
from rocketfilter.pull.client import MessageQueue, PullConsumer
from rocketfilter.pull.filter import ExpressionMessageFilter
from rocketfilter.pull.result import GetMessageStatus
from rocketfilter.spark_mode import is_connect, restore_conf, set_conf
from rocketfilter.store.errors import StoreDamagedError, StoreNotFoundError
from rocketfilter.tags import build_subscription
from tests.connect.conftest import MESSAGES, RETRY, TOPIC, answer, both, copy_store, open_store, rows
from tests.connect.modes import classic_mode, connect_mode

pytestmark = pytest.mark.connect


def test_put_and_dispatch_write_what_the_classic_session_writes(stores, connect_spark):
    assert is_connect(stores.connect.spark) and not is_connect(stores.classic.spark)
    assert stores.put_connect == stores.put_classic and len(stores.put_connect) == len(MESSAGES)
    timed = ("store_timestamp", "born_timestamp")  # when the put ran
    with connect_mode(True):
        connect = {name: rows(stores.connect.table(name).read(connect_spark), timed)
                   for name in ("commitlog", "consumequeue")}
        assert stores.connect.dispatch().entries == 0  # nothing left to dispatch
    with classic_mode():
        mirror = {name: rows(stores.mirror.table(name).read(stores.mirror.spark), timed)
                  for name in ("commitlog", "consumequeue")}
    assert connect == mirror and len(connect["commitlog"]) == len(MESSAGES)
    assert [dict(r)["queue_id"] for r in sorted(connect["commitlog"], key=lambda r: dict(r)["commitlog_offset"])][
        :4] == [0, 1, 0, 1]  # round robin
    assert any(dict(r)["filter_bitmap"] is not None for r in connect["consumequeue"])  # bitmaps made
    assert stores.connect.consumequeue_state().queues == stores.mirror.consumequeue_state().queues
    states = [{k: json.loads(v) for k, v in s.commitlog_state().to_metadata().items()}  # key order aside
              for s in (stores.connect, stores.mirror)]
    assert states[0] == states[1]


def _filters(stores) -> dict:
    manager = stores.connect.filter_manager
    sql = build_subscription(TOPIC, "a > 1", "SQL92")
    return {
        "none": None,
        "tag": ExpressionMessageFilter(build_subscription(TOPIC, "TagA || BB")),  # BB: Aa's tag code
        "sql92 with bitmaps": ExpressionMessageFilter(sql, manager.get(TOPIC, "G"), manager),
        "sql92 without": ExpressionMessageFilter(sql, manager.build(TOPIC, "H", "a > 1 AND n < 20", "SQL92", 1)),
    }


def test_get_message_answers_as_on_the_classic_session(stores, connect_spark):
    filters = _filters(stores)
    assert filters["sql92 with bitmaps"].uses_bitmap
    pulls = [(0, 3, 4), (1, 11, 1), (2, 0, 8), (0, 17, 32)]  # the last two: an empty queue, past the end
    statuses = set()
    for kind in ("none", "tag", "sql92 with bitmaps"):
        for queue_id, offset, max_nums in pulls if kind == "none" else pulls[:1]:
            connect, classic = both(stores, lambda s: answer(
                s.get_message("G", TOPIC, queue_id, offset, max_nums, filters[kind])))
            assert connect == classic, (kind, queue_id, offset, max_nums)
            statuses.add(connect[0])
    assert {GetMessageStatus.FOUND, GetMessageStatus.NO_MESSAGE_IN_QUEUE,
            GetMessageStatus.OFFSET_OVERFLOW_BADLY} <= statuses


def test_a_refused_setting_is_skipped_and_the_session_restored(stores, connect_spark, monkeypatch):
    """A server that refuses a setting (Databricks serverless allows only some) still answers the
    pull; the settings it took are put back, and the refused one is not asked again."""
    from rocketfilter import spark_mode
    from rocketfilter.pull import scan

    refused = "spark.sql.warehouse.dir"  # static: every session refuses to change it
    monkeypatch.setattr(scan, "SMALL_QUERY_CONF", {refused: "/elsewhere", **scan.SMALL_QUERY_CONF})
    kept = "spark.sql.files.minPartitionNum"
    message_filter = _filters(stores)["sql92 without"]
    whole_stage = {s: s.conf.get("spark.sql.codegen.wholeStage") for s in (stores.connect.spark, stores.classic.spark)}
    for session in (stores.connect.spark, stores.classic.spark):
        spark_mode._REFUSED.pop(session, None)
        session.conf.set(kept, "3")
    try:
        connect, classic = both(stores, lambda s: answer(s.get_message("G", TOPIC, 1, 0, 32, message_filter)))
        assert connect == classic and connect[0] == GetMessageStatus.FOUND
        for session in (stores.connect.spark, stores.classic.spark):
            assert spark_mode._REFUSED[session] == {refused}
            assert session.conf.get(kept) == "3"
            assert session.conf.get("spark.sql.codegen.wholeStage") == whole_stage[session]  # restored
    finally:
        for session in (stores.connect.spark, stores.classic.spark):
            session.conf.unset(kept)
            spark_mode._REFUSED.pop(session, None)


def test_set_conf_reads_sets_and_restores_in_both_modes(stores, connect_spark):
    values = {"spark.sql.files.minPartitionNum": "1", "spark.sql.ansi.doubleQuotedIdentifiers": "true"}
    for session in (stores.connect.spark, stores.classic.spark):
        session.conf.set("spark.sql.files.minPartitionNum", "5")
        previous = set_conf(session, values)
        assert previous == {"spark.sql.files.minPartitionNum": "5", "spark.sql.ansi.doubleQuotedIdentifiers": None}
        assert {k: session.conf.get(k) for k in values} == values
        restore_conf(session, previous)
        assert session.conf.get("spark.sql.files.minPartitionNum") == "5"
        assert session.conf.get("spark.sql.ansi.doubleQuotedIdentifiers") == "false"  # the default again
        session.conf.unset("spark.sql.files.minPartitionNum")


def test_broker_and_pull_consumer_answer_as_on_the_classic_session(stores, connect_spark):
    def pulls(store):
        consumer = PullConsumer(Broker(store), "C", client_id="c1")
        found = []
        for expression, kind, queue_id in (("TagA || Aa", "TAG", 0), ("a > 1 AND n < 20", "SQL92", 1)):
            consumer.subscribe(TOPIC, expression, kind)
            r = consumer.pull(MessageQueue(TOPIC, "broker-a", queue_id), 2, 8)
            found.append((str(r.pull_status), r.next_begin_offset, r.min_offset, r.max_offset,
                          [m["msg_id"] for m in r.msg_found_list]))
        return found
    connect, classic = both(stores, pulls)
    assert connect == classic and all(f[4] for f in connect)


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
        open_store(str(tmp_path / "typo"), connect_spark, create=False)


def test_expire_compact_and_vacuum_on_connect(stores, connect_spark, tmp_path):
    pair = copy_store(stores, tmp_path)
    pulls = [(0, 0), (1, 12)]
    with connect_mode(True):
        end = pair.connect.commitlog_state().next_commitlog_offset
        report = pair.connect.expire(before_commitlog_offset=end // 2, clean_consume_queue=False)
        assert report.commitlog_files_removed >= 1
    removing, classic_removing = both(pair, lambda s: [answer(s.get_message("G", TOPIC, q, o, 4)) for q, o in pulls])
    assert removing == classic_removing
    # The queues still start at 0, but getMessage skips units whose message is gone.
    first = removing[0]
    assert first[0] == GetMessageStatus.FOUND and first[2] == 0 and first[4][0] > 0
    with connect_mode(True):
        pair.connect.expire(before_commitlog_offset=end // 2)  # the consume queues follow
        pair.connect.compact()
        assert pair.connect.vacuum(0, enforce_retention_duration=False)
    cleaned, classic_cleaned = both(pair, lambda s: [answer(s.get_message("G", TOPIC, q, o, 4)) for q, o in pulls])
    assert cleaned == classic_cleaned
    assert cleaned[0][:3] == (GetMessageStatus.OFFSET_TOO_SMALL, first[4][0], first[4][0])  # to the new minimum
    assert cleaned[1][0] == GetMessageStatus.FOUND


def test_a_lost_data_file_is_named_on_connect(stores, connect_spark, tmp_path):
    """Spark Connect's read error is translated as the classic one: StoreDamagedError."""
    pair = copy_store(stores, tmp_path)
    lost = pair.connect.commitlog.files()[0].path
    os.remove(lost[len("file://"):])
    with connect_mode(True), pytest.raises(StoreDamagedError, match="lost 1 data file"):
        pair.connect.get_message("G", TOPIC, 0, 0, 32)
    with classic_mode(), pytest.raises(StoreDamagedError, match="lost 1 data file"):
        pair.classic.get_message("G", TOPIC, 0, 0, 32)
