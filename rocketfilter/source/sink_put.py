"""The put half of the ``rocketmq`` sink (:mod:`.sink`): ``python -m rocketfilter.source.sink_put``
reads a JSON request on stdin (``store``, staged parquet ``files``, ``topic``,
``storage_options``, ``app_transaction``: ``[app_id, version]`` or null), runs ``put_messages``
over the files in a local Spark session, and prints one JSON line: ``{"messages": n}``, or
``{"error": <class>, "message": ...}`` with exit code 2. The put server (:mod:`.put_server`)
answers the same requests with :func:`answer_request` in a process it keeps warm.
"""
from __future__ import annotations

import json
import sys
from functools import reduce


def put_files(spark, request: dict) -> int:
    """``put_messages`` of the request's staged files, in order, into its store; the count."""
    from pyspark.sql import functions as F

    from rocketfilter.delta.object_store import spark_uri
    from rocketfilter.store import MessageStore

    store = MessageStore.open(request["store"], spark, storage_options=request.get("storage_options"),
                              create=False)
    # One file is one partition: the union keeps the tasks' order, and each task's row order.
    df = reduce(lambda a, b: a.unionByName(b), [spark.read.parquet(spark_uri(f)) for f in request["files"]])
    if request.get("topic"):
        df = df.withColumn("topic", F.lit(request["topic"]))
    txn = request.get("app_transaction")
    return store.put_messages(df, app_transaction=tuple(txn) if txn else None).count()


def answer_request(spark, request: dict) -> dict:
    """The put's answer: ``{"messages": n}``, or ``{"error": <class>, "message": ...}``."""
    try:
        return {"messages": put_files(spark, request)}
    except Exception as error:  # noqa: BLE001 - reported to the writer, which raises it
        return {"error": type(error).__name__, "message": str(error)}


def local_session(store: str):
    """The put process's local Spark session (hadoop-aws for an S3 ``store``). Call it inside
    ``session_hooks_suspended()``: the put reads parquet, it needs no rocketmq source."""
    from pyspark.sql import SparkSession

    from rocketfilter.session import get_spark

    return get_spark(SparkSession.builder.master("local[2]").appName("rocketfilter-sink")
                     .config("spark.ui.enabled", "false"), store=store)


def main() -> int:
    request = json.loads(sys.stdin.read())
    try:
        from rocketfilter.store.errors import StoreNotFoundError
        from rocketfilter.store.tables import store_exists

        if not store_exists(request["store"], request.get("storage_options")):   # before a Spark start
            raise StoreNotFoundError(f"no rocketfilter store at {request['store']}")
        from rocketfilter.hooks import session_hooks_suspended

        with session_hooks_suspended():
            answer = answer_request(local_session(request["store"]), request)
    except Exception as error:  # noqa: BLE001 - reported to the writer, which raises it
        answer = {"error": type(error).__name__, "message": str(error)}
    print(json.dumps(answer))
    return 0 if "messages" in answer else 2


if __name__ == "__main__":
    sys.exit(main())
