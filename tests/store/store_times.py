"""Messages with chosen store times, written through the store's own CommitLog commit and dispatch.

``put_messages`` stamps every message with the time of the put, as a broker does. Tests of time
lookups need chosen times, so this appends CommitLog rows the way ``put_messages`` commits them
(one Delta commit carrying the new high-water marks), then runs the store's ``dispatch``, which
derives the ConsumeQueue exactly as it does for any put.
"""
from __future__ import annotations

from typing import Iterable, List, Tuple

import pyarrow as pa

from rocketfilter.store import schema as S

RECORD_SIZE = 100


def put_with_store_times(store, messages: Iterable[Tuple[str, int, int]]) -> List[dict]:
    """Append ``(topic, queue_id, store_timestamp)`` messages in this order; return what each got
    (topic, queue_id, queue_offset, commitlog_offset, store_timestamp)."""
    table = store.table(S.COMMITLOG)
    version = table.version()
    state = store.commitlog_state()
    rows = []
    for topic, queue_id, stored_at in messages:
        queue_offset = state.next_queue_offset(topic, queue_id)
        state.queues.setdefault(topic, {})[queue_id] = queue_offset + 1
        offset = state.next_commitlog_offset
        state.next_commitlog_offset += RECORD_SIZE
        rows.append({
            "commitlog_offset": offset, "store_size": RECORD_SIZE, "topic": topic, "queue_id": queue_id,
            "queue_offset": queue_offset, "tags": None, "keys": None, "properties": [], "body": b"",
            "body_crc": 0, "flag": 0, "sys_flag": 0, "born_timestamp": stored_at, "born_host": "127.0.0.1:1",
            "store_timestamp": stored_at, "store_host": "127.0.0.1:10911", "reconsume_times": 0,
            "prepared_transaction_offset": 0, "msg_id": f"7F00000100002A9F{offset:016X}",
        })
    adds = table.write_arrow(pa.Table.from_pylist(rows, schema=S.arrow_schema(S.COMMITLOG_SCHEMA)))
    table.commit(adds, expected_version=version, custom_metadata=state.to_metadata())
    store.dispatch()
    return [{k: r[k] for k in ("topic", "queue_id", "queue_offset", "commitlog_offset", "store_timestamp")}
            for r in rows]


T0 = 1_714_557_600_000          # 2024-05-01 10:00:00 UTC
RETRY = "%RETRY%GID"


def timed_store(spark, path: str):
    """A small store with chosen store times, shared by the start-point tests (session fixture
    ``timed_store``; tests that commit offsets use their own group names):

    * CF/0: offsets 0-9 stored at T0 + 1000*i, min offset 0 (a young queue);
    * CF/1: offsets 0-4 expired (retention removed them), 5-14 stored at T0 + 1000*(i-5);
    * %RETRY%GID/0: like CF/1;
    * group GID_COMMITTED committed CF/0 at 0 and CF/1 at 7.
    """
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store import MessageStore

    config = MessageStoreConfig(mapped_file_size_commit_log=10 * RECORD_SIZE)
    store = MessageStore.open(path, spark, config)
    for topic in ("CF", RETRY):
        store.create_topic(topic, 2, 2)
    early = [("CF", 1, T0 - 1000 + i) for i in range(5)] + [(RETRY, 0, T0 - 1000 + i) for i in range(5)]
    later = [(topic, q, T0 + 1000 * i) for i in range(10) for topic, q in (("CF", 0), ("CF", 1), (RETRY, 0))]
    put_with_store_times(store, early + later)
    store.expire(before_commitlog_offset=10 * RECORD_SIZE)   # the first "file": the early ten
    store.commit_consumer_offsets([("GID_COMMITTED", "CF", 1, 7), ("GID_COMMITTED", "CF", 0, 0)])
    return store
