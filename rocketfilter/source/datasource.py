"""The ``rocketmq`` Python data source: a topic of a rocketfilter store, read as a consumer of one
subscription receives it, in batch (``spark.read``) and streaming (``spark.readStream``), and
written through ``put_messages`` (``df.write``, see :mod:`.sink`).

Spark runs these classes in its own Python workers: planning (options, offsets, partitions,
commits) in a worker beside the driver, :meth:`read` on the executors. None of them has a Spark
session, so the store is opened through its Delta tables only (deltalake and pyarrow), and the
subscription is decided on Arrow batches (:mod:`.filters`), never row by row.

>>> rocketfilter.register(spark)                                          # doctest: +SKIP
>>> (spark.read.format("rocketmq").option("store", "/data/rf").option("topic", "Orders")
...  .option("subExpression", "amount > 100").option("expressionType", "SQL92").load())  # doctest: +SKIP
"""
from __future__ import annotations

import logging
from typing import Dict, Iterator, Optional

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    InputPartition)
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from rocketfilter.delta import object_store
from rocketfilter.source import offsets as O
from rocketfilter.source.filters import SubscriptionFilter
from rocketfilter.source.options import SourceOptionError, SourceOptions, bad_input_in_one_frame
from rocketfilter.source.plan import ScanPartition, plan_scan
from rocketfilter.source.scan import ScanSpec, read_partition
from rocketfilter.source.schema import arrow_schema, check_schema, source_schema

log = logging.getLogger(__name__)

FORMAT = "rocketmq"


def open_store(options: SourceOptions):
    """The store, read through its Delta tables (no Spark); StoreNotFoundError when absent,
    SourceOptionError naming the ``topic`` option when the store has no such topic."""
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store.store import MessageStore

    store = MessageStore(options.store, None, MessageStoreConfig(),
                         storage_options=options.storage_options or None, create=False)
    known = set(store.topics()) | set(store.consumequeue_state().queues)
    if options.topic not in known:
        raise SourceOptionError(f"option topic: topic {options.topic!r} does not exist in store "
                                f"{store.uri} (topics: {', '.join(sorted(known)) or 'none'})")
    return store


def scan_spec(options: SourceOptions, schema: StructType) -> ScanSpec:
    columns = tuple(check_schema(schema))
    return ScanSpec(store_uri=options.store, topic=options.topic,
                    filter=SubscriptionFilter.build(options.topic, options.sub_expression,
                                                    options.expression_type),
                    columns=columns, schema=arrow_schema(schema),
                    fail_on_data_loss=options.fail_on_data_loss,
                    storage_options=object_store.storage_options(options.store, options.storage_options))


def _read(partition: InputPartition, spec: ScanSpec) -> Iterator:
    if isinstance(partition, ScanPartition):
        yield from read_partition(partition, spec)


class RocketMQDataSource(DataSource):
    """``format("rocketmq")``: see :mod:`rocketfilter.source.options` for the options."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _options(self) -> SourceOptions:
        return SourceOptions.parse(self.options)

    @bad_input_in_one_frame
    def schema(self) -> StructType:
        return source_schema(self._options().include_properties)

    @bad_input_in_one_frame
    def reader(self, schema: StructType) -> "RocketMQBatchReader":
        return RocketMQBatchReader(self._options(), schema)

    @bad_input_in_one_frame
    def streamReader(self, schema: StructType) -> "RocketMQStreamReader":
        return RocketMQStreamReader(self._options(), schema)

    @bad_input_in_one_frame
    def writer(self, schema: StructType, overwrite: bool):
        from rocketfilter.source.sink import RocketMQWriter

        return RocketMQWriter(dict(self.options), schema, overwrite)

    @bad_input_in_one_frame
    def streamWriter(self, schema: StructType, overwrite: bool):
        from rocketfilter.source.stream_sink import RocketMQStreamWriter

        return RocketMQStreamWriter(dict(self.options), schema, overwrite)


class RocketMQBatchReader(DataSourceReader):
    """A bounded read: ``startingOffsets``/``startingTimestamp`` (default earliest) to
    ``endingOffsets`` (default latest, exclusive). The offsets are resolved when the query is
    planned; a batch read never commits consumer offsets."""

    def __init__(self, options: SourceOptions, schema: StructType):
        if options.max_offsets_per_trigger is not None:
            log.info("maxOffsetsPerTrigger applies to streaming reads only; ignored")
        self.options = options
        self.spec = scan_spec(options, schema)

    def ranges(self, store) -> Dict[int, tuple]:
        """``{queue: (start, end)}`` of this read, with expired offsets handled."""
        o = self.options
        bounds = O.queue_bounds(store, o.topic)
        start = O.resolve(store, o.topic, o.start_spec(False) or "earliest", end=False,
                          what="startingTimestamp" if o.starting_timestamp is not None else "startingOffsets")
        end = O.resolve(store, o.topic, o.ending_offsets or "latest", end=True, what="endingOffsets")
        O.check_range(start, end, bounds)
        start = O.skip_expired(o.topic, start, bounds, o.fail_on_data_loss, o.store)
        return {q: (min(start.get(q, e), e), e) for q, e in end.items()}

    @bad_input_in_one_frame
    def partitions(self):
        store = open_store(self.options)
        return plan_scan(store, self.options.topic, self.ranges(store))

    def read(self, partition: InputPartition) -> Iterator:
        return _read(partition, self.spec)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A stream over the topic's queues. Offsets are ``{"topic": {"queue": next offset}}``;
    without ``startingOffsets``/``startingTimestamp`` it starts where the ``consumerGroup``
    would (its committed offsets; for a new group, where a RocketMQ push consumer with
    CONSUME_FROM_LAST_OFFSET starts), or at the latest offsets.

    With ``consumerGroup`` each completed batch's end offsets are committed to the store's
    consumer offsets: when Spark calls :meth:`commit`, and already when it asks for the next
    batch's offsets (:meth:`latestOffset` starts from the last completed batch's end), so the
    last batch before a stop is committed too."""

    def __init__(self, options: SourceOptions, schema: StructType):
        if options.ending_offsets is not None:
            raise SourceOptionError("option endingOffsets is for batch reads; a stream has no end "
                                    "(use Trigger.AvailableNow to stop at the latest offsets)")
        self.options = options
        self.spec = scan_spec(options, schema)
        self._store = None
        self._target: Optional[Dict[int, int]] = None
        self._committed: Optional[Dict[int, int]] = None

    def __getstate__(self):   # tasks get the spec; the store handle stays in this process
        state = dict(self.__dict__)
        state["_store"] = None
        return state

    @property
    def store(self):
        if self._store is None:
            self._store = open_store(self.options)
        return self._store

    def _latest(self) -> Dict[int, int]:
        return {q: hi for q, (_, hi) in O.queue_bounds(self.store, self.options.topic).items()}

    @bad_input_in_one_frame
    def initialOffset(self) -> dict:
        o = self.options
        spec = o.start_spec(True)
        if spec is not None:
            what = "startingTimestamp" if o.starting_timestamp is not None else "startingOffsets"
            start = O.resolve(self.store, o.topic, spec, end=False, what=what)
        elif o.consumer_group is not None:
            from rocketfilter.consumer.consume_from import compute_pull_from_where_for_topic

            start = {q: s.offset for q, s in
                     compute_pull_from_where_for_topic(self.store, o.consumer_group, o.topic).items()}
        else:
            start = self._latest()
        return O.to_json(o.topic, start)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    @bad_input_in_one_frame
    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        topic = self.options.topic
        begin = O.from_json(topic, start)
        self._commit(begin)   # the previous batch, which ended at `start`, is complete
        latest = self._latest()
        if self._target is not None:
            latest = {q: min(o, self._target.get(q, 0)) for q, o in latest.items()}
        queues = set(latest) | set(begin)
        latest = {q: max(latest.get(q, 0), begin.get(q, 0)) for q in queues}
        begin = {q: begin.get(q, 0) for q in queues}   # a queue new since the start: from 0
        if isinstance(limit, ReadMaxRows):
            latest = O.rate_limit(begin, latest, limit.max_rows)
        return O.to_json(topic, latest)

    def reportLatestOffset(self) -> dict:
        return O.to_json(self.options.topic, self._latest())

    @bad_input_in_one_frame
    def partitions(self, start: dict, end: dict):
        o = self.options
        begin, stop = O.from_json(o.topic, start), O.from_json(o.topic, end)
        begin = {q: begin.get(q, 0) for q in stop}
        bounds = O.queue_bounds(self.store, o.topic)
        begin = O.skip_expired(o.topic, begin, bounds, o.fail_on_data_loss, o.store)
        return plan_scan(self.store, o.topic, {q: (min(begin[q], e), e) for q, e in stop.items()})

    def read(self, partition: InputPartition) -> Iterator:
        return _read(partition, self.spec)

    def commit(self, end: dict) -> None:
        self._commit(O.from_json(self.options.topic, end))

    def _commit(self, offsets: Dict[int, int]) -> None:
        """Commit ``offsets`` for ``consumerGroup`` unless they are already the last committed."""
        o = self.options
        if o.consumer_group is None or offsets == self._committed:
            return
        from rocketfilter.store.offsets import commit_consumer_offsets

        commit_consumer_offsets(self.store, [(o.consumer_group, o.topic, q, off)
                                             for q, off in sorted(offsets.items())])
        self._committed = dict(offsets)
