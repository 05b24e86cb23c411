"""Which exact subscription bits (rocketfilter.store.sub_bits) a pull or a read may use.

A pull's filter makes one decision per entry (the tag-code check for TAG, the selector for
SQL92); when the store keeps that decision as a slot of ``sub_bits`` covering every queue offset
read, the bit replaces it. Only :class:`~rocketfilter.pull.filter.ExpressionMessageFilter`
itself qualifies: the retry filter's decision depends on each message's original topic.
"""
from __future__ import annotations

from typing import Dict, Optional

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketfilter.store import schema as S
from rocketfilter.store.sub_bits import bit_test, usable_slot
from rocketfilter.tags import SQL92, SubscriptionData, is_tag_type


def subscription_key(sub: SubscriptionData) -> Optional[str]:
    """The slot key of a subscription's decision, None when it needs no bits (``*``)."""
    if sub.class_filter_mode:
        return None
    if is_tag_type(sub.expression_type):
        return None if sub.is_sub_all else "TAG:" + ",".join(str(c) for c in sorted(sub.code_set))
    return f"{SQL92}:{sub.sub_string}" if sub.expression_type == SQL92 else None


def filter_key(message_filter) -> Optional[str]:
    """The slot key of the decision ``message_filter`` makes, or None."""
    from rocketfilter.pull.filter import ExpressionMessageFilter

    if type(message_filter) is not ExpressionMessageFilter or message_filter._passes_everything():
        return None
    sub = message_filter.subscription_data
    if is_tag_type(sub.expression_type):
        return subscription_key(sub)
    if not message_filter._sql_data_usable(with_bloom=False):
        return None   # everything matches: nothing to look up
    return f"{SQL92}:{message_filter.consumer_filter_data.expression}"


def usable(store, topic: str, key: Optional[str], starts: Dict[int, int]) -> Optional[int]:
    """The slot holding ``key``'s decision on ``topic`` for every queue read from ``starts``."""
    if key is None or S.SUB_BITS not in store.consumequeue.schema.fieldNames():
        return None
    return usable_slot(store.consumequeue_state(), topic, key, starts)


def slot_for_filter(store, topic: str, message_filter, starts: Dict[int, int]) -> Optional[int]:
    return usable(store, topic, filter_key(message_filter), starts)


def bit(slot: int) -> Column:
    """The slot's decision, never null (an entry dispatched before the slot has no bit, but
    :func:`usable` only answers for ranges past those)."""
    return F.coalesce(bit_test(slot), F.lit(False))
