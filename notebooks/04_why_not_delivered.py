# Databricks notebook source
# MAGIC %md
# MAGIC # rocketfilter: why did consumer X never get message M?
# MAGIC
# MAGIC `explain_message` follows one message through a consumer group's path, step by step, and
# MAGIC ends with a verdict: where the message is, which consumer owns its queue, the subscription
# MAGIC the broker filters with, the tag-code (or bitmap and SQL92) check, the pull that reaches it,
# MAGIC the client's exact tag re-check, and the committed offset. Here, on seed 003 (two consumers
# MAGIC of one group subscribing different tags), four messages:
# MAGIC 1. one consumed;
# MAGIC 2. one filtered by the broker's tag-code check (the group's table holds the other tag);
# MAGIC 3. one delivered, then dropped by the client's re-check;
# MAGIC 4. one that retention removed.
# MAGIC
# MAGIC The store goes to the `STORE` widget or environment variable, else to a new temporary
# MAGIC directory. Elsewhere than Databricks run it as `python notebooks/04_why_not_delivered.py`.

# COMMAND ----------

import os
import sys
import tempfile

try:  # a plain checkout: use the package next to this folder
    import rocketfilter  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketfilter import ConsumerGroup, explain_message, replay_group
from rocketfilter.config import MessageStoreConfig
from rocketfilter.session import get_spark
from rocketfilter.store import MessageStore

try:
    spark  # noqa: B018 - defined by Databricks
except NameError:
    spark = get_spark(app_name="rocketfilter-why")

try:
    dbutils.widgets.text("STORE", "")  # noqa: F821 - defined by Databricks
    STORE = dbutils.widgets.get("STORE")  # noqa: F821
except NameError:
    STORE = os.environ.get("STORE", "")
STORE = STORE or tempfile.mkdtemp(prefix="rf-why-")
TOPIC, FILE = "SUBSCRIBE_TEST", 1000
print("store:", STORE)

# COMMAND ----------

# MAGIC %md
# MAGIC ## A store whose oldest commit-log file has expired
# MAGIC Commit-log "files" of 1000 bytes (a broker's are 1 GiB), so that a few messages fill one:
# MAGIC four early messages, filler on another topic past the first file, then seed 003's eight
# MAGIC messages (each queue: `tagA` at offset 1, `tagB` at offset 2). `expire` then removes the
# MAGIC first file, as a broker's CleanCommitLogService does, and the early messages with it.

# COMMAND ----------

store = MessageStore.open(STORE, spark, MessageStoreConfig(mapped_file_size_commit_log=FILE))
store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
store.create_topic("Filler", read_queue_nums=1, write_queue_nums=1)
put = store.put_messages([{"topic": TOPIC, "tags": "tagB", "keys": f"early-{i}", "body": "e" * 100} for i in range(4)]
                         + [{"topic": "Filler", "body": "f" * 100} for _ in range(8)]
                         + [{"topic": TOPIC, "tags": "tagA" if i < 4 else "tagB", "keys": f"order-{i}",
                             "body": f"message {i}"} for i in range(8)])
report = store.expire(before_commitlog_offset=FILE)
early = put[0]
print("CommitLog now starts at", report.min_commitlog_offset, "| queue 0 offsets",
      store.consumequeue_state().offsets(TOPIC, 0))

# COMMAND ----------

# MAGIC %md
# MAGIC ## The group, and a replay that commits its offsets
# MAGIC A subscribes `tagA`, then B `tagB`: the broker keeps B's subscription for the whole group.
# MAGIC The replay commits where each consumer resumes, so B's messages are consumed.

# COMMAND ----------

group = ConsumerGroup("GID_seed003")
group.add_consumer("A", {TOPIC: "tagA"})
group.add_consumer("B", {TOPIC: "tagB"})
replay_group(store, group, TOPIC, commit=True).select("client_id", "queue_id", "queue_offset", "tags").show()

# COMMAND ----------

# MAGIC %md
# MAGIC ## Four traces

# COMMAND ----------

traces = {
    "consumed": explain_message(store, group, topic=TOPIC, queue_id=2, queue_offset=2),
    "filtered": explain_message(store, group, key="order-0"),
    "dropped": explain_message(store, group, topic=TOPIC, queue_id=0, queue_offset=2),
    "expired": explain_message(store, group, msg_id=early["msg_id"]),
}
for name, trace in traces.items():
    print(f"--- {name}")
    print(trace)
    print()

# COMMAND ----------

# MAGIC %md
# MAGIC ## The verdicts at a glance
# MAGIC `trace.verdict`, `trace.client_id` and `trace.reason` (the lost reason `diagnose_group`
# MAGIC gives the same message) are plain values; `trace.steps` hold what each step saw.

# COMMAND ----------

summary = [(name, t.verdict.value, t.client_id, t.reason, t.deciding_step.name if t.deciding_step else None)
           for name, t in traces.items()]
spark.createDataFrame(summary, "message string, verdict string, client_id string, reason string, "
                               "stopped_at string").show(truncate=False)
