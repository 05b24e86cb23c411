# Databricks notebook source
# MAGIC %md
# MAGIC # rocketfilter quickstart
# MAGIC
# MAGIC Filter messages exactly as a RocketMQ 5.x broker would:
# MAGIC 1. **TAG subscriptions**: the broker's tag-code check, then the client's exact re-check.
# MAGIC 2. **SQL92 selectors** over message properties.
# MAGIC 3. **Bloom bitmaps**: the per-message bits that let a broker skip a SQL92 group's misses.
# MAGIC
# MAGIC On Databricks the notebook uses the cluster's `spark`; elsewhere run it as
# MAGIC `python notebooks/01_filtering_quickstart.py` after `pip install -e .`.

# COMMAND ----------

import os
import sys

try:  # a plain checkout: use the package next to this folder
    import rocketfilter  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark.sql import functions as F

from rocketfilter.bloom import BloomFilter, bitmap_hit_column
from rocketfilter.functions import sql92, tag_exact_filter, tag_filter
from rocketfilter.message_columns import normalize_properties_column
from rocketfilter.selector import parse
from rocketfilter.session import get_spark
from rocketfilter.tags import build_subscription, tags_code

try:
    spark  # noqa: B018 - defined by Databricks
except NameError:
    spark = get_spark(app_name="rocketfilter-quickstart")

# COMMAND ----------

# MAGIC %md
# MAGIC ## Messages
# MAGIC A message has a `TAGS` string, its tag code (Java `String.hashCode`, 0 when untagged) and a
# MAGIC string-to-string property map. The broker sees properties only after their string round trip,
# MAGIC so normalise them first.

# COMMAND ----------

rows = []
for i in range(10):
    tags = ["TAG_A", "TAG_B", "TAG_C"][i % 3]
    props = {"age": str(i), "name": f"user-{i}", "isGender": "true" if i % 2 == 0 else "false"}
    rows.append((f"msg-{i}", tags, tags_code(tags), props))
messages = spark.createDataFrame(
    rows, "msg_id string, tags string, tags_code bigint, properties map<string,string>"
).withColumn("properties", normalize_properties_column("properties"))
messages.show(truncate=False)

# COMMAND ----------

# MAGIC %md
# MAGIC ## TAG subscription
# MAGIC `tag_filter` is the broker's check on the tag code (hash collisions pass), `tag_exact_filter`
# MAGIC the client's exact re-check. A message is delivered only if it passes both.

# COMMAND ----------

subscription = "TAG_A || TAG_C"
print(build_subscription("MyTopic", subscription))
messages.filter(tag_filter(subscription)).filter(tag_exact_filter(subscription)).select("msg_id", "tags").show()

# COMMAND ----------

# MAGIC %md
# MAGIC ## SQL92 selector
# MAGIC The same selector runs in Python (`parse(...).matches`) and in Spark (`sql92`).

# COMMAND ----------

selector = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL) AND (isGender = TRUE)"
print(parse(selector).matches({"age": "6", "name": "x", "isGender": "true"}))
messages.filter(sql92(selector)).select("msg_id", "properties").show(truncate=False)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Bloom bitmap
# MAGIC With the broker defaults (20 % error rate, 32 groups) each group owns k=3 of m=112 bits. A
# MAGIC message's bitmap holds the bits of every group whose selector was TRUE for it.

# COMMAND ----------

bloom = BloomFilter()
group_bits = bloom.bloom_data("GID_adults", "MyTopic").bit_pos
adults = parse("age >= 6")
bitmaps = [(f"msg-{i}", bytearray(bloom.bitmap([group_bits] if adults.matches({"age": str(i)}) else [])))
           for i in range(10)]
spark.createDataFrame(bitmaps, "msg_id string, bitmap binary").select(
    "msg_id", F.hex("bitmap").alias("bitmap"), bitmap_hit_column("bitmap", group_bits).alias("GID_adults_hit")
).show(truncate=False)
