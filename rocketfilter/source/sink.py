"""``df.write.format("rocketmq")``: append a DataFrame's rows to a store as messages through
``put_messages``, with its checks, errors, offsets and dispatch.

Spark runs a Python data source's writer in its own Python workers, none of which holds a Spark
session, and ``put_messages`` is a Spark job. So the write is staged: each task writes its rows
(Arrow batches, no per-row Python) as one parquet file under the store's ``_sink/`` directory;
the job's commit then runs ``put_messages`` over those files, in task order, in a local Spark
process that later puts reuse until it idles (:mod:`.put_server`), and removes them. The put is
one CommitLog commit: a refused put (an unknown topic, a queue out of range, a null topic)
appends nothing, and its PutMessageError is the write's error. The column types are checked
before any task runs.

=============  ===============================================================================
option         meaning
=============  ===============================================================================
``store``      the store's directory or URI (or ``save(path)``); it must exist
``topic``      the topic of every row (as the Kafka sink's ``topic`` option, it wins over a
               ``topic`` column); without it, each row's ``topic`` column
``storage.*``  delta-rs/object-store storage options
=============  ===============================================================================

The columns are ``put_messages``' input: ``topic``, ``tags``, ``keys`` (a string or an array),
``properties`` (``map<string,string>``), ``body`` (binary or string), ``queue_id``, ``flag``,
``born_timestamp``, ``born_host``; others are ignored. The put uses the default broker and
store settings (``MessageStore.open(path)``'s). The streaming sink (:mod:`.stream_sink`) is
this writer with each micro-batch's put made idempotent.

>>> df.write.format("rocketmq").mode("append").option("store", "/data/rf").option("topic", "T").save()  # doctest: +SKIP
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StringType, StructField, StructType

from rocketfilter.delta import object_store
from rocketfilter.delta.write import filesystem_path
# MessageStore.open removes the staging a killed write left (rocketfilter.store.staging).
from rocketfilter.store.staging import STAGING

_STORAGE_PREFIX = "storage."
# What the put's process must not inherit from a Spark worker: it starts its own local session.
_WORKER_ENV = ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED",
               "SPARK_LOCAL_REMOTE", "PYSPARK_SUBMIT_ARGS")


@dataclass
class StagedRows(WriterCommitMessage):
    """One task's rows, staged as a parquet file (None: the task had no rows)."""

    partition: int
    path: Optional[str]
    rows: int
    query_id: Optional[str] = None   # a streaming query's id (stable across its restarts)


def _task() -> Tuple[int, Optional[str]]:
    """This task's partition, and its streaming query's id (None in a batch job)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return 0, None
    return context.partitionId(), context.getLocalProperty("sql.streaming.queryId")


class StagingWriter:
    """What the batch and the streaming writer share: the options, the checks before any task,
    and the tasks' staging of their rows."""

    APPEND = 'mode("append")'

    def __init__(self, options: dict, schema: StructType, overwrite: bool):
        from rocketfilter.naming import validate_topic
        from rocketfilter.store.put_input import check_input_schema
        from rocketfilter.store.tables import normalize_store_uri, store_exists

        opts = {str(k).lower(): v for k, v in options.items()}
        if overwrite:
            raise ValueError("format rocketmq appends messages to a topic, which is append-only: "
                             f"use {self.APPEND}")
        store = opts.get("store") or opts.get("path")
        if not store:
            raise ValueError("option store is required: the store's directory or URI")
        self.store = normalize_store_uri(store)
        # Resolved here (the environment's, overridden), so the tasks need no environment.
        self.storage_options = object_store.storage_options(
            self.store, {k[len(_STORAGE_PREFIX):]: v for k, v in opts.items() if k.startswith(_STORAGE_PREFIX)})
        if not store_exists(self.store, self.storage_options):
            raise ValueError(f"no rocketfilter store at {store}; create it first "
                             "(MessageStore.open(path))")
        self.topic = opts.get("topic") or None
        if self.topic is not None:
            validate_topic(self.topic)
            schema = StructType([f for f in schema.fields if f.name != "topic"]
                                + [StructField("topic", StringType())])
        check_input_schema(schema)  # PutMessageError naming a missing topic or a wrong column type
        self.staging = f"{self.store}/{STAGING}/{uuid.uuid4()}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedRows:
        object_store.register(self.store, self.storage_options)
        partition, query_id = _task()
        fs, root = filesystem_path(self.staging)
        writer, path, rows = None, None, 0
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                if writer is None:
                    fs.create_dir(root, recursive=True)
                    path = f"{self.staging}/part-{partition:05d}-{uuid.uuid4()}.parquet"
                    writer = pq.ParquetWriter(fs.open_output_stream(filesystem_path(path)[1]), batch.schema)
                writer.write_batch(batch)
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
        return StagedRows(partition, path, rows, query_id)

    def _put(self, messages: List[Optional[StagedRows]],
             app_transaction: Optional[Tuple[str, int]] = None) -> None:
        """The job's commit: put the staged files in task order, then remove the staging (and
        what failed task attempts left there)."""
        object_store.register(self.store, self.storage_options)  # this process reads the staged files
        staged = sorted((m for m in messages if m is not None and m.path is not None),
                        key=lambda m: m.partition)
        try:
            if staged:
                self._check_queues([m.path for m in staged])
                put_staged(self.store, [m.path for m in staged], self.topic, self.storage_options,
                           app_transaction)
        finally:
            self._clean()

    def _check_queues(self, files: List[str]) -> None:
        """The put's own topic and queue check (``put._check_topics``) on the staged rows' topics
        and queue ids, before paying for a Spark start: only where it changes nothing (every
        topic exists); the put checks again, and reports null topics and what else it refuses."""
        from rocketfilter.config import MessageStoreConfig
        from rocketfilter.store.put import _check_topics, _wanted
        from rocketfilter.store.tables import StoreTables
        from rocketfilter.store.topics import topics

        pairs = set()
        for path in files:   # the distinct (topic, queue_id) of each file, not its rows
            fs, local = filesystem_path(path)
            staged = pq.ParquetFile(fs.open_input_file(local))
            rows = staged.read(columns=[c for c in ("topic", "queue_id") if c in staged.schema_arrow.names])
            if self.topic is not None or "topic" not in rows.column_names:
                rows = rows.drop_columns([c for c in ("topic",) if c in rows.column_names])
                rows = rows.append_column("topic", pa.array([self.topic] * staged.metadata.num_rows, pa.string()))
            if "queue_id" not in rows.column_names:
                rows = rows.append_column("queue_id", pa.nulls(staged.metadata.num_rows, pa.int32()))
            distinct = rows.group_by(["topic", "queue_id"]).aggregate([])
            pairs.update(zip(distinct.column("topic").to_pylist(), distinct.column("queue_id").to_pylist()))
        tables = StoreTables(self.store, None, MessageStoreConfig(), storage_options=self.storage_options,
                             create=False)
        wanted = _wanted(pairs)
        if None not in wanted and set(wanted) <= set(topics(tables)):
            _check_topics(tables, wanted)

    def _abort(self) -> None:
        object_store.register(self.store, self.storage_options)
        self._clean()

    def _clean(self) -> None:
        fs, root = filesystem_path(self.staging)
        try:
            fs.delete_dir(root)
        except (FileNotFoundError, OSError):
            pass


class RocketMQWriter(StagingWriter, DataSourceArrowWriter):
    """The batch writer of the ``rocketmq`` format (append only)."""

    def commit(self, messages: List[Optional[StagedRows]]) -> None:
        self._put(messages)

    def abort(self, messages: List[Optional[StagedRows]]) -> None:
        self._abort()


def already_put(store: str, storage_options: Optional[dict], app_transaction: Tuple[str, int]) -> bool:
    """Whether the store's CommitLog records ``app_transaction`` (read from its Delta log)."""
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store.put import _already_put
    from rocketfilter.store.tables import StoreTables

    tables = StoreTables(store, None, MessageStoreConfig(), storage_options=storage_options, create=False)
    return _already_put(tables, app_transaction)


def put_staged(store: str, files: List[str], topic: Optional[str],
               storage_options: Optional[dict], app_transaction: Optional[Tuple[str, int]] = None) -> dict:
    """``put_messages`` of the staged ``files`` (in order) in a local Spark process (the warm
    put server of :mod:`.put_server`, or one of its own when ``ROCKETFILTER_SINK_IDLE_SECONDS``
    is 0); its PutMessageError (or another error's last lines) raised here. Returns
    ``{"messages": n}``. With ``app_transaction`` the put is idempotent: one already recorded
    starts no process."""
    from rocketfilter.source import put_server
    from rocketfilter.store.put_input import PutMessageError
    from rocketfilter.store.tables import store_exists

    if app_transaction is not None and already_put(store, storage_options, app_transaction):
        return {"messages": 0}
    if not store_exists(store, storage_options):   # before any Spark start
        raise RuntimeError(f"format rocketmq: the put into {store} failed: no rocketfilter store at {store}")
    request = {"store": store, "files": files, "topic": topic, "storage_options": storage_options,
               "app_transaction": list(app_transaction) if app_transaction else None}
    env = {k: v for k, v in os.environ.items() if k not in _WORKER_ENV}
    idle = put_server.idle_seconds(env)
    if idle > 0:
        answer = put_server.put(request, env, idle)
    else:
        answer = _put_in_own_process(store, request, env)
    if "messages" in answer:
        return answer
    if answer.get("error") == "PutMessageError":
        raise PutMessageError(answer["message"])
    raise RuntimeError(f"format rocketmq: the put into {store} failed: {answer['message']}")


def _put_in_own_process(store: str, request: dict, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-m", "rocketfilter.source.sink_put"], input=json.dumps(request),
                          capture_output=True, text=True, env=env)
    lines = done.stdout.strip().splitlines()
    answer = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    if answer is not None and ("messages" in answer or "error" in answer):
        return answer
    tail = "\n".join(done.stderr.strip().splitlines()[-8:])
    raise RuntimeError(f"format rocketmq: the put into {store} failed (exit {done.returncode}):\n{tail}")
