"""The rows of the ``rocketmq`` source: RocketMQ's ``MessageExt`` fields, one row per delivered
message, and the columns of the store each one comes from.

A user schema (``spark.read.format("rocketmq").schema("queue_offset long, body binary")``)
selects and orders columns; a column the source does not have, or a different type, is refused.
"""
from __future__ import annotations

from typing import Dict, List

import pyarrow as pa
from pyspark.sql.types import (BinaryType, IntegerType, LongType, MapType, StringType, StructField,
                               StructType, TimestampType)

# output column -> (Spark type, CommitLog column it is read from)
COLUMNS: Dict[str, tuple] = {
    "topic": (StringType(), "topic"),
    "queue_id": (IntegerType(), "queue_id"),
    "queue_offset": (LongType(), "queue_offset"),
    "commitlog_offset": (LongType(), "commitlog_offset"),
    "msg_id": (StringType(), "msg_id"),
    "tags": (StringType(), "tags"),
    "keys": (StringType(), "keys"),
    "properties": (MapType(StringType(), StringType()), "properties"),
    "body": (BinaryType(), "body"),
    "born_timestamp": (TimestampType(), "born_timestamp"),   # ms in the store
    "store_timestamp": (TimestampType(), "store_timestamp"),
    "flag": (IntegerType(), "flag"),
    "sys_flag": (IntegerType(), "sys_flag"),
    "reconsume_times": (IntegerType(), "reconsume_times"),
}
TIMESTAMPS = ("born_timestamp", "store_timestamp")


def source_schema(include_properties: bool = True) -> StructType:
    """The default schema: every column, ``properties`` only with ``includeProperties``."""
    return StructType([StructField(name, dtype) for name, (dtype, _) in COLUMNS.items()
                       if include_properties or name != "properties"])


def check_schema(schema: StructType) -> List[str]:
    """The output columns of a (user) schema, in its order; ValueError for an unknown column or
    a type other than the source's."""
    names = []
    for f in schema.fields:
        if f.name not in COLUMNS:
            raise ValueError(f"format rocketmq has no column {f.name!r}; its columns are "
                             f"{', '.join(COLUMNS)}")
        want = COLUMNS[f.name][0]
        if f.dataType.simpleString() != want.simpleString():
            raise ValueError(f"format rocketmq: column {f.name!r} is {want.simpleString()}, not "
                             f"{f.dataType.simpleString()}")
        names.append(f.name)
    return names


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects the reader's batches in (timestamps in UTC microseconds)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")
