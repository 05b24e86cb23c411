"""Finding one message in a store for :func:`~rocketfilter.groups.explain_message.explain_message`:
by its offset message id (or client ``UNIQ_KEY``), by a key, or by (topic, queue, offset); and
telling a message that never existed from one that retention removed.

A message found by its coordinates is read with two point reads on the driver (its ConsumeQueue
unit and its CommitLog row, from the files and row groups whose statistics can hold them, as
:mod:`rocketfilter.store.cq_units` reads units); an offset message id names its commit-log
offset, so it is read the same way. Only a key or a ``UNIQ_KEY`` needs a scan of the CommitLog
(of one topic when given), as RocketMQ needs its index file for them.

>>> m = locate_message(store, topic="TopicTest", queue_id=0, queue_offset=3)   # doctest: +SKIP
>>> m.status, m.tags, m.commitlog_offset                                       # doctest: +SKIP
('FOUND', 'TagA', 1830)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from pyspark.sql import functions as F

from rocketfilter.checks import _is_int, check_queue_id
from rocketfilter.message import decode_offset_msg_id
from rocketfilter.pull.arrow_window import read_rows

FOUND, EXPIRED, NOT_FOUND = "FOUND", "EXPIRED", "NOT_FOUND"
KEY_SEPARATOR = " "          # MessageConst.KEY_SEPARATOR: KEYS holds several keys
UNIQ_KEY = "UNIQ_KEY"        # the client's message id (MessageClientIDSetter)
_CQ_COLUMNS = ["topic", "queue_id", "queue_offset", "commitlog_offset", "size", "tags_code", "store_timestamp",
               "filter_bitmap"]
_CL_COLUMNS = ["commitlog_offset", "topic", "queue_id", "queue_offset", "tags", "keys", "properties",
               "store_timestamp", "msg_id"]


@dataclass
class LocatedMessage:
    """Where a message is (``status`` FOUND), or why there is none (EXPIRED: retention removed
    it; NOT_FOUND: it never existed), with what was read. ``how`` says how it was looked up;
    ``note`` why it is expired or missing."""

    status: str
    how: str
    topic: Optional[str] = None
    queue_id: Optional[int] = None
    queue_offset: Optional[int] = None
    commitlog_offset: Optional[int] = None
    size: Optional[int] = None
    store_timestamp: Optional[int] = None
    tags: Optional[str] = None
    tags_code: Optional[int] = None
    filter_bitmap: Optional[bytes] = None
    keys: Optional[str] = None
    properties: Dict[str, str] = field(default_factory=dict)
    msg_id: Optional[str] = None
    min_offset: Optional[int] = None      # the queue's [min, max) when known
    max_offset: Optional[int] = None
    note: str = ""


def point_read(table, where: Sequence[tuple], columns: List[str]) -> List[dict]:
    """The rows of a store table matching ``where`` (``(column, op, value)`` with ``=``, ``<``,
    ``>=``...), read on the driver from the files and row groups their statistics allow."""
    return read_rows(table, where, columns).to_pylist()


def _check_lookup(msg_id, key, topic, queue_id, queue_offset) -> str:
    """Which lookup the arguments ask for; ValueError unless exactly one is complete."""
    coords = (queue_id, queue_offset)
    given = [name for name, v in (("msg_id", msg_id), ("key", key)) if v is not None]
    if any(v is not None for v in coords):
        given.append("topic/queue_id/queue_offset")
    if len(given) != 1:
        raise ValueError("give exactly one of msg_id, key, or topic with queue_id and queue_offset"
                         + (f" (got {', '.join(given)})" if given else ""))
    lookup = given[0]
    for name, v in (("msg_id", msg_id), ("key", key)):
        if v is not None and (not isinstance(v, str) or not v):
            raise ValueError(f"{name} must be a non-empty string, got {v!r}")
    if topic is not None and (not isinstance(topic, str) or not topic):
        raise ValueError(f"topic must be a non-empty string, got {topic!r}")
    if lookup.startswith("topic"):
        if topic is None or queue_id is None or queue_offset is None:
            raise ValueError("a message by position needs topic, queue_id and queue_offset together")
        check_queue_id(queue_id)
        if not _is_int(queue_offset) or queue_offset < 0:
            raise ValueError(f"queue_offset must be an integer >= 0, got {queue_offset!r}")
    return lookup


def locate_message(store, *, msg_id: Optional[str] = None, key: Optional[str] = None,
                   topic: Optional[str] = None, queue_id: Optional[int] = None,
                   queue_offset: Optional[int] = None) -> LocatedMessage:
    """The message named by ``msg_id``, ``key`` (with an optional ``topic``) or ``topic`` +
    ``queue_id`` + ``queue_offset``. ValueError for bad arguments, an unknown topic or queue, or
    a key that several messages carry (the error lists them)."""
    lookup = _check_lookup(msg_id, key, topic, queue_id, queue_offset)
    if lookup == "msg_id":
        return _by_msg_id(store, msg_id)
    if lookup == "key":
        return _by_scan(store, "keys", key, f"key {key!r}", topic)
    if store.topic_config(topic) is None and topic not in store.consumequeue_state().queues:
        known = ", ".join(sorted(store.topics())) or "none"
        raise ValueError(f"topic {topic!r} does not exist in store {store.uri} (topics: {known})")
    config = store.topic_config(topic)
    queues = set(store.consumequeue_state().queues.get(topic, {})) | set(range(config.read_queue_nums if config else 0))
    if queue_id not in queues:
        raise ValueError(f"queue_id {queue_id} is not a queue of topic {topic!r} (queues {sorted(queues)})")
    return at_position(store, topic, queue_id, queue_offset, f"topic {topic} queue {queue_id} offset {queue_offset}")


def at_position(store, topic: str, queue_id: int, queue_offset: int, how: str) -> LocatedMessage:
    """The message at a queue position: its ConsumeQueue unit, then its CommitLog row."""
    lo, hi = store.consumequeue_state().offsets(topic, queue_id) or (0, 0)
    out = LocatedMessage(NOT_FOUND, how, topic, queue_id, queue_offset, min_offset=lo, max_offset=hi)
    if queue_offset >= hi:
        out.note = f"queue {queue_id} of {topic} holds offsets [{lo}, {hi}): offset {queue_offset} was never written"
        return out
    if queue_offset < lo:
        out.status = EXPIRED
        out.note = (f"offset {queue_offset} is below queue {queue_id}'s min offset {lo}: retention removed it "
                    "(a pull there answers OFFSET_TOO_SMALL)")
        return out
    where = [("topic", "=", topic), ("queue_id", "=", queue_id), ("queue_offset", "=", queue_offset)]
    units = point_read(store.consumequeue, where, _CQ_COLUMNS)
    if not units:
        out.note = f"the ConsumeQueue has no unit at offset {queue_offset} of queue {queue_id} (a hole)"
        return out
    unit = units[0]
    for name in ("commitlog_offset", "size", "tags_code", "store_timestamp", "filter_bitmap"):
        setattr(out, name, unit[name])
    min_phy = store.commitlog_state().min_commitlog_offset
    rows = [] if out.commitlog_offset < min_phy else point_read(
        store.commitlog, [("commitlog_offset", "=", out.commitlog_offset)], _CL_COLUMNS)
    if not rows:
        out.status = EXPIRED
        out.note = (f"its CommitLog record (offset {out.commitlog_offset}) is gone: the CommitLog starts at "
                    f"{min_phy} (retention); a pull passes over it (MESSAGE_WAS_REMOVING)")
        return out
    row = rows[0]
    out.status = FOUND
    out.tags, out.keys, out.msg_id = row["tags"], row["keys"], row["msg_id"]
    out.properties = dict(row["properties"] or {})
    return out


def _store_host(store) -> str:
    config = store.broker_config
    return f"{config.broker_ip1}:{config.listen_port}"


def _by_msg_id(store, msg_id: str) -> LocatedMessage:
    """An offset msgId names its commit-log offset: one point read. Otherwise (or when that read
    finds nothing) the id may be the client's ``UNIQ_KEY``: a scan."""
    how = f"msg_id {msg_id}"
    try:
        host, offset = decode_offset_msg_id(msg_id)
    except ValueError:
        host, offset = None, None
    if offset is not None:
        rows = point_read(store.commitlog, [("commitlog_offset", "=", offset)], ["topic", "queue_id", "queue_offset",
                                                                                 "msg_id"])
        if rows and rows[0]["msg_id"] is not None and rows[0]["msg_id"].upper() == msg_id.upper():
            r = rows[0]
            return at_position(store, r["topic"], r["queue_id"], r["queue_offset"], how)
        min_phy = store.commitlog_state().min_commitlog_offset
        if host == _store_host(store) and 0 <= offset < min_phy:
            return LocatedMessage(EXPIRED, how, commitlog_offset=offset, msg_id=msg_id,
                                  note=f"it names commit-log offset {offset} of this broker ({host}), below the "
                                       f"CommitLog's min offset {min_phy}: retention removed it")
    return _by_scan(store, UNIQ_KEY, msg_id, how, None)


def _spark_condition(column: str, value: str):
    if column == "keys":
        return F.array_contains(F.split(F.col("keys"), KEY_SEPARATOR), F.lit(value))
    return F.col("properties").getItem(UNIQ_KEY) == F.lit(value)


def _arrow_scan(store, column: str, value: str, where: list) -> List[dict]:
    """The scan with pyarrow (:mod:`.arrow_window`): the same rows as the Spark condition."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    shown = ["topic", "queue_id", "queue_offset", "msg_id"]
    found: List[dict] = []
    for f in store.commitlog.files(where):   # file by file: stop at the eleventh
        rows = read_rows(store.commitlog, where, shown + [column if column == "keys" else "properties"], files=[f])
        if column == "keys":
            # split(keys, " ") holds the value: the pieces' parents where a piece equals it
            pieces = pc.split_pattern(rows.column("keys").combine_chunks(), KEY_SEPARATOR)
            equal = np.asarray(pc.fill_null(pc.equal(pc.list_flatten(pieces), value), False), bool)
            mask = np.zeros(rows.num_rows, bool)
            mask[np.asarray(pc.list_parent_indices(pieces))[equal]] = True
        else:
            got = pc.map_lookup(rows.column("properties").combine_chunks(), pa.scalar(UNIQ_KEY, pa.string()), "last")
            mask = np.asarray(pc.fill_null(pc.equal(got, value), False).to_numpy(zero_copy_only=False), bool)
        found += rows.filter(pa.array(mask)).select(shown).to_pylist()
        if len(found) > 10:
            break
    return found[:11]


def _by_scan(store, column: str, value: str, how: str, topic: Optional[str]) -> LocatedMessage:
    from rocketfilter.pull.arrow_window import arrow_reads

    where = [("topic", "=", topic)] if topic is not None else []
    if arrow_reads(store):
        found = _arrow_scan(store, column, value, where)
    else:
        found = (store.commitlog.read(store.spark, where=where).where(_spark_condition(column, value))
                 .select("topic", "queue_id", "queue_offset", "msg_id").limit(11).collect())
    if not found:
        scope = f" in topic {topic}" if topic else ""
        return LocatedMessage(NOT_FOUND, how, topic, note=f"no message{scope} has {how} (or retention removed it)")
    if len(found) > 1:
        listed = ", ".join(f"{r['topic']} queue {r['queue_id']} offset {r['queue_offset']}" for r in found[:10])
        raise ValueError(f"{how} names {'more than 10' if len(found) > 10 else len(found)} messages ({listed}); "
                         "trace one by msg_id or by topic, queue and offset")
    r = found[0]
    return at_position(store, r["topic"], r["queue_id"], r["queue_offset"], how)
