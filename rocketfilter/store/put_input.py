"""What ``put_messages`` accepts, checked on the driver before any Spark job runs.

A list of messages is checked field by field, and an error names the message's index and the
field; a DataFrame is checked by its schema (column names and types). Values only a scan can see
in a DataFrame (a null topic, a queue id out of range) are counted by the put's first pass and
reported before anything is written.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rocketfilter.checks import INT_MAX, LONG_MAX

INPUT_SCHEMA = T.StructType([
    T.StructField("topic", T.StringType()),
    T.StructField("tags", T.StringType()),
    T.StructField("keys", T.StringType()),
    T.StructField("properties", T.MapType(T.StringType(), T.StringType())),
    T.StructField("body", T.BinaryType()),
    # long, not int: an out-of-range id must reach the range check, not overflow a cast.
    T.StructField("queue_id", T.LongType()),
    T.StructField("flag", T.IntegerType()),
    T.StructField("born_timestamp", T.LongType()),
    T.StructField("born_host", T.StringType()),
])
FIELDS = tuple(INPUT_SCHEMA.fieldNames())
_ONE_FILE_ROWS = 100_000
_INTS = {"queue_id": (0, INT_MAX), "flag": (-INT_MAX - 1, INT_MAX), "born_timestamp": (0, LONG_MAX)}


# Short.MAX_VALUE: a longer properties string is MessageExtEncoder's PROPERTIES_SIZE_EXCEEDED.
MAX_PROPERTIES_LENGTH = 32767


class PutMessageError(ValueError):
    """A message the store refuses (no topic, unknown topic, queue out of range, a field of the
    wrong type); nothing of the put was written."""


def as_dict(message) -> dict:
    """A message (a mapping, or an object with the input fields as attributes) as a dict."""
    if isinstance(message, Mapping):
        return dict(message)
    return {name: getattr(message, name) for name in FIELDS if hasattr(message, name)}


def _type(value: Any) -> str:
    return type(value).__name__


def check_message(i: int, m: Mapping[str, Any]) -> None:
    """Raise PutMessageError naming message ``i`` and the field when it is not one RocketMQ's
    producer would send."""
    def refuse(field: str, why: str):
        raise PutMessageError(f"message {i}: field {field!r}: {why}")

    unknown = set(m) - set(FIELDS)
    if unknown:
        raise PutMessageError(f"message {i}: unknown field(s) {sorted(unknown)}; "
                              f"expected some of {list(FIELDS)}")
    topic = m.get("topic")
    if topic is None or topic == "":
        refuse("topic", "a message has no topic")
    if not isinstance(topic, str):
        refuse("topic", f"must be a str, got {_type(topic)}")
    for field in ("tags", "born_host"):
        if m.get(field) is not None and not isinstance(m[field], str):
            refuse(field, f"must be a str or None, got {_type(m[field])}")
    keys = m.get("keys")
    if keys is not None and not isinstance(keys, str):
        if not isinstance(keys, (list, tuple)) or not all(isinstance(k, str) for k in keys):
            refuse("keys", f"must be a str or a list of str, got {keys!r:.80}")
    body = m.get("body")
    if body is not None and not isinstance(body, (bytes, bytearray, memoryview, str)):
        refuse("body", f"must be bytes or str, got {_type(body)}")
    props = m.get("properties")
    if props is not None:
        if not isinstance(props, Mapping):
            refuse("properties", f"must be a dict of str to str, got {_type(props)}")
        for key, value in props.items():
            if not isinstance(key, str):
                refuse("properties", f"key {key!r} must be a str, got {_type(key)}")
            if value is not None and not isinstance(value, str):
                refuse("properties", f"value of {key!r} must be a str (properties are strings in "
                                     f"RocketMQ), got {_type(value)} {value!r:.40}")
    for field, (lo, hi) in _INTS.items():
        value = m.get(field)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            refuse(field, f"must be an int, got {_type(value)}")
        if not lo <= value <= hi:
            refuse(field, f"{value} is outside {lo}..{hi}")


def body_too_large(size: int, max_message_size: int) -> str:
    """Why MessageExtEncoder refuses a body (MESSAGE_ILLEGAL), or "" when it does not."""
    if size <= max_message_size:
        return ""
    return (f"{size} bytes, over maxMessageSize {max_message_size} (the broker refuses it: "
            "MESSAGE_ILLEGAL, message body size exceeded)")


def properties_too_long(length: int) -> str:
    """Why MessageExtEncoder refuses a properties string (PROPERTIES_SIZE_EXCEEDED), or ""."""
    if length <= MAX_PROPERTIES_LENGTH:
        return ""
    return (f"the properties string is {length} bytes, over {MAX_PROPERTIES_LENGTH} "
            "(Short.MAX_VALUE; the broker refuses it: PROPERTIES_SIZE_EXCEEDED)")


def _wire_length(m: Mapping[str, Any], cluster_name: str) -> int:
    """The bytes of the stored properties string: the user's properties with the TAGS, KEYS and
    WAIT the producer sets and the CLUSTER the broker sets (as put._with_producer_properties)."""
    from rocketfilter.message import java_utf8_bytes

    tags, keys = m.get("tags"), m.get("keys")
    keys = " ".join(keys) if isinstance(keys, (list, tuple)) else keys
    props = {k: v for k, v in (m.get("properties") or {}).items()
             if not ((k == "TAGS" and tags) or (k == "KEYS" and keys) or k == "CLUSTER")}
    extra = {"TAGS": tags, "KEYS": keys, "WAIT": None if "WAIT" in props else "true",
             "CLUSTER": cluster_name}
    props.update({k: v for k, v in extra.items() if v})
    return sum(len(java_utf8_bytes(k)) + len(java_utf8_bytes(v)) + 2
               for k, v in props.items() if v is not None)


def check_limits(i: int, m: Mapping[str, Any], max_message_size: int, cluster_name: str) -> None:
    """PutMessageError naming message ``i`` when the broker would refuse it for its size."""
    body = m.get("body")
    size = 0 if body is None else len(body.encode("utf-8")) if isinstance(body, str) \
        else memoryview(body).nbytes
    why = body_too_large(size, max_message_size)
    if why:
        raise PutMessageError(f"message {i}: field 'body': {why}")
    why = properties_too_long(_wire_length(m, cluster_name))
    if why:
        raise PutMessageError(f"message {i}: field 'properties': {why}")


def messages_from_list(spark, messages: List[Any]) -> DataFrame:
    """A checked list of messages (dicts, or objects with those attributes) as a DataFrame of
    :data:`INPUT_SCHEMA`."""
    rows = []
    for i, message in enumerate(messages):
        m = as_dict(message)
        check_message(i, m)
        body, keys = m.get("body"), m.get("keys")
        rows.append({
            **{k: m.get(k) for k in FIELDS},
            "body": body.encode("utf-8") if isinstance(body, str) else
            (bytes(body) if body is not None else None),
            "keys": " ".join(keys) if isinstance(keys, (list, tuple)) else keys,
            "properties": list((m.get("properties") or {}).items()),
        })
    from rocketfilter.store.schema import arrow_schema

    df = spark.createDataFrame(pa.Table.from_pylist(rows, schema=arrow_schema(INPUT_SCHEMA)))
    # A list is small: one task writes one file instead of one per core.
    return df.coalesce(1) if len(rows) <= _ONE_FILE_ROWS else df


_ACCEPTED: Dict[str, tuple] = {
    "topic": (T.StringType,),
    "tags": (T.StringType,),
    "keys": (T.StringType, T.ArrayType),
    "properties": (T.MapType,),
    "body": (T.BinaryType, T.StringType),
    "queue_id": (T.IntegerType, T.LongType, T.ShortType, T.ByteType),
    "flag": (T.IntegerType, T.ShortType, T.ByteType),
    "born_timestamp": (T.LongType, T.IntegerType),
    "born_host": (T.StringType,),
}


def _accepted(name: str, dtype) -> bool:
    ok = isinstance(dtype, _ACCEPTED[name])
    if isinstance(dtype, T.ArrayType):
        ok = isinstance(dtype.elementType, T.StringType)
    if isinstance(dtype, T.MapType):
        ok = isinstance(dtype.keyType, T.StringType) and isinstance(dtype.valueType, T.StringType)
    return ok


def check_input_schema(schema: T.StructType) -> None:
    """PutMessageError naming the column for a missing topic column or a wrong type (columns
    the store does not know are ignored)."""
    names = schema.fieldNames()
    if "topic" not in names:
        raise PutMessageError(f"put_messages needs a 'topic' column; got {names}")
    for field in INPUT_SCHEMA.fields:
        if field.name in names and not _accepted(field.name, schema[field.name].dataType):
            raise PutMessageError(f"put_messages: column {field.name!r} has type "
                                  f"{schema[field.name].dataType.simpleString()}, expected "
                                  f"{field.dataType.simpleString()}")


def conform(df: DataFrame) -> DataFrame:
    """Select the input columns the store knows (others are ignored), adding nulls for absent
    ones; PutMessageError naming the column for a missing topic column or a wrong type."""
    check_input_schema(df.schema)
    cols = []
    for field in INPUT_SCHEMA.fields:
        if field.name not in df.columns:
            cols.append(F.lit(None).cast(field.dataType).alias(field.name))
            continue
        dtype = df.schema[field.name].dataType
        col = F.col(field.name)
        if isinstance(dtype, T.StringType) and field.name == "body":
            col = F.encode(col, "UTF-8")
        elif isinstance(dtype, T.ArrayType):
            col = F.array_join(col, " ")
        cols.append(col.cast(field.dataType).alias(field.name))
    return df.select(*cols)
