"""rocketfilter: Apache RocketMQ's message filtering on Spark and Delta.

``rocketfilter.read_messages`` is :func:`rocketfilter.pull.read_messages.read_messages`, imported
on first use so that ``import rocketfilter`` stays free of Spark.
"""
from __future__ import annotations

__all__ = ["read_messages"]


def __getattr__(name: str):
    if name == "read_messages":
        from rocketfilter.pull.read_messages import read_messages

        return read_messages
    raise AttributeError(f"module 'rocketfilter' has no attribute {name!r}")
