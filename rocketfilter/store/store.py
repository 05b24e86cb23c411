"""``MessageStore``: a RocketMQ broker's store as four Delta tables under one directory or URI.

The CommitLog commit is the truth; the ConsumeQueue is derived from it by :mod:`.dispatch`, as
RocketMQ's reput service does. The small tables (topics, consumer offsets) are rewritten whole on
each change, with optimistic concurrency, since they hold one row per topic or per queue.
"""
from __future__ import annotations

import logging
import random
import time
from typing import Any, Dict, Iterable, List, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from rocketfilter.config import BrokerConfig, MessageStoreConfig, TopicConfig, validate_topic
from rocketfilter.store import schema as S
from rocketfilter.store.delta import ConcurrentCommitError, Table
from rocketfilter.store.delta_write import filesystem_path
from rocketfilter.store.state import (COMMITLOG_KEY, CONSUMEQUEUE_KEY, CommitLogState,
                                      ConsumeQueueState)

log = logging.getLogger(__name__)

_RETRIES = 20


def retry_on_conflict(work, what: str, retries: int = _RETRIES):
    """Run ``work()`` until its commit lands; a lost race re-reads and redoes the work."""
    for attempt in range(retries):
        try:
            return work()
        except ConcurrentCommitError:
            if attempt == retries - 1:
                raise
            log.info("%s lost a commit race; retrying (attempt %d)", what, attempt + 2)
            time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))


class MessageStore:
    """A RocketMQ message store whose CommitLog and ConsumeQueue are Delta tables.

    >>> store = MessageStore.open("/tmp/store")                         # doctest: +SKIP
    >>> store.create_topic("TopicTest", read_queue_nums=4, write_queue_nums=4)  # doctest: +SKIP
    >>> store.put_messages([{"topic": "TopicTest", "tags": "TagA", "body": b"hi"}])  # doctest: +SKIP
    [{'topic': 'TopicTest', 'queue_id': 0, 'queue_offset': 0, 'commitlog_offset': 0, ...}]
    """

    def __init__(self, uri: str, spark, config: MessageStoreConfig,
                 broker_config: Optional[BrokerConfig] = None,
                 storage_options: Optional[dict] = None):
        self.uri = uri.rstrip("/")
        self.spark = spark
        self.config = config
        # DefaultMessageStore takes the BrokerConfig too: cluster name, store host, auto-create
        # and the bitmap switch live there.
        self.broker_config = broker_config or BrokerConfig()
        self.storage_options = storage_options
        self.tables: Dict[str, Table] = {
            name: Table.open(f"{self.uri}/{name}", S.SCHEMAS[name],
                             stats_columns=S.STATS_COLUMNS[name], storage_options=storage_options)
            for name in S.TABLES
        }
        self._filter_manager = None

    # --- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, uri: str, spark=None, config: Optional[MessageStoreConfig] = None, *,
             broker_config: Optional[BrokerConfig] = None,
             storage_options: Optional[dict] = None, repair: bool = True) -> "MessageStore":
        """Create or open the store at ``uri`` (a directory or object-store URI).

        ``config`` is the ``MessageStoreConfig`` (sizes, pull limits) and ``broker_config`` the
        ``BrokerConfig`` (cluster name, store host, topic auto-creation, filter bitmaps).

        Opening repairs a ConsumeQueue that lags its CommitLog (a crash between a put and its
        dispatch) by dispatching what is missing, unless ``repair=False``.
        """
        from rocketfilter.session import get_spark

        store = cls(str(uri), get_spark(spark), config or MessageStoreConfig(),
                    broker_config=broker_config, storage_options=storage_options)
        if repair:
            store.dispatch()
        return store

    @property
    def commitlog(self) -> Table:
        return self.tables[S.COMMITLOG]

    @property
    def consumequeue(self) -> Table:
        return self.tables[S.CONSUMEQUEUE]

    # --- state -----------------------------------------------------------------------------

    def commitlog_state(self) -> CommitLogState:
        """The CommitLog's high-water marks as of its latest snapshot."""
        table = self.commitlog.refresh()
        return CommitLogState.from_metadata(table.latest_metadata(COMMITLOG_KEY))

    def consumequeue_state(self) -> ConsumeQueueState:
        table = self.consumequeue.refresh()
        return ConsumeQueueState.from_metadata(table.latest_metadata(CONSUMEQUEUE_KEY))

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """One past the queue's last dispatched entry (``maxOffsetInQueue``); 0 when empty."""
        found = self.consumequeue_state().offsets(topic, queue_id)
        return 0 if found is None else found[1]

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        found = self.consumequeue_state().offsets(topic, queue_id)
        return 0 if found is None else found[0]

    # --- small tables ----------------------------------------------------------------------

    def _read_small(self, name: str) -> pa.Table:
        table = self.tables[name].refresh()
        files = table.files()
        schema = S.arrow_schema(S.SCHEMAS[name])
        if not files:
            return schema.empty_table()
        located = [filesystem_path(f.path) for f in files]
        return pq.read_table([p for _, p in located], filesystem=located[0][0], schema=schema)

    def _rewrite_small(self, name: str, update) -> Any:
        """Replace a small table's content by ``update(rows) -> (rows, result)`` in one commit."""
        def attempt():
            table = self.tables[name].refresh()
            version = table.version()
            before = table.files()
            rows = self._read_small(name).to_pylist()
            rows, result = update(rows)
            arrow = pa.Table.from_pylist(rows, schema=S.arrow_schema(S.SCHEMAS[name]))
            adds = table.write_arrow(arrow) if rows else []
            table.commit(adds, before, expected_version=version, operation="MERGE")
            return result
        return retry_on_conflict(attempt, f"update of {name}")

    def create_topic(self, topic: str, read_queue_nums: int = 4, write_queue_nums: int = 4,
                     perm: int = 6, topic_filter_type: str = "SINGLE_TAG") -> TopicConfig:
        """Create or update a topic (RocketMQ's ``topics.json`` entry). The name is checked
        with RocketMQ's topic rules, so it can never escape the store's directory."""
        validate_topic(topic)
        for label, value in (("read_queue_nums", read_queue_nums),
                             ("write_queue_nums", write_queue_nums)):
            if not isinstance(value, int) or not 1 <= value <= 1024:
                raise ValueError(f"topic {topic!r}: {label} must be an int from 1 to 1024, got {value!r}")
        config = TopicConfig(topic_name=topic, read_queue_nums=read_queue_nums,
                             write_queue_nums=write_queue_nums, perm=perm,
                             topic_filter_type=topic_filter_type)
        row = {"topic": topic, "read_queue_nums": read_queue_nums,
               "write_queue_nums": write_queue_nums, "perm": perm,
               "topic_filter_type": topic_filter_type, "updated_at": int(time.time() * 1000)}
        self._rewrite_small(S.TOPICS, lambda rows: ([r for r in rows if r["topic"] != topic] + [row], None))
        return config

    def topics(self) -> Dict[str, TopicConfig]:
        """Every topic's config, by name."""
        return {
            r["topic"]: TopicConfig(topic_name=r["topic"], read_queue_nums=r["read_queue_nums"],
                                    write_queue_nums=r["write_queue_nums"], perm=r["perm"],
                                    topic_filter_type=r["topic_filter_type"])
            for r in self._read_small(S.TOPICS).to_pylist()
        }

    def topic_config(self, topic: str) -> Optional[TopicConfig]:
        return self.topics().get(topic)

    def commit_consumer_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Upsert the group's consume offset for one queue (``ConsumerOffsetManager.commitOffset``)."""
        key = (group, topic, int(queue_id))
        row = {"group": group, "topic": topic, "queue_id": int(queue_id), "offset": int(offset),
               "updated_at": int(time.time() * 1000)}

        def update(rows):
            kept = [r for r in rows if (r["group"], r["topic"], r["queue_id"]) != key]
            return kept + [row], None
        self._rewrite_small(S.CONSUMER_OFFSETS, update)

    def commit_consumer_offsets(self, offsets: Iterable[tuple]) -> None:
        """Upsert many ``(group, topic, queue_id, offset)`` in one commit."""
        now = int(time.time() * 1000)
        new = {(g, t, int(q)): {"group": g, "topic": t, "queue_id": int(q), "offset": int(o),
                                "updated_at": now} for g, t, q, o in offsets}
        self._rewrite_small(S.CONSUMER_OFFSETS, lambda rows: (
            [r for r in rows if (r["group"], r["topic"], r["queue_id"]) not in new]
            + list(new.values()), None))

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for this queue."""
        for r in self._read_small(S.CONSUMER_OFFSETS).to_pylist():
            if (r["group"], r["topic"], r["queue_id"]) == (group, topic, int(queue_id)):
                return r["offset"]
        return -1

    # --- config files kept with the store (consumerFilter.json and the like) ---------------

    def _config_path(self, name: str):
        filesystem, root = filesystem_path(self.uri if "://" in self.uri else _abs(self.uri))
        return filesystem, f"{root}/config/{name}"

    def read_config(self, name: str) -> Optional[str]:
        filesystem, path = self._config_path(name)
        if filesystem.get_file_info(path).type == pafs.FileType.NotFound:
            return None
        with filesystem.open_input_stream(path) as f:
            return f.read().decode("utf-8")

    def write_config(self, name: str, text: str) -> None:
        """Write through a temporary name, then move, so readers never see half a file."""
        filesystem, path = self._config_path(name)
        filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
        tmp = f"{path}.tmp{random.randrange(1 << 30)}"
        with filesystem.open_output_stream(tmp) as f:
            f.write(text.encode("utf-8"))
        filesystem.move(tmp, path)

    @property
    def filter_manager(self):
        """The consumer groups' SQL92 filter data, persisted as ``config/consumerFilter.json``."""
        if self._filter_manager is None:
            from rocketfilter.store.filter_data import ConsumerFilterManager

            self._filter_manager = ConsumerFilterManager.for_store(self)
        return self._filter_manager

    # --- the write path and its maintenance (one module each) ------------------------------

    def put_messages(self, messages):
        """Append messages (a Spark DataFrame, or a list of dicts/Message objects); see
        :func:`rocketfilter.store.put.put_messages`."""
        from rocketfilter.store.put import put_messages

        return put_messages(self, messages)

    def dispatch(self):
        """Bring the ConsumeQueue up to the CommitLog; idempotent. See :mod:`.dispatch`."""
        from rocketfilter.store.dispatch import dispatch

        return dispatch(self)

    def expire(self, before_commitlog_offset: Optional[int] = None,
               before_timestamp: Optional[int] = None, *, clean_consume_queue: bool = True):
        from rocketfilter.store.retention import expire

        return expire(self, before_commitlog_offset, before_timestamp,
                      clean_consume_queue=clean_consume_queue)

    def compact(self, **kwargs):
        from rocketfilter.store.retention import compact

        return compact(self, **kwargs)

    def vacuum(self, retention_hours: float = 168, **kwargs) -> List[str]:
        from rocketfilter.store.retention import vacuum

        return vacuum(self, retention_hours, **kwargs)

    def import_store(self, path: str, *, skip_damaged: bool = False):
        """Import a RocketMQ broker's store directory; see :mod:`.import_job`."""
        from rocketfilter.store.import_job import import_store

        return import_store(self, path, skip_damaged=skip_damaged)

    def get_message(self, group: str, topic: str, queue_id: int, offset: int,
                    max_msg_nums: int = 32, message_filter=None):
        """``DefaultMessageStore#getMessage``; see :mod:`rocketfilter.pull.get_message`.

        The pull engine lives in ``rocketfilter.pull``, above the store; this method is the
        broker-shaped entry point RocketMQ users expect on a message store.
        """
        from rocketfilter.pull.get_message import get_message

        return get_message(self, group, topic, queue_id, offset, max_msg_nums, message_filter)


def _abs(path: str) -> str:
    import os

    return os.path.abspath(path)
