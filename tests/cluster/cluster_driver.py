"""The driver of the cluster test, run in its own process (its own JVM, next to the suite's):
``python -m tests.cluster.cluster_driver REQUEST_JSON``. On the standalone cluster it runs
``rocketfilter import`` (the command's own entry point, :func:`rocketfilter.cli.main`), then
``replay_group`` and a streaming ``format("rocketmq")`` query over the store on S3, all in the
one application the command started (a driver and an executor JVM less than a process per
step), and prints one JSON line: the application id, the command's exit status and what each
returned."""
from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

import rocketfilter
from rocketfilter.consumer.group import ConsumerGroup
from rocketfilter.session import get_spark
from rocketfilter.store import MessageStore


def main(request: dict) -> dict:
    from rocketfilter.cli import main as cli

    imported = cli(request["import"])
    builder = SparkSession.builder.appName("rocketfilter-cluster-driver")
    for key, value in request["conf"].items():
        builder = builder.config(key, value)
    spark = get_spark(builder)
    try:
        storage = request["storage_options"]
        store = MessageStore.open(request["store"], spark, storage_options=storage, create=False)

        group = ConsumerGroup("GID_cluster")
        for client in ("consumer-a", "consumer-b"):
            group.add_consumer(client, {"TopicTest": "TagA || TagB"})
        replayed = [(r.client_id, r.queue_id, r.queue_offset) for r in
                    rocketfilter.replay_group(store, group, "TopicTest")
                    .select("client_id", "queue_id", "queue_offset").collect()]

        options = {f"storage.{k}": v for k, v in storage.items()}
        query = (rocketfilter.read_stream(spark, request["store"], "OrderEvents", "created || paid",
                                          startingOffsets="earliest", maxOffsetsPerTrigger=300, **options)
                 .writeStream.format("parquet").option("path", request["stream_out"])
                 .option("checkpointLocation", request["stream_checkpoint"])
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        batches = [p["numInputRows"] for p in query.recentProgress]
        streamed = [(r.queue_id, r.queue_offset, r.tags) for r in
                    spark.read.parquet(request["stream_out"]).select("queue_id", "queue_offset", "tags").collect()]
        return {"import_exit": imported, "app_id": spark.sparkContext.applicationId, "master": spark.sparkContext.master,
                "replayed": replayed, "streamed": streamed, "stream_batches": batches}
    finally:
        spark.stop()


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
