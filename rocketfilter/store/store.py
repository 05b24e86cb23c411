"""``MessageStore``: a RocketMQ broker's store as Delta tables under one directory or URI.

A thin facade: the tables and their state are :class:`~rocketfilter.store.tables.StoreTables`,
and each operation lives in its own module that takes the tables (:mod:`.topics`,
:mod:`.offsets`, :mod:`.groups`, :mod:`.put`, :mod:`.dispatch`, :mod:`.retention`,
:mod:`.import_job`). ``get_message``
(RocketMQ users expect ``getMessage`` on a message store) runs the pull path of
:mod:`rocketfilter.pull`, a layer above this one, which the package binds in through
:mod:`rocketfilter.hooks`: no module of the store imports it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, List, Optional

from rocketfilter.hooks import get_message_function
from rocketfilter.config import BrokerConfig, MessageStoreConfig, TopicConfig
from rocketfilter.store import dispatch as _dispatch
from rocketfilter.store import backfill as _backfill
from rocketfilter.store import describe as _describe
from rocketfilter.store import cq_units, groups, import_job, offsets, offsets_by_time, put, retention, sub_bits, topics
from rocketfilter.store import promote as _promote
from rocketfilter.store.staging import clean_abandoned_staging
from rocketfilter.store.tables import StoreTables

if TYPE_CHECKING:
    from rocketfilter.consumer.group import ConsumerGroup


class MessageStore(StoreTables):
    """A RocketMQ message store whose CommitLog and ConsumeQueue are Delta tables.

    >>> store = MessageStore.open("/tmp/store")                         # doctest: +SKIP
    >>> store.create_topic("TopicTest", read_queue_nums=4, write_queue_nums=4)  # doctest: +SKIP
    >>> store.put_messages([{"topic": "TopicTest", "tags": "TagA", "body": b"hi"}])  # doctest: +SKIP
    [{'topic': 'TopicTest', 'queue_id': 0, 'queue_offset': 0, 'commitlog_offset': 0, ...}]
    """

    @classmethod
    def open(cls, uri: str, spark=None, config: Optional[MessageStoreConfig] = None, *,
             broker_config: Optional[BrokerConfig] = None,
             storage_options: Optional[dict] = None, repair: bool = True,
             create: bool = True) -> "MessageStore":
        """Open the store at ``uri`` (a directory or object-store URI), creating it when absent
        and ``create`` (``create=False`` raises StoreNotFoundError naming the path instead: what
        the jobs and the command line use, so a mistyped path never makes an empty store).

        ``config`` is the ``MessageStoreConfig`` (sizes, pull limits) and ``broker_config`` the
        ``BrokerConfig`` (cluster name, store host, topic auto-creation, filter bitmaps).

        Opening checks that every data file the tables' logs list is still in storage
        (StoreDamagedError otherwise), then repairs a ConsumeQueue that lags its CommitLog (a
        crash between a put and its dispatch) by dispatching what is missing, unless
        ``repair=False``; with repair it also removes the staged rows of ``format("rocketmq")``
        writes killed before their commit (``_sink/`` folders unchanged for a day).
        """
        from rocketfilter.session import get_spark

        store = cls(str(uri), get_spark(spark, store=str(uri)), config or MessageStoreConfig(),
                    broker_config=broker_config, storage_options=storage_options, create=create)
        store.check_files()
        if repair:
            store.dispatch()
            clean_abandoned_staging(store)  # rows a killed format("rocketmq") write left
        return store

    # --- topics and consumer offsets -------------------------------------------------------

    def create_topic(self, topic: str, read_queue_nums: int = 4, write_queue_nums: int = 4,
                     perm: int = 6, topic_filter_type: str = "SINGLE_TAG") -> TopicConfig:
        """Create or update a topic (RocketMQ's ``topics.json`` entry); see :mod:`.topics`."""
        return topics.create_topic(self, topic, read_queue_nums, write_queue_nums, perm,
                                   topic_filter_type)

    def topics(self) -> Dict[str, TopicConfig]:
        """Every topic's config, by name."""
        return topics.topics(self)

    def topic_config(self, topic: str) -> Optional[TopicConfig]:
        return topics.topic_config(self, topic)

    def describe(self, topic: Optional[str] = None, *, sample: int = 1000) -> dict:
        """What is in the store as plain data (dicts, lists, numbers, strings): its settings,
        tables, topics with their queues (min/max offset, message count, first and last store
        time), consumer groups with subscriptions and lag per queue, promoted properties and
        registered subscriptions; with ``topic``, the most frequent property keys of its newest
        ``sample`` messages and the kinds of value they hold. No Spark job runs; see
        :mod:`.describe`.

        >>> store.describe("Orders")["topics"][0]["messages"]          # doctest: +SKIP
        12
        """
        return _describe.describe(self, topic, sample=sample)

    def commit_consumer_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Upsert the group's consume offset for one queue; ValueError for an invalid group or
        topic name, or a queue id or offset below 0."""
        offsets.commit_consumer_offset(self, group, topic, queue_id, offset)

    def commit_consumer_offsets(self, offsets_: Iterable[tuple]) -> None:
        """Upsert many ``(group, topic, queue_id, offset)`` in one commit."""
        offsets.commit_consumer_offsets(self, offsets_)

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for this queue."""
        return offsets.query_consumer_offset(self, group, topic, queue_id)

    def reset_offset_by_time(self, group: str, topic: str, timestamp_ms: int) -> Dict[int, int]:
        """RocketMQ's admin ``resetOffsetByTime``: commit, for every read queue of ``topic``, the
        offset of ``timestamp_ms``; returns them by queue. See :mod:`.offsets`."""
        return offsets.reset_offset_by_time(self, group, topic, timestamp_ms)

    def consumer_offsets(self, group: Optional[str] = None, topic: Optional[str] = None) -> Dict[tuple, int]:
        """Every committed offset by ``(group, topic, queue_id)``, optionally for one group/topic."""
        return offsets.consumer_offsets(self, group, topic)

    def queue_units(self, topic: str, queue_id: int) -> cq_units.QueueUnits:
        """Point reads of one queue's units (its min/max offsets, the unit at an offset); see
        :mod:`.cq_units`."""
        return cq_units.QueueUnits(self, topic, queue_id)

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int,
                                    boundary_type: str = "LOWER") -> int:
        """The queue offset of a store time (ms), as RocketMQ's ``getOffsetInQueueByTime`` with
        ``BoundaryType`` LOWER or UPPER; see :mod:`.offsets_by_time`."""
        return offsets_by_time.get_offset_in_queue_by_time(self, topic, queue_id, timestamp_ms,
                                                           boundary_type)

    # --- consumer groups --------------------------------------------------------------------

    def save_group(self, group: "ConsumerGroup") -> None:
        """Store a ``ConsumerGroup`` (its settings, consumers, subscriptions and heartbeat order),
        replacing the store's group of that name; see :mod:`.groups`."""
        groups.save_group(self, group)

    def load_group(self, name: str) -> "ConsumerGroup":
        """The stored group ``name``; ValueError when the store has none of that name."""
        return groups.load_group(self, name)

    def list_groups(self) -> List[str]:
        """The names of the stored groups, sorted."""
        return groups.list_groups(self)

    def record_heartbeat(self, group: str, client_id: str, subscriptions, *, message_model: str = "CLUSTERING",
                         consume_from_where: str = "CONSUME_FROM_LAST_OFFSET",
                         post_subscription_when_pull: Optional[bool] = None) -> bool:
        """Record a consumer's heartbeat in its stored group (the Broker calls it on every
        ``register_consumer``); see :func:`rocketfilter.store.groups.record_heartbeat`."""
        return groups.record_heartbeat(self, group, client_id, subscriptions, message_model=message_model,
                                       consume_from_where=consume_from_where,
                                       post_subscription_when_pull=post_subscription_when_pull)

    def record_unregister(self, group: str, client_id: str) -> bool:
        """Record that a consumer left its group (the Broker's ``unregister_consumer``)."""
        return groups.record_unregister(self, group, client_id)

    # --- the write path and its maintenance ------------------------------------------------

    def put_messages(self, messages, *, progress=False, app_transaction=None):
        """Append messages (a Spark DataFrame, or a list of dicts/Message objects); see
        :func:`rocketfilter.store.put.put_messages` (``progress=True``: a progress line on
        stderr for a put of more than a few seconds; ``app_transaction=(app_id, version)``: an
        idempotent put, stored once per version).

        >>> store.put_messages(df, app_transaction=("orders-loader", 7))   # doctest: +SKIP
        """
        return put.put_messages(self, messages, progress=progress, app_transaction=app_transaction)

    def dispatch(self):
        """Bring the ConsumeQueue up to the CommitLog; idempotent. See :mod:`.dispatch`."""
        return _dispatch.dispatch(self)

    def expire(self, before_commitlog_offset: Optional[int] = None,
               before_timestamp: Optional[int] = None, *, clean_consume_queue: bool = True):
        return retention.expire(self, before_commitlog_offset, before_timestamp,
                                clean_consume_queue=clean_consume_queue)

    def compact(self, **kwargs):
        return retention.compact(self, **kwargs)

    def vacuum(self, retention_hours: float = 168, **kwargs) -> List[str]:
        return retention.vacuum(self, retention_hours, **kwargs)

    def promote(self, properties):
        """Promote ``properties`` (names) to typed CommitLog columns, rewriting the files that
        hold them; see :mod:`.promote`. Returns a ``PromoteReport``."""
        return _promote.promote(self, [properties] if isinstance(properties, str) else list(properties))

    def register_subscription_bits(self, group: str, topic: str, expression: str,
                                   expression_type: str = "TAG", sub_version: int = 0) -> bool:
        """Keep the exact broker decision of ``group``'s subscription as a ConsumeQueue bit from
        the next dispatch on (:mod:`.sub_bits`); :meth:`backfill` computes it for history."""
        return sub_bits.register(self, group, topic, expression, expression_type, sub_version)

    def unregister_subscription_bits(self, group: str, topic: Optional[str] = None) -> None:
        sub_bits.unregister(self, group, topic)

    def backfill(self, topics: Optional[List[str]] = None) -> dict:
        """Compute the registered subscriptions' bits over the ConsumeQueue's history; see
        :mod:`.backfill`."""
        return _backfill.backfill(self, topics)

    def import_store(self, path: str, *, skip_damaged: bool = False, progress=False):
        """Import a RocketMQ broker's store directory; see :mod:`.import_job` (``progress=True``:
        files done of total on stderr for an import of more than a few seconds)."""
        return import_job.import_store(self, path, skip_damaged=skip_damaged, progress=progress)

    def get_message(self, group: str, topic: str, queue_id: int, offset: int,
                    max_msg_nums: int = 32, message_filter=None):
        """``DefaultMessageStore#getMessage``; see :mod:`rocketfilter.pull.get_message`."""
        return get_message_function()(self, group, topic, queue_id, offset, max_msg_nums, message_filter)
