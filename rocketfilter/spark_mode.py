"""Classic or Spark Connect: the few questions whose answer differs between the two.

A classic session drives a JVM through py4j (``sparkContext``, ``_jvm``, RDDs); a Spark Connect
session (``pyspark.sql.connect.session.SparkSession``, as on Databricks serverless and shared
clusters) only sends plans over gRPC. Code on the data paths asks here instead of reaching for
``sparkContext``, so the same code runs on both.
"""
from __future__ import annotations

import weakref
from typing import Any, Hashable

from pyspark.sql import functions as F

# Sessions whose default parallelism was probed with a query (Connect only).
_PROBED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_PROBE_ROWS = 1 << 16


def is_connect(spark: Any) -> bool:
    """True when ``spark`` is a Spark Connect session (or builder), False for a classic one.

    Decided by the class's module, so a classic-only install (no grpc) never imports the Connect
    client to answer.

    >>> is_connect(spark)   # doctest: +SKIP
    False
    """
    return any(cls.__module__.startswith("pyspark.sql.connect") for cls in type(spark).__mro__)


def is_remote() -> bool:
    """True when ``pyspark.sql.functions`` builds Spark Connect Columns in this process.

    pyspark decides this by the process-global environment variable
    ``SPARK_CONNECT_MODE_ENABLED``, set when a Connect session starts.
    """
    from pyspark.sql.utils import is_remote as _is_remote

    return _is_remote()


def column_cache_key() -> Hashable:
    """What a cached Spark Column is valid for: compare with ``==`` before reusing one.

    A classic Column is a py4j handle into one SparkContext's JVM: the key is that context, so a
    new context (or none) means new Columns. A Connect Column is a plan fragment that any Connect
    session can use: the key is ``"connect"``. The two never compare equal, so a process that
    switches mode never hands a classic Column to a Connect DataFrame or the reverse.
    """
    if is_remote():
        return "connect"
    from pyspark import SparkContext

    return ("classic", SparkContext._active_spark_context)


def default_parallelism(spark) -> int:
    """How many tasks keep every core of ``spark``'s cluster busy.

    A classic session answers with ``sparkContext.defaultParallelism``. A Connect session has no
    SparkContext: ``spark.default.parallelism`` when set, else one small query reads how many
    partitions Spark gives a ``range`` (its leaf-node parallelism, which is the default
    parallelism unless set otherwise), once per session.
    """
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    value = _conf_int(spark, "spark.default.parallelism")
    if value:
        return value
    try:
        return _PROBED[spark]
    except (KeyError, TypeError):
        pass
    # Every partition of the range holds rows, so the highest partition id is the count - 1.
    ids = spark.range(0, _PROBE_ROWS).select(F.spark_partition_id().alias("p"))
    row = ids.agg(F.max("p").alias("p")).collect()[0]
    found = max(1, int(row["p"]) + 1)
    try:
        _PROBED[spark] = found
    except TypeError:  # not weak-referenceable: probe again next time
        pass
    return found


def _conf_int(spark, key: str) -> int:
    """A positive integer setting of ``spark``'s conf, or 0 when unset or not a number."""
    try:
        value = spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - a Connect server may refuse to show a key
        return 0
    try:
        return max(0, int(value)) if value is not None else 0
    except ValueError:
        return 0
