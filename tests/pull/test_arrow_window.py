"""The pyarrow reads of a pull (rocketfilter.pull.arrow_window) answer exactly as the Spark reads:
the same pulls (statuses, next_begin_offset, min/max offsets, found messages with their bodies,
the funnel) and the same traces (verdicts, every step), on test_explain_message's store: an
expired commit-log file, tag-hash collisions, SQL92 with and without bloom bitmaps, a retry
topic; and a store opened without any Spark session answers the same."""
from __future__ import annotations

import warnings

import pytest

from rocketfilter import explain_message
from rocketfilter.config import BrokerConfig, MessageStoreConfig
from rocketfilter.pull.arrow_window import arrow_reads
from rocketfilter.pull.filter import ExpressionForRetryMessageFilter, ExpressionMessageFilter
from rocketfilter.store import MessageStore
from rocketfilter.tags import build_subscription
from tests.groups.test_explain_message import BITS, FILE, MIXED, OLD, SEED, seed_group, store  # noqa: F401
from tests.groups.test_replay import BROKER, random_group

RETRY = "%RETRY%GID_retry"


def _engine(store, engine):
    store.pull_engine = engine
    assert arrow_reads(store) == (engine == "arrow")


def _answer(result) -> tuple:
    return (result.status, result.next_begin_offset, result.min_offset, result.max_offset,
            result.suggest_pulling_from_slave, result.buffer_total_size, result.message_count,
            result.filter_message_count, result.message_queue_offsets, result.messages, result.funnel)


def _both(store, *args):
    answers = []
    for engine in ("spark", "arrow"):
        _engine(store, engine)
        answers.append(_answer(store.get_message(*args)))
    _engine(store, None)
    assert answers[0] == answers[1], args
    return answers[1]


def _filters(store):
    sql = lambda topic, text: ExpressionMessageFilter(  # noqa: E731
        build_subscription(topic, text, "SQL92"), store.filter_manager.build(topic, "g", text, "SQL92", 1))
    return {
        SEED: [None, ExpressionMessageFilter(build_subscription(SEED, "tagA"))],
        MIXED: [ExpressionMessageFilter(build_subscription(MIXED, "BB || tagC")),   # Aa collides with BB
                sql(MIXED, "a > 3 AND region = 'us'"), sql(MIXED, "b IS NULL OR a < 2")],
        BITS: [ExpressionMessageFilter(build_subscription(BITS, "a > 1", "SQL92"),
                                       store.filter_manager.get(BITS, "GID_bits"), store.filter_manager)],
        OLD: [None],
    }


def test_pulls_answer_alike(store):
    seen = set()
    store.create_topic("NeverWritten", read_queue_nums=1, write_queue_nums=1)
    seen.add(_both(store, "g", "NeverWritten", 0, 0, 32, None)[0].value)
    for topic, filters in _filters(store).items():
        for f in filters:
            for q in range(min(3, store.topic_config(topic).read_queue_nums)):
                lo, hi = store.get_min_offset_in_queue(topic, q), store.get_max_offset_in_queue(topic, q)
                offsets = [0, hi, hi + 3] if topic == OLD else [lo, (lo + hi) // 2] + ([hi, hi + 3] if q == 0 else [])
                for offset in offsets:
                    for max_msg_nums in (1, 32) if q == 0 and offset == lo else (32,):
                        answer = _both(store, "g", topic, q, offset, max_msg_nums, f)
                        seen.add(answer[0].value)
    assert {"FOUND", "NO_MATCHED_MESSAGE", "OFFSET_OVERFLOW_ONE", "OFFSET_OVERFLOW_BADLY",
            "OFFSET_TOO_SMALL", "NO_MESSAGE_IN_QUEUE"} <= seen, seen
    bits = _filters(store)[BITS][0]
    assert bits.uses_bitmap   # the bitmap check ran on both paths


def test_a_bitmap_that_rules_out_a_message(store):
    f = _filters(store)[BITS][0]
    found = _both(store, "g", BITS, 0, 0, 32, f)
    assert found[-1].bitmap_skipped > 0 and found[-1].bitmap_passed > 0


def test_retry_topic_filter_per_original_topic(spark, tmp_path):
    s = MessageStore.open(str(tmp_path / "s"), spark)
    s.create_topic(RETRY, read_queue_nums=1, write_queue_nums=1)
    s.create_topic("Orig", read_queue_nums=1, write_queue_nums=1)
    s.filter_manager.register("Orig", "GID_retry", "a > 1", "SQL92", 1)
    s.put_messages([{"topic": RETRY, "properties": {"a": str(i), "RETRY_TOPIC": "Orig" if i % 3 else "Other"},
                     "body": f"r{i}"} for i in range(6)])
    f = ExpressionForRetryMessageFilter(build_subscription(RETRY, "a > 100", "SQL92"),
                                        s.filter_manager.build(RETRY, "GID_retry", "a > 100", "SQL92", 1),
                                        s.filter_manager)
    found = _both(s, "GID_retry", RETRY, 0, 0, 32, f)
    # "Orig" messages judged by a > 1, the "Other" ones (no filter data) all match
    assert [m["properties"]["a"] for m in found[-2]] == ["0", "2", "3", "4", "5"]
    s.put_messages([{"topic": RETRY, "properties": {"a": "9"}, "body": "no RETRY_TOPIC"}])
    for engine in ("spark", "arrow"):
        _engine(s, engine)
        with pytest.raises(Exception, match="retry filter NullPointerException"):
            s.get_message("GID_retry", RETRY, 0, 0, 32, f)


def test_traces_answer_alike(store):
    groups = [seed_group(), random_group(1), random_group(2)]
    cases = ([(groups[0], SEED, q, o) for q in range(4) for o in (0, 1)]
             + [(g, MIXED, q, o) for g in groups[1:] for q in range(5) for o in (0, 1)]
             + [(groups[0], OLD, 0, 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for group, topic, q, offset in cases:
            traces = []
            for engine in ("spark", "arrow"):
                _engine(store, engine)
                traces.append(explain_message(store, group, topic=topic, queue_id=q, queue_offset=offset,
                                              max_msg_nums=2))
            assert traces[0] == traces[1], (group.group, topic, q, offset)
        for lookup in ({"key": "k5"}, {"msg_id": store.old_msg_id}, {"msg_id": "0" * 32}):
            traces = []
            for engine in ("spark", "arrow"):
                _engine(store, engine)
                traces.append(explain_message(store, seed_group(), **lookup))
            assert traces[0] == traces[1], lookup
        for engine in ("spark", "arrow"):
            _engine(store, engine)
            with pytest.raises(ValueError, match=r"key 'dup' names 8 messages"):
                explain_message(store, seed_group(), key="dup")
    _engine(store, None)


def test_a_store_without_spark(store):
    bare = MessageStore(store.uri, None, MessageStoreConfig(mapped_file_size_commit_log=FILE),
                        broker_config=BrokerConfig(broker_name=BROKER, enable_calc_filter_bit_map=True), create=False)
    assert arrow_reads(bare)
    f = ExpressionMessageFilter(build_subscription(MIXED, "BB || tagC"))
    for q in range(5):
        assert _answer(bare.get_message("g", MIXED, q, 0, 32, f)) == _both(store, "g", MIXED, q, 0, 32, f)
    got = bare.get_message("g", MIXED, 0, 0, 32, f)
    assert got.spark_jobs == 0 and got.dataframe is None
    trace = explain_message(bare, seed_group(), topic=SEED, queue_id=1, queue_offset=1)
    _engine(store, "spark")
    assert trace == explain_message(store, seed_group(), topic=SEED, queue_id=1, queue_offset=1)
    _engine(store, None)
