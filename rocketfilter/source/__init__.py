"""The topic as a Spark source: ``spark.read`` / ``spark.readStream.format("rocketmq")``, and the
``rocketmq`` sink (``df.write.format("rocketmq")``), over a rocketfilter store (docs/source.md).

:func:`register` makes the format known to a session (``get_spark`` does it for the sessions it
returns); :func:`read` and :func:`read_stream` are the same reads with keyword arguments.

>>> import rocketfilter
>>> df = rocketfilter.read(spark, "/data/rf", "Orders", "TagA || TagB")          # doctest: +SKIP
>>> stream = rocketfilter.read_stream(spark, "/data/rf", "Orders", "amount > 100",
...                                   "SQL92", consumerGroup="GID_orders")          # doctest: +SKIP
"""
from __future__ import annotations

import logging
import weakref
from typing import Any

from rocketfilter.source.datasource import FORMAT, RocketMQDataSource

__all__ = ["FORMAT", "RocketMQDataSource", "register", "read", "read_stream"]

log = logging.getLogger(__name__)
_REGISTERED: "weakref.WeakSet" = weakref.WeakSet()


def register(spark=None):
    """Register the ``rocketmq`` format with ``spark`` (default: ``get_spark()``), classic or
    Spark Connect; once per session. Returns the session.

    >>> register(spark).read.format("rocketmq")                      # doctest: +SKIP
    """
    if spark is None:
        from rocketfilter.session import get_spark

        return get_spark()   # which registers
    try:
        if spark in _REGISTERED:
            return spark
    except TypeError:
        pass
    try:
        spark.dataSource.register(RocketMQDataSource)
    except Exception as error:  # noqa: BLE001 - pyspark raises AnalysisException by error class
        # Spark looks format names up in the active session: there it resolves already.
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(error):
            raise
        log.debug("format %s already resolves for this session: %s", FORMAT, error)
    try:
        _REGISTERED.add(spark)
    except TypeError:  # not weak-referenceable: registering again is harmless
        pass
    return spark


def _options(store: str, topic: str, sub_expression: str, expression_type: str, options: dict) -> dict:
    out = {"store": str(store), "topic": topic, "subExpression": sub_expression,
           "expressionType": expression_type}
    out.update({k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in options.items()})
    # An S3 store's options as this process resolves them (its AWS environment): the source's
    # planning runs in Python processes of the JVM's, whose environment may differ.
    from rocketfilter.delta.object_store import storage_options

    given = {k[len("storage."):]: v for k, v in out.items() if k.startswith("storage.")}
    for key, value in (storage_options(str(store), given) or {}).items():
        out.setdefault(f"storage.{key}", value)
    # Checked here first: a bad option is then one line, not Spark's wrapped worker traceback.
    from rocketfilter.source.options import SourceOptions

    SourceOptions.parse(out).subscription()
    return out


def read(spark, store: str, topic: str, sub_expression: str = "*", expression_type: str = "TAG",
         **options: Any):
    """``spark.read.format("rocketmq")`` with these options (and any other, by its option
    name: ``startingOffsets=...``, ``endingOffsets=...``, ``includeProperties=False``)."""
    checked = _options(store, topic, sub_expression, expression_type, options)
    register(spark)
    return spark.read.format(FORMAT).options(**checked).load()


def read_stream(spark, store: str, topic: str, sub_expression: str = "*",
                expression_type: str = "TAG", **options: Any):
    """``spark.readStream.format("rocketmq")`` with these options (``consumerGroup=...``,
    ``maxOffsetsPerTrigger=...``, ``startingOffsets=...``, ``failOnDataLoss=False``...)."""
    checked = _options(store, topic, sub_expression, expression_type, options)
    register(spark)
    return spark.readStream.format(FORMAT).options(**checked).load()
