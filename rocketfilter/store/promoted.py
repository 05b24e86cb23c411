"""Promoted properties: a property parsed once, at write, into a typed CommitLog column.

A selector reads a property as a String and converts it with Java's ``Integer.valueOf``,
``Long.valueOf``, ``Double.valueOf`` or ``Boolean.valueOf`` (SEMANTICS §5.4), which over a
``map<string,string>`` means a map lookup and a parse for every message at every read. A promoted
property is one struct column per property, written at put, import, dispatch and ``promote``
with the very Columns the compiler would otherwise build at read time
(:mod:`rocketfilter.selector.javacasts`)::

    prop_age: struct<value: string,      -- properties['age'], null when absent
                     as_int: int,        -- Integer.valueOf(value), null where it throws
                     as_long: bigint,    -- Long.valueOf(value)
                     as_double: double,  -- Double.valueOf(value)
                     as_boolean: boolean>  -- Boolean.valueOf(value): never throws

A conversion succeeded exactly where ``value`` is not null and its ``as_*`` field is not null,
so the success flags take no column of their own. The column's field metadata
``rocketfilter.property`` names the property; the column name is ``prop_<name>`` when that is a
plain identifier no other column spells the same ignoring case (Spark and Delta compare names
case-insensitively), else ``prop_x<hex of the UTF-8 name>``. The map keeps every property; the
compiler uses a promoted column when the table has it (``Selector.to_column(..., promoted=)``).

>>> column_name("age", [])
'prop_age'
>>> column_name("a.b", [])
'prop_x612e62'
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (BooleanType, DoubleType, IntegerType, LongType, StringType,
                               StructField, StructType)

from rocketfilter.selector.javacasts import (boolean_value_of, double_value_of, integer_value_of,
                                             long_value_of)

PROPERTY_KEY = "rocketfilter.property"   # field metadata naming the promoted property
PREFIX = "prop_"
PROMOTED_TYPE = StructType([
    StructField("value", StringType()),
    StructField("as_int", IntegerType()),
    StructField("as_long", LongType()),
    StructField("as_double", DoubleType()),
    StructField("as_boolean", BooleanType()),
])
_PLAIN = re.compile(r"[A-Za-z0-9_]{1,64}")

# MessageConst.STRING_HASH_SET: the properties RocketMQ itself sets. "User properties" are the
# others; the frequency mode (promoteTopProperties) promotes only those.
SYSTEM_PROPERTIES = frozenset({
    "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC",
    "REAL_QID", "TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID",
    "TRANSFER_FLAG", "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME", "UNIQ_KEY",
    "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "POP_CK", "POP_CK_OFFSET", "1ST_POP_TIME",
    "TRAN_PREPARED_QUEUE_OFFSET", "DUP_INFO", "EXTEND_UNIQ_INFO", "INSTANCE_ID", "CORRELATION_ID",
    "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE",
    "INNER_MULTI_QUEUE_OFFSET", "TIMER_DELAY_SEC", "TIMER_DELIVER_MS", "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY",
    "TIMER_DELAY_LEVEL", "__BORNHOST", "BORN_TIMESTAMP",
})


def is_promoted_field(field: StructField) -> bool:
    """Whether ``field`` is a promoted-property column (the CommitLog's extra columns)."""
    return (field.name.startswith(PREFIX) and field.dataType == PROMOTED_TYPE
            and isinstance(field.metadata.get(PROPERTY_KEY), str))


def column_name(name: str, taken: Iterable[str]) -> str:
    """The column for property ``name``, given the column names already ``taken``."""
    taken = {t.lower() for t in taken}
    plain = PREFIX + name
    if _PLAIN.fullmatch(name) and plain.lower() not in taken:
        return plain
    return f"{PREFIX}x{name.encode('utf-8').hex()}"


def promoted_properties(schema: StructType) -> Dict[str, str]:
    """Property name -> column, for the promoted columns of ``schema``."""
    return {f.metadata[PROPERTY_KEY]: f.name for f in schema.fields if is_promoted_field(f)}


def new_fields(schema: StructType, names: Sequence[str]) -> List[StructField]:
    """The struct fields that promote ``names`` not yet promoted in ``schema``."""
    have = promoted_properties(schema)
    taken = list(schema.fieldNames())
    out = []
    for name in dict.fromkeys(names):
        if not isinstance(name, str) or not name:
            raise ValueError(f"a promoted property is a non-empty string, got {name!r}")
        if name in have:
            continue
        column = column_name(name, taken)
        taken.append(column)
        out.append(StructField(column, PROMOTED_TYPE, True, {PROPERTY_KEY: name}))
    return out


def promoted_fields(properties: Column, name: str) -> Dict[str, Column]:
    """The fields of property ``name``'s promoted struct, by name, in order."""
    value = properties.getItem(name)
    return {"value": value, "as_int": integer_value_of(value)[0], "as_long": long_value_of(value)[0],
            "as_double": double_value_of(value)[0], "as_boolean": boolean_value_of(value)}


def promoted_struct(properties: Column, name: str) -> Column:
    """The promoted struct of property ``name``: the value and the compiler's conversions."""
    return F.struct(*[c.alias(f) for f, c in promoted_fields(properties, name).items()])


def with_promoted(df: DataFrame, schema: StructType, properties: str = "properties") -> DataFrame:
    """``df`` (base CommitLog columns) with every promoted column of ``schema`` computed from
    its ``properties`` map, in ``schema``'s column order."""
    mapping = promoted_properties(schema)
    if not mapping:
        return df.select(*[c for c in schema.fieldNames()])
    props = F.col(properties)
    columns = {column: promoted_struct(props, name) for name, column in mapping.items()}
    return df.select(*[columns[c].alias(c) if c in columns else F.col(c) for c in schema.fieldNames()])


def frequent_user_properties(df: DataFrame, n: int) -> List[str]:
    """The ``n`` most frequent user (non-system) property names of each topic of ``df`` (a
    CommitLog-shaped DataFrame), together; ties go to the smaller name. One aggregation."""
    if n <= 0:
        return []
    keys = (df.select("topic", F.explode(F.map_keys("properties")).alias("key"))
            .where(~F.col("key").isin(sorted(SYSTEM_PROPERTIES)))
            .groupBy("topic", "key").count().collect())
    by_topic: Dict[str, list] = {}
    for r in keys:
        by_topic.setdefault(r["topic"], []).append((-r["count"], r["key"]))
    chosen: Dict[str, None] = {}
    for topic in sorted(by_topic):
        for _, key in sorted(by_topic[topic])[:n]:
            chosen[key] = None
    return list(chosen)


def mapping_for(properties: Mapping[str, str], wanted: Iterable[str]) -> Dict[str, str]:
    """The part of ``properties`` (name -> column) a selector reading ``wanted`` uses."""
    return {name: properties[name] for name in wanted if name in properties}
