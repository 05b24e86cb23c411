"""Consumer offsets: ``ConsumerOffsetManager`` as the store's ``consumer_offsets`` table.

An offset is the next queue offset a group will consume. Committing checks what RocketMQ's
client and admin tools guarantee (a valid group and topic, a queue id and offset >= 0), with the
same messages the command line gives (:mod:`rocketfilter.checks`).
"""
from __future__ import annotations

import time
from typing import Dict, Iterable, Tuple

from rocketfilter.checks import check_offset, check_queue_id
from rocketfilter.naming import validate_group, validate_topic
from rocketfilter.store import schema as S
from rocketfilter.store.tables import StoreTables

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
