"""``writeStream.format("rocketmq")``: each micro-batch appended through ``put_messages``,
exactly once across restarts.

The batch writer's staging and put (:mod:`.sink`), with the put keyed the way Delta's own
streaming sink keys its commits: the CommitLog commit records the Delta app transaction
(``rocketmq-sink-<query id>``, batch id). Spark keeps the query id in the checkpoint, so a
restarted query that replays a batch whose put had landed (a crash between the sink's commit
and the checkpoint's) finds it recorded and stores nothing. A new checkpoint is a new query id.
Options are the batch writer's; the output mode is append. Each micro-batch with rows is a put
in the sink's warm local Spark process (:mod:`.put_server`: seconds, once started), so a trigger
interval of seconds or more, and under its idle time, suits it.

>>> (df.writeStream.format("rocketmq").option("store", "/data/rf").option("topic", "T")
...    .option("checkpointLocation", "/data/checkpoints/t").start())   # doctest: +SKIP
"""
from __future__ import annotations

from typing import List, Optional

from pyspark.sql.datasource import DataSourceStreamArrowWriter

from rocketfilter.source.sink import StagedRows, StagingWriter

APP_ID_PREFIX = "rocketmq-sink-"


def app_id(messages: List[Optional[StagedRows]]) -> Optional[str]:
    """The app transaction id of a micro-batch's tasks (None when no task reported one)."""
    ids = {m.query_id for m in messages if m is not None and m.query_id}
    if len(ids) > 1:
        raise RuntimeError(f"format rocketmq: one micro-batch's tasks name several queries: {sorted(ids)}")
    return APP_ID_PREFIX + ids.pop() if ids else None


class RocketMQStreamWriter(StagingWriter, DataSourceStreamArrowWriter):
    """The streaming writer of the ``rocketmq`` format (append only, exactly once)."""

    APPEND = 'outputMode("append")'

    def commit(self, messages: List[Optional[StagedRows]], batchId: int) -> None:
        app = app_id(messages)
        if app is None and any(m is not None and m.path for m in messages):
            raise RuntimeError("format rocketmq: the micro-batch's tasks carry no streaming query id "
                               "(sql.streaming.queryId), so its put could not be made exactly once")
        self._put(messages, (app, batchId) if app else None)

    def abort(self, messages: List[Optional[StagedRows]], batchId: int) -> None:
        self._abort()
