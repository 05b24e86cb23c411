"""The ``rocketmq`` format on a Spark Connect session: registered by ``rocketfilter.register``
(and ``get_spark``), read in batch and as a stream, the same rows as on the classic session."""
from __future__ import annotations

import rocketfilter
from rocketfilter.session import get_spark

from .conftest import TOPIC


def test_batch_and_stream_over_connect(connect_spark, spark, source_store, tmp_path):
    assert get_spark(connect_spark) is connect_spark   # registers the format on the Connect session
    selector = "region = 'eu' AND a > 20"
    remote = (connect_spark.read.format("rocketmq").option("store", source_store.uri).option("topic", TOPIC)
              .option("subExpression", selector).option("expressionType", "SQL92").load())
    got = sorted((r.queue_id, r.queue_offset, r.body) for r in remote.collect())
    classic = rocketfilter.read(spark, source_store.uri, TOPIC, selector, "SQL92")
    assert got and got == sorted((r.queue_id, r.queue_offset, r.body) for r in classic.collect())

    query = (rocketfilter.read_stream(connect_spark, source_store.uri, TOPIC, "TagA || BB",
                                      startingOffsets="earliest", maxOffsetsPerTrigger=50)
             .writeStream.format("memory").queryName("connect_stream")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    streamed = [(r.queue_id, r.queue_offset) for r in
                connect_spark.sql("SELECT queue_id, queue_offset FROM connect_stream").collect()]
    batch = rocketfilter.read(spark, source_store.uri, TOPIC, "TagA || BB")
    assert sorted(streamed) == sorted((r.queue_id, r.queue_offset) for r in batch.collect())
