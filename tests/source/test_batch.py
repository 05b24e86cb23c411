"""``spark.read.format("rocketmq")``: what a batch read returns against the store's own pull loop
(``pull_sequence`` and the client's re-check) for random subscriptions and offset ranges; the
rows and their types; the options and their errors; expired offsets and ``failOnDataLoss``."""
from __future__ import annotations

import json
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from pyspark.sql import types as T

import rocketfilter
from rocketfilter.source.offsets import queue_bounds
from rocketfilter.source.options import SourceOptionError, SourceOptions
from rocketfilter.source.schema import TIMESTAMPS

from .conftest import LOST, TOPIC
from .model import consumer_receives, messages, pull_sequence_receives
from .test_scan import SUBSCRIPTIONS


def _keys(df) -> list:
    return [(r.queue_id, r.queue_offset) for r in df.select("queue_id", "queue_offset").collect()]


def _json(ranges, end: bool) -> str:
    return json.dumps({TOPIC: {str(q): (e if end else s) for q, (s, e) in ranges.items()}})


@st.composite
def reads(draw, bounds):
    sub, kind = draw(st.sampled_from(SUBSCRIPTIONS))
    ranges = {}
    for q, (lo, hi) in bounds.items():
        a, b = sorted(draw(st.integers(lo, hi)) for _ in range(2))
        ranges[q] = (a, b)
    return sub, kind, ranges


def test_batch_reads_agree_with_pull_sequence(spark, source_store):
    bounds = queue_bounds(source_store, TOPIC)

    @settings(max_examples=3, deadline=None, database=None)
    @given(reads(bounds))
    def check(read):
        sub, kind, ranges = read
        df = rocketfilter.read(spark, source_store.uri, TOPIC, sub, kind,
                               startingOffsets=_json(ranges, False), endingOffsets=_json(ranges, True))
        got = _keys(df)
        assert len(got) == len(set(got))
        assert set(got) == pull_sequence_receives(source_store, TOPIC, sub, kind, ranges)

    check()


def test_batch_reads_agree_with_read_messages(spark, source_store):
    from rocketfilter.pull.read_messages import read_messages

    bounds = queue_bounds(source_store, TOPIC)

    @settings(max_examples=4, deadline=None, database=None)
    @given(reads(bounds))
    def check(read):
        sub, kind, ranges = read
        df = rocketfilter.read(spark, source_store.uri, TOPIC, sub, kind,
                               startingOffsets=_json(ranges, False), endingOffsets=_json(ranges, True))
        rows = df.collect()
        got = {(r.queue_id, r.queue_offset): r.asDict(recursive=True) for r in rows}
        want = read_messages(source_store, TOPIC, sub, kind, start={q: s for q, (s, _) in ranges.items()},
                             end={q: e for q, (_, e) in ranges.items()})
        want = want.select(*[F.timestamp_millis(c).alias(c) if c in TIMESTAMPS else c for c in df.columns])
        assert got == {(r.queue_id, r.queue_offset): r.asDict(recursive=True) for r in want.collect()}
        assert len(rows) == len(got)

    check()


def test_rows_and_types(spark, source_store, source_rows):
    df = rocketfilter.read(spark, source_store.uri, TOPIC, "region = 'eu' AND a > 20", "SQL92")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("topic", "string"), ("queue_id", "int"), ("queue_offset", "bigint"),
        ("commitlog_offset", "bigint"), ("msg_id", "string"), ("tags", "string"), ("keys", "string"),
        ("properties", "map<string,string>"), ("body", "binary"), ("born_timestamp", "timestamp"),
        ("store_timestamp", "timestamp"), ("flag", "int"), ("sys_flag", "int"), ("reconsume_times", "int")]
    rows = df.collect()
    assert {(r.queue_id, r.queue_offset) for r in rows} == consumer_receives(
        source_rows, TOPIC, "region = 'eu' AND a > 20", "SQL92")
    stored = {r["msg_id"]: r for r in source_rows}
    for r in rows:
        assert r.body == bytes(stored[r.msg_id]["body"]) and r.properties["region"] == "eu"
        assert isinstance(r.store_timestamp, datetime)


def test_a_user_schema_selects_columns_and_include_properties(spark, source_store):
    df = (spark.read.format("rocketmq").schema("queue_offset long, keys string")
          .option("store", source_store.uri).option("topic", TOPIC)
          .option("subExpression", "a > 100").option("expressionType", "SQL92").load())
    assert df.columns == ["queue_offset", "keys"]
    assert sorted(r.keys for r in df.collect()) == sorted(f"{TOPIC}-{i}" for i in range(101, 120) if i % 11)
    slim = rocketfilter.read(spark, source_store.uri, TOPIC, "TagB", includeProperties=False)
    assert "properties" not in slim.columns and slim.count() > 0


@pytest.mark.parametrize("options,message", [
    ({"topic": TOPIC, "subExpresion": "a"}, "unknown option(s) ['subexpresion']"),
    ({"subExpression": "*"}, "option topic is required"),
    ({"topic": "a/b"}, "option topic"),
    ({"topic": TOPIC, "expressionType": "SQL"}, "option expressionType: 'SQL' is not one RocketMQ accepts"),
    ({"topic": TOPIC, "expressionType": "SQL92", "subExpression": "a >"}, "option subExpression (SQL92)"),
    ({"topic": TOPIC, "subExpression": "||"}, "option subExpression (TAG)"),
    ({"topic": TOPIC, "consumerGroup": "a b"}, "option consumerGroup"),
    ({"topic": TOPIC, "maxOffsetsPerTrigger": "0"}, "expected a positive integer"),
    ({"topic": TOPIC, "failOnDataLoss": "yes"}, "expected true or false"),
    ({"topic": TOPIC, "startingOffsets": "soon"}, "startingOffsets: expected"),
    ({"topic": TOPIC, "startingTimestamp": "earliest"}, "option startingTimestamp"),
])
def test_bad_options_are_named(options, message):
    with pytest.raises(SourceOptionError) as info:
        SourceOptions.parse({"store": "/tmp/x", **options})
    assert message in str(info.value)


@pytest.mark.parametrize("options,message", [
    ({"topic": TOPIC, "subExpresion": "a"}, "unknown option(s) ['subexpresion']"),
    ({"topic": "NoSuchTopic"}, "topic 'NoSuchTopic' does not exist"),
    ({"topic": TOPIC, "endingOffsets": "{\"SourceTopic\": {\"0\": 999}}"}, "past its max offset"),
])
def test_bad_options_fail_the_read_with_a_clear_message(spark, source_store, options, message):
    with pytest.raises(Exception) as info:
        spark.read.format("rocketmq").options(store=source_store.uri, **options).load().collect()
    assert message in str(info.value)
    # Issue 19 §6.8: Spark wraps the worker's traceback around the line; rocketfilter's frames
    # are cut to the one that re-raises it (it was 8 to 14 lines).
    assert str(info.value).count('File "') == 1, str(info.value)


def test_a_missing_store_is_named(spark, tmp_path):
    with pytest.raises(Exception) as info:
        rocketfilter.read(spark, str(tmp_path / "nowhere"), TOPIC).collect()
    assert "no rocketfilter store at" in str(info.value)


# --- retention ---------------------------------------------------------------------------------

def test_expired_start_offsets_fail_or_skip_as_failondataloss_says(spark, expired_store):
    store, cleaned = expired_store
    assert all(lo > 0 for lo, _ in cleaned.values())
    rows = messages(store, LOST)
    from_zero = json.dumps({LOST: {"0": 0, "1": 0}})
    with pytest.raises(Exception) as info:
        rocketfilter.read(spark, store.uri, LOST, startingOffsets=from_zero).collect()
    assert "expired by retention" in str(info.value) and "failOnDataLoss" in str(info.value)
    # The ConsumeQueue still lists entries whose messages the second expire deleted: lost too.
    with pytest.raises(Exception) as info:
        rocketfilter.read(spark, store.uri, LOST).collect()
    assert "expired by retention" in str(info.value)
    for start in (from_zero, "earliest"):
        got = _keys(rocketfilter.read(spark, store.uri, LOST, startingOffsets=start, failOnDataLoss=False))
        assert sorted(got) == sorted((r["queue_id"], r["queue_offset"]) for r in rows)
        assert len(got) < 40


def test_types_of_the_default_schema_are_spark_types():
    from rocketfilter.source.schema import source_schema

    assert isinstance(source_schema()["born_timestamp"].dataType, T.TimestampType)
    assert "properties" not in source_schema(include_properties=False).fieldNames()
