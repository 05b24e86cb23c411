"""Classic or Spark Connect: the few questions whose answer differs between the two.

A classic session drives a JVM through py4j (``sparkContext``, ``_jvm``, RDDs); a Spark Connect
session (``pyspark.sql.connect.session.SparkSession``, as on Databricks serverless and shared
clusters) only sends plans over gRPC. Code on the data paths asks here instead of reaching for
``sparkContext``, so the same code runs on both.
"""
from __future__ import annotations

import weakref
from typing import Any, Dict, Hashable, Mapping, Optional, Set

from pyspark.errors import PySparkException
from pyspark.sql import functions as F

# Sessions whose default parallelism was probed with a query (Connect only).
_PROBED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# Per session, the conf keys it refused to change (asked once, then left alone).
_REFUSED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
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


# --- settings and caching a server may refuse -------------------------------------------------
# A Spark Connect server may allow only some settings and no caching (Databricks serverless
# refuses most keys with CONFIG_NOT_AVAILABLE, and PERSIST TABLE). These helpers are for what
# makes work faster, never for what an answer depends on: a refusal just skips the speed-up.

def _refused(spark) -> Set[str]:
    try:
        return _REFUSED.setdefault(spark, set())
    except TypeError:  # not weak-referenceable: remember nothing
        return set()


def set_conf(spark, values: Mapping[str, str]) -> Dict[str, Optional[str]]:
    """Set ``values`` on ``spark``'s session conf where the session allows it; return each set
    key's previous value (None: unset) for :func:`restore_conf`.

    A key the session refuses is skipped, and not asked again for that session. On Spark
    Connect, reading and setting every key take one round trip each instead of one per key.

    >>> previous = set_conf(spark, {"spark.sql.codegen.wholeStage": "false"})   # doctest: +SKIP
    >>> restore_conf(spark, previous)                                            # doctest: +SKIP
    """
    refused = _refused(spark)
    wanted = {k: str(v) for k, v in values.items() if k not in refused}
    previous: Optional[Dict[str, Optional[str]]] = None
    if wanted and is_connect(spark):
        try:
            previous = _connect_get(spark, list(wanted))
            _connect_set(spark, wanted)  # stops at the first refused key: then one at a time
            return previous
        except PySparkException:
            pass
    applied: Dict[str, Optional[str]] = {}
    for key, value in wanted.items():
        try:
            before = previous[key] if previous is not None else spark.conf.get(key, None)
            spark.conf.set(key, value)
        except PySparkException:
            refused.add(key)
        else:
            applied[key] = before
    return applied


def get_conf(spark, keys) -> Dict[str, Optional[str]]:
    """Each key's value in ``spark``'s session conf, None when unset or not shown (one round trip
    on Spark Connect)."""
    if is_connect(spark):
        try:
            return _connect_get(spark, list(keys))
        except PySparkException:
            return {k: None for k in keys}
    found: Dict[str, Optional[str]] = {}
    for key in keys:
        try:
            found[key] = spark.conf.get(key, None)
        except PySparkException:
            found[key] = None
    return found


def restore_conf(spark, previous: Mapping[str, Optional[str]]) -> None:
    """Put back what :func:`set_conf` changed: the previous values, unsetting keys that had none."""
    back = {k: v for k, v in previous.items() if v is not None}
    gone = [k for k, v in previous.items() if v is None]
    if is_connect(spark):
        if back:
            _connect_set(spark, back)
        if gone:
            _connect_unset(spark, gone)
        return
    for key in gone:
        spark.conf.unset(key)
    for key, value in back.items():
        spark.conf.set(key, value)


def _connect_config(spark, **operation):
    """One Config round trip to a Spark Connect server (what ``spark.conf`` does per key)."""
    from pyspark.sql.connect import proto

    return spark.client.config(proto.ConfigRequest.Operation(**operation))


def _connect_get(spark, keys) -> Dict[str, Optional[str]]:
    from pyspark.sql.connect import proto

    pairs = [proto.KeyValue(key=k) for k in keys]  # no value: None when unset
    result = _connect_config(spark, get_with_default=proto.ConfigRequest.GetWithDefault(pairs=pairs))
    return dict(result.pairs)


def _connect_set(spark, values: Mapping[str, str]) -> None:
    from pyspark.sql.connect import proto

    pairs = [proto.KeyValue(key=k, value=v) for k, v in values.items()]
    _connect_config(spark, set=proto.ConfigRequest.Set(pairs=pairs))


def _connect_unset(spark, keys) -> None:
    from pyspark.sql.connect import proto

    _connect_config(spark, unset=proto.ConfigRequest.Unset(keys=list(keys)))


def persist_if_allowed(df, storage_level) -> bool:
    """``df.persist(storage_level)`` when ``df``'s session allows caching; whether it did.

    A classic session always does (lazily). A Spark Connect server answers at once, and may
    refuse (Databricks serverless: PERSIST TABLE is not supported); the caller then computes
    ``df`` again where it would have read the cache.
    """
    try:
        df.persist(storage_level)
    except PySparkException:
        return False
    return True
