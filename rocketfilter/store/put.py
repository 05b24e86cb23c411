"""``put_messages``: a broker's putMessage for a whole DataFrame, then dispatch.

Here: the records prepared as the producer and the broker shape them, the topic checks and the
commit. Two passes over the input, both on the executors (:mod:`.put_offsets`):

1. count the rows and sum the record sizes per (Spark partition, topic, explicit queue);
2. with each partition's starting offsets planned on the driver from those counts, assign queue
   ids (round robin per topic, as a producer's ``selectOneMessageQueue``), contiguous queue
   offsets and commit-log offsets inside ``mapInArrow`` with numpy, and write the files.

Bodies therefore never reach the driver, and the commit that publishes the files also carries
the new high-water marks; a producer that loses the race re-plans from the winner's marks.
"""
from __future__ import annotations

import time
from typing import Dict, Optional, Tuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from rocketfilter.message_columns import properties_to_string_column, string_to_properties_column
from rocketfilter.naming import is_not_allowed_send_topic
from rocketfilter.spark_progress import ProgressOption, progress_block
from rocketfilter.store import schema as S
from rocketfilter.delta.write import RESULT_DDL, delete_files
from rocketfilter.store.dispatch import finish_dispatch
from rocketfilter.store.promote import promote_configured
from rocketfilter.store.promoted import with_promoted
from rocketfilter.store.put_input import (INPUT_SCHEMA, PutMessageError, as_dict, check_limits, conform,
                                          messages_from_list)
from rocketfilter.arrow_batches import rows_only
from rocketfilter.store.put_offsets import (assign_and_write, check_sizes, count_rows, plan_offsets,
                                            store_host_prefix, widest_row)
from rocketfilter.delta.retry import retry_on_conflict
from rocketfilter.store.tables import StoreTables
from rocketfilter.store.topics import create_topic, topics

# Re-exported: callers import the input schema and the error from here.
__all__ = ["put_messages", "PutMessageError", "INPUT_SCHEMA"]


# --- preparing the records ------------------------------------------------------------------

def _with_producer_properties(props, tags, keys, cluster_name: str):
    """``Message.setTags``/``setKeys`` and the constructor's ``WAIT=true``, then the broker's
    ``CLUSTER``: one map_filter and one map_concat, so the map expression is never duplicated."""
    has = lambda c: F.coalesce(F.length(c), F.lit(0)) > 0  # noqa: E731
    base = F.map_filter(
        F.coalesce(props, F.create_map().cast("map<string,string>")),
        lambda k, v: ~(((k == "TAGS") & has(tags)) | ((k == "KEYS") & has(keys)) | (k == "CLUSTER")))
    extra = F.array(
        F.struct(F.lit("TAGS").alias("key"), tags.alias("value")),
        F.struct(F.lit("KEYS").alias("key"), keys.alias("value")),
        F.struct(F.lit("WAIT").alias("key"),
                 F.when(~F.map_contains_key(base, "WAIT"), F.lit("true")).alias("value")),
        F.struct(F.lit("CLUSTER").alias("key"), F.lit(cluster_name).alias("value")))
    return F.map_concat(base, F.map_from_entries(F.filter(extra, lambda e: has(e["value"]))))


def _needs_round_trip(props):
    """Whether the properties-string round trip can change this map (§9.1): a separator in a key
    or value, an empty key, or a null or empty value. Most maps pass through untouched."""
    return F.exists(F.map_entries(props), lambda e: (
        e["key"].contains("\u0001") | e["key"].contains("\u0002") | (F.length(e["key"]) == 0)
        | e["value"].isNull() | (F.length(e["value"]) == 0) | e["value"].contains("\u0002")))


def _prepare(df: DataFrame, cluster_name: str) -> DataFrame:
    """Set TAGS/KEYS/WAIT as the producer does and CLUSTER as the broker does, normalise the
    properties through the wire format (§9.1) and compute the record size (§9.2). Each step is
    its own projection: Spark keeps non-cheap expressions that are used twice apart."""
    staged = df.withColumn("properties", _with_producer_properties(
        F.col("properties"), F.col("tags"), F.col("keys"), cluster_name))
    # The wire string's bytes are counted, not built: only the rare maps the round trip
    # changes build it (profiled: building it for every message was a third of the put).
    props = F.col("properties")
    staged = staged.withColumn("_wire", F.aggregate(
        F.map_entries(props), F.lit(0),
        lambda n, e: n + F.when(e["value"].isNotNull(),
                                F.octet_length(e["key"]) + F.octet_length(e["value"]) + 2)
        .otherwise(F.lit(0))))
    staged = staged.withColumn("properties", F.when(
        _needs_round_trip(props), string_to_properties_column(properties_to_string_column(props)))
        .otherwise(props))
    ipv6 = lambda c: F.coalesce(F.col(c).contains("["), F.lit(False)).cast("int")  # noqa: E731
    return (staged
            .withColumn("tags", F.col("properties")["TAGS"])
            .withColumn("keys", F.col("properties")["KEYS"])
            .withColumn("body", F.coalesce(F.col("body"), F.lit(b"")))
            .withColumn("flag", F.coalesce(F.col("flag"), F.lit(0)))
            .withColumn("born_host", F.coalesce(F.col("born_host"), F.lit("127.0.0.1:0")))
            .withColumn("store_size", (F.lit(91) + F.length("body") + F.octet_length("topic")
                                       + F.col("_wire") + ipv6("born_host") * 12).cast("int"))
            .withColumn("_body_size", F.length("body")))


_ASSIGNED = ("queue_offset", "commitlog_offset", "msg_id")   # known only in pass 2


def _finish(prepared: DataFrame, store_host: str, store_timestamp: int, schema) -> DataFrame:
    """Every column of the table (``schema``: base and promoted) that does not depend on the
    offsets, in Spark, before pass 2 assigns them."""
    extra = {
        "body_crc": (F.crc32("body").bitwiseAND(F.lit(0x7FFFFFFF))).cast("int"),
        "sys_flag": F.lit(0),
        "born_timestamp": F.coalesce(F.col("born_timestamp"), F.lit(store_timestamp)),
        "store_timestamp": F.lit(store_timestamp).cast("long"),
        "store_host": F.lit(store_host),
        "reconsume_times": F.lit(0),
        "prepared_transaction_offset": F.lit(0).cast("long"),
    }
    base = prepared.select(*[
        (extra[f.name] if f.name in extra else F.col(f.name)).cast(f.dataType).alias(f.name)
        for f in S.COMMITLOG_SCHEMA.fields if f.name not in _ASSIGNED])
    return with_promoted(base, StructType([f for f in schema.fields if f.name not in _ASSIGNED]))


# --- the whole put --------------------------------------------------------------------------

def _check_topics(tables: StoreTables, wanted: Dict[str, set],
                  index: Optional[Dict[str, int]] = None) -> Dict[str, int]:
    """Each topic's write queue count, creating topics when auto-creation is on; PutMessageError
    for an unknown topic or an explicit queue id out of range. ``wanted`` maps a topic to the
    explicit queue ids its messages ask for (None: round robin)."""
    known = topics(tables)
    queue_nums = {}
    for topic in sorted(wanted):
        if is_not_allowed_send_topic(topic):  # AbstractSendMessageProcessor.msgCheck
            which = f"message {index[topic]}" if index else "a message"
            raise PutMessageError(f"{which}: Sending message to topic[{topic}] is forbidden. (a "
                                  "system topic: the broker answers NO_PERMISSION); nothing was "
                                  "written")
        config = known.get(topic)
        if config is None:
            broker = tables.broker_config
            if not broker.auto_create_topic_enable:
                raise PutMessageError(f"topic {topic!r} does not exist; create it with create_topic()")
            config = create_topic(tables, topic, broker.default_topic_queue_nums,
                                  broker.default_topic_queue_nums)
        queue_nums[topic] = config.write_queue_nums
        bad = sorted(q for q in wanted[topic] if q is not None and not 0 <= q < config.write_queue_nums)
        if bad:
            raise PutMessageError(f"topic {topic!r}: queue_id {bad[0]} is outside "
                                  f"0..{config.write_queue_nums - 1} (write_queue_nums)")
    return queue_nums


def _wanted(rows) -> Dict[str, set]:
    wanted: Dict[str, set] = {}
    for topic, queue_id in rows:
        wanted.setdefault(topic, set()).add(queue_id)
    return wanted


def put_messages(tables: StoreTables, messages, *, progress: ProgressOption = False,
                 app_transaction: Optional[Tuple[str, int]] = None):
    """Append ``messages`` to the CommitLog in one Delta commit, then dispatch them.

    ``messages`` is a Spark DataFrame or a list of dicts (or objects with those attributes) with
    ``topic`` and optionally ``tags``, ``keys`` (a string or a list), ``properties`` (a dict),
    ``body`` (bytes or str), ``queue_id``, ``flag``, ``born_timestamp``, ``born_host``. A
    list is checked message by message before any Spark job (PutMessageError names the message
    and the field); a DataFrame by its schema, then by a first pass that counts the rows. A
    DataFrame input must be deterministic (it is read twice: once to count, once to write).

    Returns what was assigned (topic, queue_id, queue_offset, commitlog_offset, msg_id): a list
    of dicts for a list input, a DataFrame for a DataFrame input.

    ``progress=True`` shows the write (``put: 1200000/5000000 messages ...``) and the dispatch
    that follows on stderr when they last more than a few seconds; a callable shows it its own
    way (see :func:`rocketfilter.spark_progress.progress_block`).

    ``app_transaction=(app_id, version)`` makes the put idempotent, as Delta's txnAppId and
    txnVersion do: the pair is recorded in the CommitLog's commit, and a put whose ``version`` is
    at or below the one recorded for ``app_id`` stores nothing and returns no rows (the streaming
    sink keys its micro-batches so: a batch replayed after a restart is not stored twice).
    """
    spark = tables.spark
    if app_transaction is not None and _already_put(tables, app_transaction):
        return [] if not isinstance(messages, DataFrame) else _no_result(spark)
    as_list = not isinstance(messages, DataFrame)
    if as_list:
        messages = list(messages)
        if not messages:
            return []
        df = messages_from_list(spark, messages)
        # Known on the driver: refuse a bad topic, queue or size before any Spark job.
        dicts = [as_dict(m) for m in messages]
        for i, m in enumerate(dicts):
            check_limits(i, m, tables.config.max_message_size,
                         tables.broker_config.broker_cluster_name)
        _check_topics(tables, _wanted((m["topic"], m.get("queue_id")) for m in dicts),
                      index={m["topic"]: i for i, m in reversed(list(enumerate(dicts)))})
    else:
        df = messages
    prepared = _prepare(conform(df), tables.broker_config.broker_cluster_name)
    broker = tables.broker_config
    store_host = f"{broker.broker_ip1}:{broker.listen_port}"
    tables.check_files(S.COMMITLOG)  # never continue offsets past lost messages
    counts = count_rows(prepared)
    if not counts:
        return [] if as_list else _no_result(spark)
    missing = sum(int(r["n"]) for r in counts if r["topic"] is None)
    if missing:
        raise PutMessageError(f"{missing} message(s) have no topic (column 'topic' is null); "
                              "nothing was written")
    queue_nums = _check_topics(tables, _wanted((r["topic"], r["queue_id"]) for r in counts))
    check_sizes(counts, tables.config.max_message_size)
    promote_configured(tables)

    def attempt():
        table = tables.table(S.COMMITLOG)
        version = table.version()
        if app_transaction is not None and _already_put(tables, app_transaction):
            return None   # a concurrent put of the same transaction landed first
        state = tables.commitlog_state()
        plan, new_state = plan_offsets(counts, state, queue_nums)
        now = int(time.time() * 1000)
        table._check_writable()
        # The promoted columns the table has now (a retry after a promote sees the new ones).
        written = (_finish(prepared, store_host, now, table.schema)
                   .mapInArrow(assign_and_write(plan, table, store_host_prefix(store_host),
                                                 tables.config.commit_log_row_group_rows), RESULT_DDL))
        with rows_only(spark, widest_row(counts)):
            rows = written.collect()
        adds = table._adds([r.asDict() for r in rows], True)
        try:
            table.commit(adds, expected_version=version, custom_metadata=new_state.to_metadata(),
                         app_transaction=app_transaction)
        except BaseException:
            delete_files(table.uri, [a.path for a in adds])
            raise
        return state.next_commitlog_offset, new_state.next_commitlog_offset

    total = sum(int(r["n"]) for r in counts)
    with progress_block(spark, progress, "put", unit="messages", total=total):
        stored = retry_on_conflict(attempt, "put_messages")
    if stored is None:
        return [] if as_list else _no_result(spark)
    start, end = stored
    if tables.config.dispatch_on_put:
        finish_dispatch(tables, end, progress=progress)
    result = (tables.commitlog.read(spark, where=[("commitlog_offset", ">=", start),
                                                  ("commitlog_offset", "<", end)])
              .select(*_RESULT))
    if as_list:
        return [r.asDict() for r in result.orderBy("commitlog_offset").collect()]
    return result


_RESULT = ("topic", "queue_id", "queue_offset", "commitlog_offset", "msg_id")


def _no_result(spark) -> DataFrame:
    return spark.createDataFrame([], S.COMMITLOG_SCHEMA).select(*_RESULT)


def _already_put(tables: StoreTables, app_transaction: Tuple[str, int]) -> bool:
    """Whether the CommitLog's snapshot records ``app_transaction``'s version (or a later one)."""
    app_id, version = app_transaction
    done = tables.table(S.COMMITLOG).transaction_version(app_id)
    return done is not None and done >= version

