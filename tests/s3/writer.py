"""One writer of the concurrent-writers test: ``python -m tests.s3.writer STORE WRITER PUTS``.

Puts ``PUTS`` batches (forever when -1) of ``BATCH`` messages into topic ``Race`` of the store,
each message keyed ``w<writer>-p<put>-m<i>``, and prints one JSON line per put: the assigned
offsets when it landed, or the error's class and message when it failed. The environment (the
AWS variables) says where the store is, as it does for a user.
"""
from __future__ import annotations

import json
import sys

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
    put = 0
    while puts < 0 or put < puts:
        messages = [{"topic": TOPIC, "tags": f"w{writer}", "keys": f"w{writer}-p{put}-m{i}",
                     "body": f"{writer}/{put}/{i}"} for i in range(BATCH)]
        try:
            landed = store.put_messages(messages)
            print(json.dumps({"put": put, "landed": [[r["queue_id"], r["queue_offset"]] for r in landed]}),
                  flush=True)
        except Exception as error:  # noqa: BLE001 - reported for the test to judge
            print(json.dumps({"put": put, "error": type(error).__name__, "message": str(error)}), flush=True)
        put += 1
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
