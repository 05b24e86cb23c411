# Databricks notebook source
# MAGIC %md
# MAGIC # rocketfilter: consumer groups, and the messages a group silently loses
# MAGIC
# MAGIC Seed 003, RocketMQ's most reported filtering pain: two consumers of one group subscribe the
# MAGIC same topic with different tags. The broker keeps one subscription per topic for the whole
# MAGIC group (the later one), so messages go missing without any error.
# MAGIC 1. a topic `SUBSCRIBE_TEST` with 4 queues and 8 messages: 4 tagged `tagA`, then 4 `tagB`;
# MAGIC 2. consumer A subscribes `tagA`, then consumer B `tagB`, through a `Broker` (their heartbeats
# MAGIC    land in the store's `consumer_groups` table);
# MAGIC 3. `replay_group`: what each consumer consumes, in one Spark job;
# MAGIC 4. `diagnose_group`: who subscribes what, who owns which queues, what is lost and why;
# MAGIC 5. a plot of messages per consumer and lost messages per reason.
# MAGIC
# MAGIC The store goes to the `STORE` widget or environment variable, else to a new temporary
# MAGIC directory, which the last cell removes (with the plot in it: give `STORE` to keep both).
# MAGIC Elsewhere than Databricks run it as `python notebooks/03_consumer_groups.py`.

# COMMAND ----------

import os
import shutil
import sys
import tempfile

try:  # a plain checkout: use the package next to this folder
    import rocketfilter  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketfilter import diagnose_group, replay_group
from rocketfilter.pull.broker import Broker
from rocketfilter.pull.client import PullConsumer
from rocketfilter.session import get_spark
from rocketfilter.store import MessageStore

try:
    spark  # noqa: B018 - defined by Databricks
except NameError:
    spark = get_spark(app_name="rocketfilter-consumer-groups")

try:
    dbutils.widgets.text("STORE", "")  # noqa: F821 - defined by Databricks
    STORE = dbutils.widgets.get("STORE")  # noqa: F821
except NameError:
    STORE = os.environ.get("STORE", "")
TEMPORARY = not STORE   # made here, so removed by the last cell
STORE = STORE or tempfile.mkdtemp(prefix="rf-groups-")
TOPIC, GROUP = "SUBSCRIBE_TEST", "GID_seed003"
print("store:", STORE)

# COMMAND ----------

# MAGIC %md
# MAGIC ## A topic, 8 messages, two consumers
# MAGIC `put_messages` deals the messages round robin over the 4 queues: each queue holds one
# MAGIC `tagA` message (offset 0) and one `tagB` message (offset 1). Each `subscribe` is a heartbeat.

# COMMAND ----------

store = MessageStore.open(STORE, spark)
store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
store.put_messages([{"topic": TOPIC, "tags": "tagA" if i < 4 else "tagB", "keys": f"m{i}", "body": f"message {i}"}
                    for i in range(8)])

broker = Broker(store)
a = PullConsumer(broker, GROUP, client_id="A")
b = PullConsumer(broker, GROUP, client_id="B")
a.subscribe(TOPIC, "tagA")
b.subscribe(TOPIC, "tagB")   # later: the group's table now says tagB for everyone
print("stored groups:", store.list_groups())
print(store.load_group(GROUP).to_dict())

# COMMAND ----------

# MAGIC %md
# MAGIC ## What each consumer consumes
# MAGIC The group as its heartbeats left it in the store, replayed: AVG gives A queues 0-1 and B
# MAGIC queues 2-3; every pull is filtered with the group's `tagB`; each client re-checks with its own.

# COMMAND ----------

consumed = replay_group(store, GROUP, TOPIC)
consumed.orderBy("client_id", "queue_id", "queue_offset") \
    .select("client_id", "queue_id", "queue_offset", "tags", "keys", "pull_number", "next_begin_offset").show()

# COMMAND ----------

# MAGIC %md
# MAGIC ## The diagnosis
# MAGIC Every message some consumer wants that the group never consumes, with the reason:
# MAGIC `filtered_by_group_subscription` (the broker filtered it with the group's table) or
# MAGIC `dropped_by_client_recheck` (the broker sent it to a consumer whose own subscription drops it).

# COMMAND ----------

diagnosis = diagnose_group(store, GROUP, TOPIC)
print(diagnosis)
diagnosis.lost.orderBy("queue_id", "queue_offset") \
    .select("queue_id", "queue_offset", "tags", "reason", "client_id", "wanted_by").show(truncate=False)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Messages per consumer, lost messages per reason
# MAGIC A bar chart when matplotlib is installed (it is on Databricks), else the same as a table.

# COMMAND ----------

per_consumer = diagnosis.consumed_counts()
per_reason = diagnosis.lost_counts()
try:
    import matplotlib

    if "DATABRICKS_RUNTIME_VERSION" not in os.environ:
        matplotlib.use("Agg")   # a plain run draws to a file, not a window
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

if plt is None:
    print(f"{'consumer':<12}{'consumed':>10}")
    for cid, n in per_consumer.items():
        print(f"{cid:<12}{n:>10}")
    print(f"{'lost because':<34}{'messages':>10}")
    for reason, n in per_reason.items():
        print(f"{reason:<34}{n:>10}")
else:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    left.bar(list(per_consumer), list(per_consumer.values()))
    left.set_title("messages consumed per consumer")
    right.barh(list(per_reason), list(per_reason.values()), color="tab:red")
    right.set_title("lost messages per reason")
    fig.tight_layout()
    if "DATABRICKS_RUNTIME_VERSION" in os.environ:
        plt.show()
    else:
        fig.savefig(os.path.join(STORE, "consumer_groups.png"))
        print("plot:", os.path.join(STORE, "consumer_groups.png"))

# COMMAND ----------

# MAGIC %md
# MAGIC ## The fix, checked
# MAGIC Give every consumer of a group the same subscription (or use two groups). The same
# MAGIC consumers, both subscribing `tagA || tagB`, lose nothing.

# COMMAND ----------

a.subscribe(TOPIC, "tagA || tagB")
b.subscribe(TOPIC, "tagA || tagB")
fixed = diagnose_group(store, GROUP, TOPIC)
print("consistent:", fixed.consistent, "| consumed:", fixed.consumed_counts(), "| lost:", fixed.lost_counts())

# COMMAND ----------

# MAGIC %md
# MAGIC ## Clean up
# MAGIC A store this notebook made in a temporary directory is removed (one given as `STORE` is
# MAGIC kept).

# COMMAND ----------

if TEMPORARY:
    shutil.rmtree(STORE, ignore_errors=True)
    print("removed the temporary store", STORE)
