"""rocketfilter: Apache RocketMQ's message filtering on Spark and Delta (see README.md).

Importing the package imports nothing heavy (no Spark); the functions below load on first use.
"""
_LAZY = {"read_messages": "rocketfilter.pull.read_messages",
         "replay_group": "rocketfilter.pull.group_replay", "diagnose_group": "rocketfilter.pull.group_diagnosis",
         "GroupDiagnosis": "rocketfilter.pull.group_diagnosis", "ConsumerGroup": "rocketfilter.consumer.group",
         "explain_message": "rocketfilter.pull.explain_message", "MessageTrace": "rocketfilter.pull.message_trace",
         "Verdict": "rocketfilter.pull.message_trace"}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
