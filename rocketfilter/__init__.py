"""rocketfilter: Apache RocketMQ's message filtering on Spark and Delta (see README.md).

Importing the package imports nothing heavy (no Spark); the functions below load on first use.
``register``, ``read`` and ``read_stream`` are the ``rocketmq`` data source's
(:mod:`rocketfilter.source`, docs/source.md).
"""
_LAZY = {"read_messages": "rocketfilter.pull.read_messages",
         "read_consume_queue": "rocketfilter.pull.read_consume_queue",
         "replay_group": "rocketfilter.groups.replay", "diagnose_group": "rocketfilter.groups.diagnosis",
         "GroupDiagnosis": "rocketfilter.groups.diagnosis", "ConsumerGroup": "rocketfilter.consumer.group",
         "explain_message": "rocketfilter.groups.explain_message", "MessageTrace": "rocketfilter.groups.message_trace",
         "Verdict": "rocketfilter.groups.message_trace",
         "register": "rocketfilter.source", "read": "rocketfilter.source",
         "read_stream": "rocketfilter.source"}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
