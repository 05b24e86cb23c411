"""One writer of the concurrent-writers test: ``python -m tests.s3.writer STORE WRITER PUTS``
(the test also runs :func:`put_loop` in threads of its own process).

Puts ``PUTS`` batches (forever when -1) of ``BATCH`` messages into topic ``Race`` of the store,
each message keyed ``w<writer>-p<put>-m<i>``, and prints one JSON line per put: the assigned
offsets when it landed, or the error's class and message when it failed. The environment (the
AWS variables) says where the store is, as it does for a user.
"""
from __future__ import annotations

import json
import sys
from typing import Callable

TOPIC = "Race"
BATCH = 8


def main(argv) -> int:
    uri, writer, puts = argv[0], int(argv[1]), int(argv[2])
    from pyspark.sql import SparkSession

    from rocketfilter.session import get_spark
    from rocketfilter.store import MessageStore

    spark = get_spark(SparkSession.builder.master("local[1]").config("spark.driver.memory", "768m")
                      .config("spark.ui.enabled", "false").appName(f"writer-{writer}"), store=uri)
    store = MessageStore.open(uri, spark, create=False)
    print(json.dumps({"ready": writer}), flush=True)
    put_loop(store, writer, puts, lambda line: print(json.dumps(line), flush=True))
    spark.stop()
    return 0


def put_loop(store, writer: int, puts: int, emit: Callable[[dict], None]) -> None:
    """``puts`` puts (forever when -1) into ``store``, each reported to ``emit`` as it ends."""
    put = 0
    while puts < 0 or put < puts:
        messages = [{"topic": TOPIC, "tags": f"w{writer}", "keys": f"w{writer}-p{put}-m{i}",
                     "body": f"{writer}/{put}/{i}"} for i in range(BATCH)]
        try:
            landed = store.put_messages(messages)
            emit({"put": put, "landed": [[r["queue_id"], r["queue_offset"]] for r in landed]})
        except Exception as error:  # noqa: BLE001 - reported for the test to judge
            emit({"put": put, "error": type(error).__name__, "message": str(error)})
        put += 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
