"""put_messages refuses bad input on the driver, before any Spark job, naming the message and the
field (a list) or the column (a DataFrame); nothing is written."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from rocketfilter.config import MessageStoreConfig
from rocketfilter.store import MessageStore
from rocketfilter.store.put import PutMessageError

CONFIG = MessageStoreConfig(consume_queue_rows_per_file=1000, consume_queue_row_group_rows=64)


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("putcheck") / "s"), spark, CONFIG)
    s.create_topic("T", read_queue_nums=4, write_queue_nums=4)
    return s


def _jobs_during(spark, action):
    """The Spark jobs ``action`` started (under a job group of its own)."""
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("put-validation", "put-validation")
    try:
        action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return tracker.getJobIdsForGroup("put-validation")


BAD_LISTS = [
    ([{"tags": "a", "body": b"x"}], r"message 0: field 'topic': a message has no topic"),
    ([{"topic": "T"}, {"topic": None}], r"message 1: field 'topic': a message has no topic"),
    ([{"topic": 7}], r"message 0: field 'topic': must be a str, got int"),
    ([{"topic": "T", "body": 123}], r"message 0: field 'body': must be bytes or str, got int"),
    ([{"topic": "T", "properties": {"a": 1}}], r"message 0: field 'properties': value of 'a' must be a str"),
    ([{"topic": "T", "properties": {1: "a"}}], r"message 0: field 'properties': key 1 must be a str"),
    ([{"topic": "T", "properties": ["a"]}], r"field 'properties': must be a dict"),
    ([{"topic": "T", "queue_id": 2**31}], r"message 0: field 'queue_id': 2147483648 is outside 0\.\.2147483647"),
    ([{"topic": "T", "queue_id": -1}], r"field 'queue_id': -1 is outside"),
    ([{"topic": "T", "queue_id": True}], r"field 'queue_id': must be an int, got bool"),
    ([{"topic": "T", "queue_id": 4}], r"topic 'T': queue_id 4 is outside 0\.\.3"),
    ([{"topic": "T", "keys": ["a", 2]}], r"field 'keys': must be a str or a list of str"),
    ([{"topic": "T", "tags": 5}], r"field 'tags': must be a str or None, got int"),
    ([{"topic": "T", "flag": 2**31}], r"field 'flag': 2147483648 is outside"),
]


@pytest.mark.parametrize("messages,message", BAD_LISTS, ids=[m for _, m in BAD_LISTS])
def test_a_bad_list_fails_before_any_spark_job(store, spark, messages, message):
    version = store.commitlog.refresh().version()
    error = []

    def put():
        with pytest.raises(PutMessageError, match=message) as info:
            store.put_messages(messages)
        error.append(info.value)
    assert _jobs_during(spark, put) == []
    assert store.commitlog.refresh().version() == version


def test_a_dataframe_without_topics_is_refused_before_writing(store, spark):
    version = store.commitlog.refresh().version()
    df = spark.range(5).select(F.when(F.col("id") % 2 == 0, F.lit("T")).alias("topic"),
                               F.col("id").cast("string").alias("body"))
    with pytest.raises(PutMessageError, match=r"2 message\(s\) have no topic"):
        store.put_messages(df)
    assert store.commitlog.refresh().version() == version


def test_a_dataframe_queue_id_out_of_range_is_refused(store, spark):
    df = spark.range(2).select(F.lit("T").alias("topic"), (F.col("id") + 2**31).alias("queue_id"))
    with pytest.raises(PutMessageError, match="queue_id 2147483648 is outside 0..3"):
        store.put_messages(df)


def test_a_dataframe_column_of_the_wrong_type_is_named(store, spark):
    df = spark.range(2).select(F.lit("T").alias("topic"), F.col("id").alias("body"))
    with pytest.raises(PutMessageError, match="column 'body' has type bigint, expected binary"):
        store.put_messages(df)


def test_good_input_still_goes_in(store):
    put = store.put_messages([{"topic": "T", "queue_id": 3, "properties": {"a": "1", "gone": None},
                               "body": bytearray(b"x"), "keys": ("k1", "k2")}])
    assert (put[0]["queue_id"], put[0]["queue_offset"]) == (3, 0)
