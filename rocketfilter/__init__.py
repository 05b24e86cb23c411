"""rocketfilter: Apache RocketMQ's message filtering on Spark and Delta (see README.md).

Importing the package imports nothing heavy (no Spark); the functions below load on first use.
This facade sits above every layer (docs/architecture.md): it also binds the lower layers to the
higher ones they call late, through :mod:`rocketfilter.hooks`.
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

from rocketfilter.hooks import on_new_session as _on_new_session  # noqa: E402  (light: no Spark)
from rocketfilter.hooks import provide_get_message as _provide_get_message  # noqa: E402


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register_source(spark) -> None:
    """Make ``format("rocketmq")`` known to a session ``get_spark`` returns. A session that
    cannot take it (a Connect server without Python data sources) is still fine: a warning."""
    try:
        from rocketfilter.source import register as register_source

        register_source(spark)
    except Exception as error:  # noqa: BLE001 - only format("rocketmq") is missing then
        import logging

        logging.getLogger("rocketfilter.session").warning(
            "could not register the rocketmq data source with this session: %s", error)


def _get_message(store, group, topic, queue_id, offset, max_msg_nums=32, message_filter=None):
    """``MessageStore.get_message``'s pull: :func:`rocketfilter.pull.get_message.get_message`."""
    from rocketfilter.pull.get_message import get_message

    return get_message(store, group, topic, queue_id, offset, max_msg_nums, message_filter)


_on_new_session(_register_source)
_provide_get_message(_get_message)
