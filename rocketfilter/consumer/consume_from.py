"""Where a push consumer starts a queue: ``RebalancePushImpl.computePullFromWhereWithException``.

When a consumer takes a queue it first asks the broker for its group's offset
(``RemoteBrokerOffsetStore.readOffset(READ_FROM_STORE)``), and the broker's
``queryConsumerOffset`` answers:

* the committed offset, when the group has one;
* **0** when it has none, the queue's min offset is 0 and the queue's first message is still in
  memory (``checkInMemByConsumeOffset(topic, queueId, 0, 1)``): a young queue is read from its
  start whatever the group asked for;
* otherwise "not found", which the client reads as -1.

Only then does ``ConsumeFromWhere`` decide:

=====================================  ===========================================================
CONSUME_FROM_LAST_OFFSET (and the      the queue's max offset; 0 for a retry topic (``%RETRY%``)
three deprecated names that share it)
CONSUME_FROM_FIRST_OFFSET              0 (a pull at 0 below the min offset answers OFFSET_TOO_SMALL
                                       and moves on to the min offset)
CONSUME_FROM_TIMESTAMP                 ``searchOffset(mq, consumeTimestamp)``: the LOWER offset of
                                       the time; the max offset for a retry topic
=====================================  ===========================================================

"In memory" is the page cache on a broker (``mincore``), which no store can know; here it is
the estimate the broker's pull loop uses (``estimateInMemByCommitOffset``): the message is within
``accessMessageInMemoryMaxRatio`` % of ``total_physical_memory`` of the commit log's end.

The ``store`` these functions take is a :class:`rocketfilter.store.MessageStore`, a layer above
this one: they ask it for committed offsets, a queue's units and offsets by time through its
methods, and import nothing of the store.

>>> compute_pull_from_where(store, "GID", "TopicTest", 0, "CONSUME_FROM_TIMESTAMP",
...                         consume_timestamp="20240501100000")               # doctest: +SKIP
42
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from enum import Enum
from typing import Dict, Iterable, Optional, Union
from zoneinfo import ZoneInfo

from rocketfilter.checks import _is_int, check_queue_id
from rocketfilter.naming import RETRY_GROUP_TOPIC_PREFIX, validate_group, validate_topic

YYYYMMDDHHMMSS = "yyyyMMddHHmmss"
# DefaultMQPushConsumer's consumeTimestamp: half an hour before the consumer was made.
DEFAULT_CONSUME_TIMESTAMP_AGO_MS = 30 * 60 * 1000
# SimpleDateFormat reads abutting numeric fields at their pattern's width, but the last one
# (ss) greedily, and ignores whatever follows the digits.
_PATTERN = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{1,9})(?![0-9])")

TimeZoneLike = Union[None, str, tzinfo]
ConsumeTimestamp = Union[None, str, int, datetime]


class ConsumeFromWhere(str, Enum):
    """RocketMQ's ``ConsumeFromWhere``; the middle three are deprecated and act as LAST_OFFSET."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"

    @classmethod
    def of(cls, value: Union[str, "ConsumeFromWhere"]) -> "ConsumeFromWhere":
        """The member named ``value`` (case-sensitive, as Java's ``valueOf``)."""
        try:
            return value if isinstance(value, cls) else cls(value)
        except ValueError:
            raise ValueError(f"consume_from_where must be one of {', '.join(m.value for m in cls)}; "
                             f"got {value!r}") from None


_LAST = {ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, ConsumeFromWhere.CONSUME_FROM_MIN_OFFSET,
         ConsumeFromWhere.CONSUME_FROM_MAX_OFFSET,
         ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST}


def _zone(time_zone: TimeZoneLike) -> Optional[tzinfo]:
    return ZoneInfo(time_zone) if isinstance(time_zone, str) else time_zone


def _epoch_ms(naive_or_aware: datetime, time_zone: TimeZoneLike) -> int:
    """A datetime as epoch ms; a naive one is in ``time_zone`` (None: this machine's zone, as the
    JVM's default zone is the consumer machine's)."""
    moment = naive_or_aware
    if moment.tzinfo is None:
        zone = _zone(time_zone)
        moment = moment.astimezone(timezone.utc) if zone is None else moment.replace(tzinfo=zone)
    return (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)


def parse_consume_timestamp(value: ConsumeTimestamp, time_zone: TimeZoneLike = None) -> int:
    """``consumeTimestamp`` as epoch ms: RocketMQ's ``yyyyMMddHHmmss`` string (read like
    ``UtilAll.parseDate``, whose SimpleDateFormat is lenient: ``20240230120000`` is 1 March),
    epoch ms, or a datetime. Strings and naive datetimes are in ``time_zone`` (an IANA name or a
    tzinfo; None: this machine's zone).

    >>> parse_consume_timestamp("20240501100000", "UTC")
    1714557600000
    >>> parse_consume_timestamp("20240230000000", "UTC") == parse_consume_timestamp("20240301000000", "UTC")
    True
    """
    if isinstance(value, datetime):
        return _epoch_ms(value, time_zone)
    if _is_int(value):
        return value
    match = _PATTERN.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"consumeTimestamp is invalid, the valid format is {YYYYMMDDHHMMSS}, "
                         f"but received {value!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups())
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1   # lenient: month 13 is next January
    if year < 1:
        raise ValueError(f"consumeTimestamp {value!r} is before year 1")
    naive = datetime(year, month, 1) + timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second)
    return _epoch_ms(naive, time_zone)


@dataclass(frozen=True)
class StartOffset:
    """Where a consumer of ``group`` starts ``queue_id`` of ``topic``, and why."""

    topic: str
    queue_id: int
    offset: int
    source: str     # committed | first-message-in-memory | retry-topic | last-offset | first-offset | timestamp
    reason: str

    def __str__(self) -> str:
        return f"{self.topic} queue {self.queue_id}: starts at {self.offset} ({self.reason})"


def read_offset_from_store(store, group: str, topic: str, queue_id: int,
                           committed: Optional[int] = None) -> int:
    """What ``readOffset(mq, READ_FROM_STORE)`` returns: the broker's ``queryConsumerOffset``
    (the committed offset; else 0 for a queue whose min offset is 0 and whose first message is in
    memory; else -1). ``committed`` saves the lookup when the caller has it (-1: none)."""
    return _query_consumer_offset(store, group, topic, queue_id, committed)[0]


def _query_consumer_offset(store, group: str, topic: str, queue_id: int, committed: Optional[int]):
    """``(offset, committed?)`` as the broker answers ``queryConsumerOffset``."""
    if committed is None:
        committed = store.consumer_offsets(group, topic).get((group, topic, queue_id), -1)
    if committed >= 0:
        return committed, True
    units = store.queue_units(topic, queue_id)
    return (0 if units.min_offset <= 0 and first_message_in_memory(store, units) else -1), False


def first_message_in_memory(store, units) -> bool:
    """``checkInMemByConsumeOffset(topic, queueId, 0, 1)``: unit 0 exists, its message does too,
    and (the estimate) it lies within the memory share of the commit log's end. ``units`` are the
    queue's (``store.queue_units(topic, queue_id)``)."""
    unit = units.unit(0)
    if unit is None:
        return False
    cl = store.commitlog_state()
    if unit["commitlog_offset"] < cl.min_commitlog_offset:
        return False   # commitLog.getMessage finds no file
    config = store.config
    memory = int(config.total_physical_memory * (config.access_message_in_memory_max_ratio / 100.0))
    return cl.next_commitlog_offset - unit["commitlog_offset"] <= memory


def explain_pull_from_where(store, group: str, topic: str, queue_id: int,
                            consume_from_where: Union[str, ConsumeFromWhere] = "CONSUME_FROM_LAST_OFFSET",
                            consume_timestamp: ConsumeTimestamp = None, *, time_zone: TimeZoneLike = None,
                            committed: Optional[int] = None) -> StartOffset:
    """:func:`compute_pull_from_where` with the reason it starts there."""
    validate_group(group)
    validate_topic(topic)
    check_queue_id(queue_id)
    where = ConsumeFromWhere.of(consume_from_where)
    if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
        timestamp = _consume_timestamp_ms(consume_timestamp, time_zone)
    start = lambda offset, source, reason: StartOffset(topic, queue_id, offset, source, reason)  # noqa: E731
    last_offset, was_committed = _query_consumer_offset(store, group, topic, queue_id, committed)
    if was_committed:
        return start(last_offset, "committed", f"the offset group {group} committed")
    if last_offset == 0:
        return start(0, "first-message-in-memory", "no committed offset, and the broker answers 0 while "
                     "the queue's min offset is 0 and its first message is in memory")
    retry = topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    max_offset = store.get_max_offset_in_queue(topic, queue_id)
    if where in _LAST:
        if retry:
            return start(0, "retry-topic", f"no committed offset; {where.value} starts a retry topic at 0")
        return start(max_offset, "last-offset", f"no committed offset; {where.value}: the max offset")
    if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        lo = store.get_min_offset_in_queue(topic, queue_id)
        moved = f"; the first pull answers OFFSET_TOO_SMALL and moves to {lo}" if lo > 0 else ""
        return start(0, "first-offset", f"no committed offset; CONSUME_FROM_FIRST_OFFSET: 0{moved}")
    if retry:
        return start(max_offset, "retry-topic", "no committed offset; CONSUME_FROM_TIMESTAMP starts a retry "
                     "topic at its max offset")
    offset = store.get_offset_in_queue_by_time(topic, queue_id, timestamp, "LOWER")
    return start(offset, "timestamp", f"no committed offset; CONSUME_FROM_TIMESTAMP: the first message "
                 f"stored at or after {timestamp} ms")


def compute_pull_from_where(store, group: str, topic: str, queue_id: int,
                            consume_from_where: Union[str, ConsumeFromWhere] = "CONSUME_FROM_LAST_OFFSET",
                            consume_timestamp: ConsumeTimestamp = None, *, time_zone: TimeZoneLike = None) -> int:
    """The offset a push consumer of ``group`` starts ``queue_id`` of ``topic`` at, as
    ``computePullFromWhereWithException``: the committed offset when there is one, else as
    ``consume_from_where`` says (see the module's docstring). ``consume_timestamp`` (for
    CONSUME_FROM_TIMESTAMP; default: 30 minutes ago, as ``DefaultMQPushConsumer``) is a
    ``yyyyMMddHHmmss`` string, epoch ms or a datetime (:func:`parse_consume_timestamp`)."""
    return explain_pull_from_where(store, group, topic, queue_id, consume_from_where, consume_timestamp,
                                   time_zone=time_zone).offset


def compute_pull_from_where_for_topic(store, group: str, topic: str,
                                      consume_from_where: Union[str, ConsumeFromWhere] = "CONSUME_FROM_LAST_OFFSET",
                                      consume_timestamp: ConsumeTimestamp = None, *,
                                      queue_ids: Optional[Iterable[int]] = None,
                                      time_zone: TimeZoneLike = None) -> Dict[int, StartOffset]:
    """:func:`explain_pull_from_where` for every queue of ``topic`` (its read queues, and any
    queue holding messages), reading the committed offsets once."""
    if queue_ids is None:
        config = store.topic_config(topic)
        queue_ids = set(range(config.read_queue_nums)) if config is not None else set()
        queue_ids |= set(store.consumequeue_state().queues.get(topic, {}))
    if ConsumeFromWhere.of(consume_from_where) is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
        consume_timestamp = _consume_timestamp_ms(consume_timestamp, time_zone)  # one "now" for all
    committed = store.consumer_offsets(group, topic)
    return {q: explain_pull_from_where(store, group, topic, q, consume_from_where, consume_timestamp,
                                       time_zone=time_zone, committed=committed.get((group, topic, q), -1))
            for q in sorted(queue_ids)}


def _consume_timestamp_ms(value: ConsumeTimestamp, time_zone: TimeZoneLike) -> int:
    if value is None:
        return int(time.time() * 1000) - DEFAULT_CONSUME_TIMESTAMP_AGO_MS
    ms = parse_consume_timestamp(value, time_zone)
    if ms < 0:
        raise ValueError(f"consume_timestamp {value!r} is before 1970; store times are not")
    return ms
