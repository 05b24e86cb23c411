"""rocketfilter: RocketMQ's message filtering for Spark and Delta (see README.md).

The package imports nothing heavy itself; these entry points load what they need when called.
"""
from __future__ import annotations


def register(spark=None):
    """Register the ``rocketmq`` data source with ``spark`` (see :mod:`rocketfilter.source`)."""
    from rocketfilter.source import register as _register

    return _register(spark)


def read(spark, store, topic, sub_expression="*", expression_type="TAG", **options):
    """A topic as a DataFrame of what a consumer of the subscription receives
    (:func:`rocketfilter.source.read`)."""
    from rocketfilter.source import read as _read

    return _read(spark, store, topic, sub_expression, expression_type, **options)


def read_stream(spark, store, topic, sub_expression="*", expression_type="TAG", **options):
    """The same as a streaming DataFrame (:func:`rocketfilter.source.read_stream`)."""
    from rocketfilter.source import read_stream as _read_stream

    return _read_stream(spark, store, topic, sub_expression, expression_type, **options)
