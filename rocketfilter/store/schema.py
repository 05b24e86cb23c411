"""The store's tables and their Spark/Arrow schemas (documented in docs/storage.md).

A store is a directory or object-store URI holding one Delta table per name below. Nothing is
partitioned by topic: Hive partition paths mangle non-ASCII topic names, so pruning relies on
per-file min/max statistics of (topic, queue_id, queue_offset, commitlog_offset) instead.
"""
from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

# Re-exported: the store's modules call S.arrow_schema.
from rocketfilter.delta.schema import arrow_schema  # noqa: F401

COMMITLOG = "commitlog"
CONSUMEQUEUE = "consumequeue"
CONSUMER_OFFSETS = "consumer_offsets"
TOPICS = "topics"
CONSUMER_GROUPS = "consumer_groups"
TABLES = (COMMITLOG, CONSUMEQUEUE, CONSUMER_OFFSETS, TOPICS, CONSUMER_GROUPS)


def _f(name: str, dtype, nullable: bool = True) -> StructField:
    return StructField(name, dtype, nullable)


COMMITLOG_SCHEMA = StructType([
    _f("commitlog_offset", LongType(), False),
    _f("store_size", IntegerType(), False),
    _f("topic", StringType(), False),
    _f("queue_id", IntegerType(), False),
    _f("queue_offset", LongType(), False),
    _f("tags", StringType()),
    _f("keys", StringType()),
    _f("properties", MapType(StringType(), StringType(), True)),
    _f("body", BinaryType()),
    _f("body_crc", IntegerType()),
    _f("flag", IntegerType()),
    _f("sys_flag", IntegerType()),
    _f("born_timestamp", LongType()),
    _f("born_host", StringType()),
    _f("store_timestamp", LongType()),
    _f("store_host", StringType()),
    _f("reconsume_times", IntegerType()),
    _f("prepared_transaction_offset", LongType()),
    _f("msg_id", StringType()),
])

CONSUMEQUEUE_SCHEMA = StructType([
    _f("topic", StringType(), False),
    _f("queue_id", IntegerType(), False),
    _f("queue_offset", LongType(), False),
    _f("commitlog_offset", LongType(), False),
    _f("size", IntegerType(), False),
    _f("tags_code", LongType()),
    _f("store_timestamp", LongType()),
    _f("filter_bitmap", BinaryType()),
])

CONSUMER_OFFSETS_SCHEMA = StructType([
    _f("group", StringType(), False),
    _f("topic", StringType(), False),
    _f("queue_id", IntegerType(), False),
    _f("offset", LongType(), False),
    _f("updated_at", LongType(), False),
])

TOPICS_SCHEMA = StructType([
    _f("topic", StringType(), False),
    _f("read_queue_nums", IntegerType(), False),
    _f("write_queue_nums", IntegerType(), False),
    _f("perm", IntegerType(), False),
    _f("topic_filter_type", StringType(), False),
    _f("updated_at", LongType(), False),
])

# One row per (group, consumer, topic) of a consumer group as its consumers' heartbeats (or
# save_group) left it: what ConsumerGroup.to_dict holds (rocketfilter.store.groups).
CONSUMER_GROUPS_SCHEMA = StructType([
    _f("group", StringType(), False),
    _f("message_model", StringType(), False),
    _f("allocate_strategy", StringType(), False),        # the strategy's config as JSON
    _f("consume_from_where", StringType(), False),
    _f("position", IntegerType(), False),                # the row's place within its group
    _f("client_id", StringType()),                       # null: a group without consumers
    _f("heartbeats", ArrayType(IntegerType(), False)),   # where in the group's heartbeat order
    _f("consumer_sub_version", LongType()),
    _f("post_subscription_when_pull", BooleanType()),
    _f("unregistered", BooleanType()),
    _f("topic", StringType()),                           # null: the consumer subscribes nothing
    _f("expression", StringType()),
    _f("expression_type", StringType()),
    _f("sub_version", LongType()),
    _f("updated_at", LongType(), False),
])

SCHEMAS = {
    COMMITLOG: COMMITLOG_SCHEMA,
    CONSUMEQUEUE: CONSUMEQUEUE_SCHEMA,
    CONSUMER_OFFSETS: CONSUMER_OFFSETS_SCHEMA,
    TOPICS: TOPICS_SCHEMA,
    CONSUMER_GROUPS: CONSUMER_GROUPS_SCHEMA,
}

# The ConsumeQueue's exact subscription bits (rocketfilter.store.sub_bits): bit i is the broker's
# decision for the topic's slot i. Added by a schema change when the first slot is needed.
SUB_BITS = "sub_bits"
SUB_BITS_FIELD = _f(SUB_BITS, LongType())


def is_sub_bits_field(field: StructField) -> bool:
    return field.name == SUB_BITS and isinstance(field.dataType, LongType)


def _is_promoted_field(field: StructField) -> bool:
    from rocketfilter.store.promoted import is_promoted_field

    return is_promoted_field(field)


# Trailing columns a table may have beyond its schema above (see delta_schema.check_schema):
# the CommitLog's promoted properties (rocketfilter.store.promoted) and the bits.
EXTRA_COLUMNS = {COMMITLOG: _is_promoted_field, CONSUMEQUEUE: is_sub_bits_field}

# Columns whose per-file min/max the store writes and prunes on.
STATS_COLUMNS = {
    COMMITLOG: ("commitlog_offset", "topic", "queue_id", "queue_offset", "store_timestamp"),
    CONSUMEQUEUE: ("topic", "queue_id", "queue_offset", "commitlog_offset", "store_timestamp"),
    CONSUMER_OFFSETS: ("group", "topic", "queue_id"),
    TOPICS: ("topic",),
    CONSUMER_GROUPS: ("group", "client_id", "topic"),
}
