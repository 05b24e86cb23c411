"""Consumer offsets: ``ConsumerOffsetManager`` as the store's ``consumer_offsets`` table, and the
admin's ``resetOffsetByTime``.

An offset is the next queue offset a group will consume. Committing checks what RocketMQ's
client and admin tools guarantee (a valid group and topic, a queue id and offset >= 0), with the
same messages the command line gives (:mod:`rocketfilter.checks`).
"""
from __future__ import annotations

import time
from typing import Dict, Iterable, Tuple

from rocketfilter.checks import LONG_MAX, _is_int, check_offset, check_queue_id
from rocketfilter.naming import validate_group, validate_topic
from rocketfilter.store import schema as S
from rocketfilter.store.offsets_by_time import get_offset_in_queue_by_time
from rocketfilter.store.tables import StoreTables
from rocketfilter.store.topics import topic_config

Key = Tuple[str, str, int]


def _row(group: str, topic: str, queue_id: int, offset: int, now: int) -> dict:
    validate_group(group)
    validate_topic(topic)
    check_queue_id(queue_id)
    check_offset(offset, f"committed offset of {topic!r} queue {queue_id} for group {group!r}")
    return {"group": group, "topic": topic, "queue_id": int(queue_id), "offset": int(offset),
            "updated_at": now}


def commit_consumer_offsets(tables: StoreTables, offsets: Iterable[tuple]) -> None:
    """Upsert ``(group, topic, queue_id, offset)`` tuples in one commit. Everything is checked
    before anything is written."""
    now = int(time.time() * 1000)
    new: Dict[Key, dict] = {}
    for group, topic, queue_id, offset in offsets:
        row = _row(group, topic, queue_id, offset, now)
        new[(group, topic, row["queue_id"])] = row
    if not new:
        return
    tables.rewrite_small(S.CONSUMER_OFFSETS, lambda rows: (
        [r for r in rows if (r["group"], r["topic"], r["queue_id"]) not in new]
        + list(new.values()), None))


def commit_consumer_offset(tables: StoreTables, group: str, topic: str, queue_id: int,
                           offset: int) -> None:
    """Upsert the group's consume offset of one queue (``ConsumerOffsetManager.commitOffset``)."""
    commit_consumer_offsets(tables, [(group, topic, queue_id, offset)])


def consumer_offsets(tables: StoreTables, group: str = None, topic: str = None) -> Dict[Key, int]:
    """Every committed offset, by (group, topic, queue_id), optionally for one group/topic."""
    return {(r["group"], r["topic"], r["queue_id"]): r["offset"]
            for r in tables.read_small(S.CONSUMER_OFFSETS).to_pylist()
            if (group is None or r["group"] == group) and (topic is None or r["topic"] == topic)}


def query_consumer_offset(tables: StoreTables, group: str, topic: str, queue_id: int) -> int:
    """The committed offset, or -1 when the group never committed one for this queue."""
    return consumer_offsets(tables, group, topic).get((group, topic, int(queue_id)), -1)


def reset_offset_by_time(tables: StoreTables, group: str, topic: str, timestamp_ms: int) -> Dict[int, int]:
    """``mqadmin resetOffsetByTime`` as a RocketMQ 5.2+ broker runs it (``useServerSideResetOffset``,
    on by default; ``AdminBrokerProcessor.resetOffsetInner``): every read queue of ``topic`` gets
    the LOWER offset of ``timestamp_ms`` (the first message stored at or after it; a negative
    time: the queue's max offset), committed for ``group`` whether that moves the group back or
    forward, in one commit. Returns ``{queue_id: offset}``. A topic the store does not have is
    refused (TOPIC_NOT_EXIST). docs/offsets.md tells how older brokers differed.

    >>> reset_offset_by_time(store, "GID", "TopicTest", 1714557600000)      # doctest: +SKIP
    {0: 42, 1: 40, 2: 41, 3: 40}
    """
    validate_group(group)
    validate_topic(topic)
    if not _is_int(timestamp_ms) or not -LONG_MAX - 1 <= timestamp_ms <= LONG_MAX:
        raise ValueError(f"timestamp_ms must be an integer (ms since the epoch), got {timestamp_ms!r}")
    config = topic_config(tables, topic)
    if config is None:
        raise ValueError(f"Topic {topic} does not exist in store {tables.uri}; cannot reset offsets of "
                         f"group {group}")
    reset = {q: tables.get_max_offset_in_queue(topic, q) if timestamp_ms < 0
             else get_offset_in_queue_by_time(tables, topic, q, timestamp_ms, "LOWER")
             for q in range(config.read_queue_nums)}
    commit_consumer_offsets(tables, [(group, topic, q, offset) for q, offset in reset.items()])
    return reset
