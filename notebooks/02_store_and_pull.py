# Databricks notebook source
# MAGIC %md
# MAGIC # rocketfilter: store and pull
# MAGIC
# MAGIC A RocketMQ message store as Delta tables, and pulls that answer as a broker would:
# MAGIC 1. create a store and a topic, put 20 messages with tags and properties;
# MAGIC 2. pull them through a `Broker` with a `PullConsumer`, once with a TAG subscription and once
# MAGIC    with an SQL92 selector;
# MAGIC 3. ask "why did my consumer not get message X?" with a pull's filter funnel;
# MAGIC 4. replay the whole topic for a group with `pull_sequence` (one Spark job, every queue);
# MAGIC 5. commit and read consumer offsets.
# MAGIC
# MAGIC The store goes to the `STORE` widget or environment variable, else to a new temporary
# MAGIC directory. Elsewhere than Databricks run it as `python notebooks/02_store_and_pull.py`.

# COMMAND ----------

import os
import sys
import tempfile

try:  # a plain checkout: use the package next to this folder
    import rocketfilter  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark.sql import functions as F

from rocketfilter.pull.broker import Broker
from rocketfilter.pull.client import PullConsumer
from rocketfilter.pull.filter import ExpressionMessageFilter
from rocketfilter.pull.sequence import pull_sequence
from rocketfilter.session import get_spark
from rocketfilter.store import MessageStore
from rocketfilter.tags import build_subscription

try:
    spark  # noqa: B018 - defined by Databricks
except NameError:
    spark = get_spark(app_name="rocketfilter-store-and-pull")

try:
    dbutils.widgets.text("STORE", "")  # noqa: F821 - defined by Databricks
    STORE = dbutils.widgets.get("STORE")  # noqa: F821
except NameError:
    STORE = os.environ.get("STORE", "")
STORE = STORE or tempfile.mkdtemp(prefix="rf-store-")
TOPIC = "OrderEvents"
print("store:", STORE)

# COMMAND ----------

# MAGIC %md
# MAGIC ## A store, a topic, 20 messages
# MAGIC `put_messages` assigns queues round robin (as a producer does), queue offsets and
# MAGIC commit-log offsets, commits the CommitLog and dispatches the ConsumeQueue. Message 19 is
# MAGIC tagged `BB`, whose tag code equals that of `Aa` (Java's `"Aa".hashCode() == "BB".hashCode()`).

# COMMAND ----------

store = MessageStore.open(STORE, spark)
store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)

messages = []
for i in range(20):
    messages.append({
        "topic": TOPIC,
        "tags": "BB" if i == 19 else ["TagA", "TagB", "TagC"][i % 3],
        "keys": f"order-{i}",
        "properties": {"region": ["eu", "us"][i % 2], "amount": str(10 * i), "vip": str(i % 4 == 0).lower()},
        "body": f"order {i}",
    })
store.put_messages(messages)
store.commitlog.read(spark).select("queue_id", "queue_offset", "tags", "keys", "properties") \
    .orderBy("keys").show(20, truncate=False)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Pull with a TAG subscription
# MAGIC The broker checks each entry's tag code; the client then keeps only exact tag matches (it
# MAGIC drops hash collisions). Offsets are committed per queue as the consumer goes.

# COMMAND ----------

broker = Broker(store)
tag_consumer = PullConsumer(broker, "GID_tags", client_id="nb-tags")
tag_consumer.subscribe(TOPIC, "TagA || Aa")


def pull_all(consumer, topic):
    """Pull every queue this client owns from its committed offset (0 when none) to its end, then
    commit where it stopped."""
    got = []
    for queue in consumer.allocate(topic):
        offset = consumer.committed(queue, default=0)
        while True:
            result = consumer.pull(queue, offset)
            got += [(queue.queue_id, m["queue_offset"], m["tags"], m["keys"]) for m in result.msg_found_list]
            if result.next_begin_offset == offset:  # NO_NEW_MSG: the end of the queue
                break
            offset = result.next_begin_offset
        consumer.commit(queue, offset)
    return got


delivered = pull_all(tag_consumer, TOPIC)
print(f"TAG 'TagA || Aa': {len(delivered)} messages:", sorted(k for *_, k in delivered))

# COMMAND ----------

# MAGIC %md
# MAGIC ## Pull with an SQL92 selector
# MAGIC The selector runs on each message's properties (`region`, `amount`, `vip`); only TRUE delivers.

# COMMAND ----------

SQL = "region = 'eu' AND amount >= 100"
sql_consumer = PullConsumer(broker, "GID_eu_big", client_id="nb-sql")
sql_consumer.subscribe(TOPIC, SQL, "SQL92")
delivered = pull_all(sql_consumer, TOPIC)
print(f"SQL92 {SQL!r}: {len(delivered)} messages:", sorted(k for *_, k in delivered))

# COMMAND ----------

# MAGIC %md
# MAGIC ## Why did my consumer not get message X?
# MAGIC Find X's queue and offset in the CommitLog, pull one message there, and read the pull's
# MAGIC funnel: entries scanned, passing the tag code (or the bloom bitmap for SQL92), passing the
# MAGIC SQL92 selector, found. The client's exact-tag re-check comes after the broker's answer.

# COMMAND ----------


def explain(consumer, topic, key):
    """Pull one message at X's offset and say which stage kept X from the application."""
    x = store.commitlog.read(spark).where(F.col("keys") == key).first()
    queue = next(q for q in consumer.fetch_subscribe_message_queues(topic) if q.queue_id == x["queue_id"])
    result = consumer.pull(queue, x["queue_offset"], max_nums=1)
    sent = [m["keys"] for m in result.response.messages]  # what the broker answered
    if key in [m["keys"] for m in result.msg_found_list]:
        verdict = "delivered"
    elif key in sent:
        verdict = "the broker sent it; the client's exact tag check dropped it (a tag-code collision)"
    else:
        verdict = f"the broker's filter skipped it (the pull answered {result.response.remark} with {sent})"
    print(f"{key} [tags={x['tags']}, queue {x['queue_id']}, offset {x['queue_offset']}] for {consumer.group} "
          f"[{consumer.subscriptions[topic].sub_string}]: {verdict}")
    print("   ", result.response.result.funnel)


explain(tag_consumer, TOPIC, "order-0")   # TagA: delivered
explain(tag_consumer, TOPIC, "order-1")   # TagB: fails the tag code
explain(tag_consumer, TOPIC, "order-19")  # BB: passes the tag code (collides with Aa), dropped by the client
explain(sql_consumer, TOPIC, "order-11")  # us: passes the tag stage, fails SQL92

# COMMAND ----------

# MAGIC %md
# MAGIC ## Replay a topic for a group with `pull_sequence`
# MAGIC Every pull the group would make, from each queue's min offset to its max, in one Spark
# MAGIC job. `output="entries"` gives one row per delivered message, `output="pulls"` one per pull.
# MAGIC (`rocketfilter replay` is the same as a command, and `spark_jobs/replay.py` as a spark-submit job.)

# COMMAND ----------

data = store.filter_manager.get(TOPIC, "GID_eu_big")  # registered by the SQL92 consumer's heartbeat
sql_filter = ExpressionMessageFilter(build_subscription(TOPIC, SQL, "SQL92"), data, store.filter_manager)
entries = pull_sequence(store, TOPIC, sql_filter, max_msg_nums=2)
pulls = pull_sequence(store, TOPIC, sql_filter, max_msg_nums=2, output="pulls")
entries.groupBy("queue_id").agg(F.count(F.lit(1)).alias("delivered")) \
    .join(pulls.groupBy("queue_id").agg(F.count(F.lit(1)).alias("pulls"),
                                        F.max("next_begin_offset").alias("next_begin_offset")),
          "queue_id", "right").fillna(0, ["delivered"]).orderBy("queue_id").show()
pulls.orderBy("queue_id", "pull_number").select("queue_id", "pull_number", "offset", "pull_status",
                                               "message_count", "next_begin_offset").show()

# COMMAND ----------

# MAGIC %md
# MAGIC ## Consumer offsets
# MAGIC A commit is an upsert into the `consumer_offsets` Delta table; -1 means never committed.

# COMMAND ----------

queue = tag_consumer.allocate(TOPIC)[0]
print("GID_tags committed:", {q.queue_id: tag_consumer.committed(q) for q in tag_consumer.allocate(TOPIC)})
tag_consumer.commit(queue, 1)  # rewind queue 0 to offset 1
print("after rewind:", tag_consumer.committed(queue), "| store:", store.query_consumer_offset("GID_tags", TOPIC, 0))
store.commit_consumer_offset("GID_new", TOPIC, 0, 3)
print("GID_new:", store.query_consumer_offset("GID_new", TOPIC, 0), "| never committed:",
      store.query_consumer_offset("GID_new", TOPIC, 1))
store.tables["consumer_offsets"].read(spark).orderBy("group", "queue_id").show()
