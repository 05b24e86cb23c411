"""``spark.readStream.format("rocketmq")``: puts between triggers and while stopped, a memory sink
(which Spark cannot restart from a checkpoint: the second query resumes from the consumer
group's committed offsets instead) and a parquet sink restarted from its checkpoint; the union of
the outputs is what a consumer of the subscription receives, each message once;
``maxOffsetsPerTrigger`` bounds every batch; expired offsets as ``failOnDataLoss`` says."""
from __future__ import annotations

import json

import pytest

import rocketfilter
from rocketfilter.source.offsets import queue_bounds
from rocketfilter.store import MessageStore

from .conftest import LOST, SMALL, topic_messages
from .model import consumer_receives, messages

STREAM = "StreamTopic"
GROUP = "GID_stream"


@pytest.fixture
def stream_store(spark, tmp_path):
    store = MessageStore.open(str(tmp_path / "store"), spark, SMALL)
    store.create_topic(STREAM, read_queue_nums=3, write_queue_nums=3)
    return store


def put(store, lo, hi):
    store.put_messages(topic_messages(STREAM, lo, hi))


def _offsets(progress, key):
    body = progress["sources"][0][key]
    body = json.loads(body) if isinstance(body, str) else body   # "null" before the first batch
    return {} if body is None else {int(q): o for q, o in body[STREAM].items()}


def test_memory_sink_across_puts_and_a_group_resume_gets_each_message_once(spark, stream_store, tmp_path):
    store = stream_store
    selector = "a > 3 AND region <> 'us'"

    def start(name, **options):
        return (rocketfilter.read_stream(spark, store.uri, STREAM, selector, "SQL92", consumerGroup=GROUP,
                                         maxOffsetsPerTrigger=4, **options)
                .writeStream.format("memory").queryName(name)
                .option("checkpointLocation", str(tmp_path / name)).start())

    put(store, 0, 9)
    query = start("stream_first", startingOffsets="earliest")
    query.processAllAvailable()
    put(store, 9, 15)                        # arrives between triggers
    query.processAllAvailable()
    progress = list(query.recentProgress)
    query.stop()
    for p in progress:
        begin, end = _offsets(p, "startOffset"), _offsets(p, "endOffset")
        assert sum(o - begin.get(q, 0) for q, o in end.items()) <= 4, p["sources"][0]
    assert len([p for p in progress if p["numInputRows"]]) >= 3
    assert {q: store.query_consumer_offset(GROUP, STREAM, q) for q in range(3)} == \
        {q: hi for q, (_, hi) in queue_bounds(store, STREAM).items()}

    put(store, 15, 20)                       # while the query is stopped
    query = start("stream_second")           # no startingOffsets: where the group left off
    query.processAllAvailable()
    query.stop()
    got = [(r.queue_id, r.queue_offset) for name in ("stream_first", "stream_second")
           for r in spark.sql(f"SELECT queue_id, queue_offset FROM {name}").collect()]
    assert len(got) == len(set(got)), "a message was delivered twice"
    assert set(got) == consumer_receives(messages(store, STREAM), STREAM, selector, "SQL92")
    assert {q: store.query_consumer_offset(GROUP, STREAM, q) for q in range(3)} == \
        {q: hi for q, (_, hi) in queue_bounds(store, STREAM).items()}


def test_parquet_sink_with_available_now_and_a_restart(spark, stream_store, tmp_path):
    store = stream_store
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def run():
        query = (rocketfilter.read_stream(spark, store.uri, STREAM, "TagA || BB", startingOffsets="earliest")
                 .writeStream.format("parquet").option("path", out)
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()

    put(store, 0, 15)
    run()
    first = spark.read.parquet(out).count()
    put(store, 15, 30)
    run()
    got = [(r.queue_id, r.queue_offset) for r in spark.read.parquet(out).select("queue_id", "queue_offset").collect()]
    assert 0 < first < len(got)
    assert len(got) == len(set(got))
    assert set(got) == consumer_receives(messages(store, STREAM), STREAM, "TagA || BB")


def test_a_stream_from_expired_offsets_fails_or_skips_as_failondataloss_says(spark, expired_store, tmp_path):
    store, _ = expired_store

    def run(name, **options):
        query = (rocketfilter.read_stream(spark, store.uri, LOST, startingOffsets="earliest", **options)
                 .writeStream.format("memory").queryName(name)
                 .option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start())
        query.awaitTermination()

    with pytest.raises(Exception) as info:
        run("lost_strict")
    assert "expired by retention" in str(info.value) and "failOnDataLoss" in str(info.value)
    run("lost_lenient", failOnDataLoss=False)
    got = {(r.queue_id, r.queue_offset) for r in spark.sql("SELECT queue_id, queue_offset FROM lost_lenient").collect()}
    assert got == {(r["queue_id"], r["queue_offset"]) for r in messages(store, LOST)}
