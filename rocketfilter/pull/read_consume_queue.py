"""``read_consume_queue``: the ConsumeQueue entries of the messages a subscription receives.

The same set as :func:`~rocketfilter.pull.read_messages.read_messages`, as positions (queue,
queue offset, CommitLog offset and size, tag code, store time) rather than message rows. Where
the decision needs no message, no CommitLog row is read:

* a SQL92 subscription that owns a slot of exact subscription bits over the whole range
  (:mod:`rocketfilter.store.sub_bits`): the entries whose bit is set;
* ``*``: every entry in range.

Otherwise (a TAG list, whose client re-check compares the tag strings; SQL92 without bits) the
entries are those of ``read_messages``' rows, found by a semi-join on the CommitLog offset.

>>> read_consume_queue(store, "OrderEvents", "amount > 100", "SQL92").count()    # doctest: +SKIP
"""
from __future__ import annotations

from typing import Mapping, Optional

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from rocketfilter.pull.bits import bit, subscription_key, usable
from rocketfilter.pull.read_messages import (SCHEDULE_TOPIC, checked_subscription, consume_queue_entries,
                                             read_messages, resolve_range)
from rocketfilter.store import schema as S

ENTRY_COLUMNS = ("topic", "queue_id", "queue_offset", "commitlog_offset", "size", "tags_code", "store_timestamp")
ENTRY_SCHEMA = StructType([S.CONSUMEQUEUE_SCHEMA[name] for name in ENTRY_COLUMNS])


def read_consume_queue(store, topic: str, subscription: str, expression_type: str = "TAG", *,
                       start: Optional[Mapping[int, int]] = None, end: Optional[Mapping[int, int]] = None,
                       promoted: bool = True, bits: bool = True) -> DataFrame:
    """The ConsumeQueue entry of every message :func:`read_messages` returns for the same
    arguments (one row per message, columns :data:`ENTRY_COLUMNS`), read from the ConsumeQueue
    alone when the subscription's exact bits (or ``*``) decide. ``bits=False`` and
    ``promoted=False`` are as in ``read_messages``; the answer is the same. Raises ValueError
    as ``read_messages`` does.

    >>> read_consume_queue(store, "OrderEvents", "amount > 100", "SQL92").groupBy("queue_id").count()  # doctest: +SKIP
    """
    sub, selector = checked_subscription(store, topic, subscription, expression_type)
    ranges = resolve_range(store, topic, start, end)
    if not ranges:
        return store.spark.createDataFrame([], ENTRY_SCHEMA)
    store.check_files(S.CONSUMEQUEUE)   # a lazy result: catch lost files now
    entries = consume_queue_entries(store, topic, ranges)
    if selector is not None and bits:
        slot = usable(store, topic, subscription_key(sub), {q: s for q, (s, _) in ranges.items()})
        if slot is not None:
            return entries.where(bit(slot)).select(*ENTRY_COLUMNS)
    if sub.is_sub_all and selector is None and topic != SCHEDULE_TOPIC:
        return entries.select(*ENTRY_COLUMNS)
    messages = read_messages(store, topic, subscription, expression_type, start=start, end=end,
                             promoted=promoted, bits=bits).select("commitlog_offset")
    return entries.join(messages, "commitlog_offset", "left_semi").select(*ENTRY_COLUMNS)
