# Databricks notebook source
# MAGIC %md
# MAGIC # rocketfilter: a subscription as a stream into a Delta table
# MAGIC
# MAGIC `spark.readStream.format("rocketmq")` reads a topic of a rocketfilter store as a consumer of
# MAGIC one subscription receives it: here the SQL92 selector `amount > 100 AND region = 'eu'` of a
# MAGIC consumer group `GID_big_eu`. The stream runs while messages are put, writes what it
# MAGIC receives into a Delta table, and commits the group's offsets after each batch.
# MAGIC 1. a topic `Orders` with 4 queues and a first put;
# MAGIC 2. the stream, started; two more puts while it runs;
# MAGIC 3. the Delta table against `read_messages` (the same subscription in bulk), and the group's
# MAGIC    committed offsets.
# MAGIC
# MAGIC The store and the table go to the `STORE` widget or environment variable, else to a new
# MAGIC temporary directory. Elsewhere than Databricks run it as `python notebooks/05_streaming.py`:
# MAGIC there Spark has no Delta connector, so each micro-batch is appended with delta-rs
# MAGIC (`deltalake`), idempotently by batch id.

# COMMAND ----------

import os
import sys
import tempfile

try:  # a plain checkout: use the package next to this folder
    import rocketfilter  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import rocketfilter
from rocketfilter.session import get_spark
from rocketfilter.store import MessageStore

try:
    spark  # noqa: B018 - defined by Databricks
except NameError:
    spark = get_spark(app_name="rocketfilter-streaming")
rocketfilter.register(spark)   # get_spark did it already; Databricks' own session needs it

try:
    dbutils.widgets.text("STORE", "")  # noqa: F821 - defined by Databricks
    STORE = dbutils.widgets.get("STORE")  # noqa: F821
except NameError:
    STORE = os.environ.get("STORE", "")
STORE = STORE or tempfile.mkdtemp(prefix="rf-streaming-")
TOPIC, GROUP = "Orders", "GID_big_eu"
SELECTOR = "amount > 100 AND region = 'eu'"
TABLE, CHECKPOINT = os.path.join(STORE, "big_eu_orders"), os.path.join(STORE, "_checkpoint")
print("store:", STORE)

# COMMAND ----------

# MAGIC %md
# MAGIC ## A topic and a first put
# MAGIC Orders of 0..390 in steps of 30, in three regions; a message without a region or with an
# MAGIC amount Java cannot parse as an int is never delivered to this selector.

# COMMAND ----------

REGIONS = ("eu", "us", "apac")


def orders(first: int, n: int) -> list:
    out = []
    for i in range(first, first + n):
        props = {"amount": str(30 * (i % 14)), "region": REGIONS[i % 3]}
        if i % 10 == 9:
            props["amount"] = "n/a"
        out.append({"topic": TOPIC, "tags": "order", "keys": f"order-{i}", "properties": props,
                    "body": f"order {i}"})
    return out


store = MessageStore.open(os.path.join(STORE, "store"), spark)
store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
store.put_messages(orders(0, 40))

# COMMAND ----------

# MAGIC %md
# MAGIC ## The stream, while messages are put
# MAGIC `processAllAvailable` waits until the stream has read everything put so far; the puts come
# MAGIC from this notebook, but any producer of the store would do.

# COMMAND ----------


def append_to_delta(batch, batch_id: int) -> None:
    """One micro-batch appended to TABLE with delta-rs, skipped if this batch id is already in."""
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    app = "rocketfilter-05-streaming"
    done = DeltaTable(TABLE).transaction_version(app) if DeltaTable.is_deltatable(TABLE) else None
    if done is not None and done >= batch_id:
        return   # a retried batch: already written
    rows = batch.toArrow()
    write_deltalake(TABLE, rows, mode="append",
                    commit_properties=CommitProperties(app_transactions=[Transaction(app, batch_id)]))


stream = rocketfilter.read_stream(spark, store.uri, TOPIC, SELECTOR, "SQL92", consumerGroup=GROUP,
                                  startingOffsets="earliest", maxOffsetsPerTrigger=25)
stream = stream.select("queue_id", "queue_offset", "msg_id", "keys", "properties", "store_timestamp")
writer = stream.writeStream.option("checkpointLocation", CHECKPOINT)
if "DATABRICKS_RUNTIME_VERSION" in os.environ:
    query = writer.format("delta").start(TABLE)
else:
    query = writer.foreachBatch(append_to_delta).start()

query.processAllAvailable()
store.put_messages(orders(40, 40))    # arrives while the stream runs
query.processAllAvailable()
store.put_messages(orders(80, 40))
query.processAllAvailable()
batches = [(p["batchId"], p["numInputRows"]) for p in query.recentProgress if p["numInputRows"]]
query.stop()
print("micro-batches (id, rows):", batches)

# COMMAND ----------

# MAGIC %md
# MAGIC ## The table against `read_messages`, and the group's offsets
# MAGIC The stream delivered each message the subscription receives exactly once; the group's
# MAGIC committed offsets are the queues' max offsets (`rocketfilter offsets show` shows them too).

# COMMAND ----------

if "DATABRICKS_RUNTIME_VERSION" in os.environ:
    streamed = [(r.queue_id, r.queue_offset) for r in
                spark.read.format("delta").load(TABLE).select("queue_id", "queue_offset").collect()]
else:
    from deltalake import DeltaTable

    table = DeltaTable(TABLE).to_pyarrow_table(columns=["queue_id", "queue_offset"])
    streamed = list(zip(table.column("queue_id").to_pylist(), table.column("queue_offset").to_pylist()))
expected = {(r.queue_id, r.queue_offset) for r in
            rocketfilter.read_messages(store, TOPIC, SELECTOR, "SQL92").select("queue_id", "queue_offset").collect()}
matches = len(streamed) == len(set(streamed)) and set(streamed) == expected
print(f"rows in the Delta table: {len(streamed)} | same as read_messages, each once: {matches}")
committed = {q: store.query_consumer_offset(GROUP, TOPIC, q) for q in range(4)}
print("committed offsets:", committed, "| max offsets:",
      {q: store.get_max_offset_in_queue(TOPIC, q) for q in range(4)})
