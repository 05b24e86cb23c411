"""``put_messages``: a broker's putMessage for a whole DataFrame, then dispatch.

Two passes over the input, both on the executors:

1. count the rows and sum the record sizes per (Spark partition, topic, explicit queue);
2. with each partition's starting offsets planned on the driver from those counts, assign queue
   ids (round robin per topic, as a producer's ``selectOneMessageQueue``), contiguous queue
   offsets and commit-log offsets inside ``mapInArrow`` with numpy, and write the files.

Bodies therefore never reach the driver, and the commit that publishes the files also carries
the new high-water marks; a producer that loses the race re-plans from the winner's marks.
"""
from __future__ import annotations

import binascii
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
import pyarrow as pa
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
from rocketfilter.store.put_input import (INPUT_SCHEMA, PutMessageError, as_dict, body_too_large,
                                          check_limits, conform, messages_from_list,
                                          properties_too_long)
from rocketfilter.delta.retry import retry_on_conflict
from rocketfilter.store.state import CommitLogState
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


# --- pass 1: counts, and the driver's plan ------------------------------------------------

def _count_partition(batches):
    """Pass 1, per task: rows and bytes per (topic, explicit queue). Keyed by the task's own
    partition id, as pass 2 sees it (``spark_partition_id()`` would be folded on the driver for
    a local relation, where every row is partition 0)."""
    from pyspark import TaskContext

    totals: Dict[tuple, list] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch]).select(["topic", "queue_id", "store_size",
                                                         "_body_size", "_wire"])
        # count_all: a message without a topic (so without a size) must still be counted.
        grouped = table.group_by(["topic", "queue_id"], use_threads=False).aggregate(
            [([], "count_all"), ("store_size", "sum"), ("_body_size", "max"), ("_wire", "max")])
        for row in grouped.to_pylist():
            key = (row["topic"], row["queue_id"])
            acc = totals.setdefault(key, [0, 0, 0, 0])
            acc[0] += row["count_all"]
            acc[1] += row["store_size_sum"] or 0
            acc[2] = max(acc[2], row["_body_size_max"] or 0)
            acc[3] = max(acc[3], row["_wire_max"] or 0)
    pid = TaskContext.get().partitionId()
    rows = [{"p": pid, "topic": t, "queue_id": q, "n": n, "bytes": b, "body": body, "wire": wire}
            for (t, q), (n, b, body, wire) in totals.items()]
    yield pa.RecordBatch.from_pylist(rows, schema=pa.schema([
        ("p", pa.int32()), ("topic", pa.string()), ("queue_id", pa.int64()),
        ("n", pa.int64()), ("bytes", pa.int64()), ("body", pa.int64()), ("wire", pa.int64())]))


def _counts(df: DataFrame) -> List[tuple]:
    # Only these columns travel to Python (profiled: shipping whole rows made this pass
    # as costly as the write).
    return (df.select("topic", "queue_id", "store_size", "_body_size", "_wire")
            .mapInArrow(_count_partition, "p int, topic string, queue_id long, n long, bytes long, "
                                          "body long, wire long").collect())


def _check_sizes(counts: List[tuple], max_message_size: int) -> None:
    """PutMessageError for a DataFrame holding a message the broker would refuse for its size
    (pass 1 saw each topic's largest body and properties string)."""
    for row in sorted(counts, key=lambda r: (r["topic"] or "", r["queue_id"] or -1)):
        for why in (body_too_large(row["body"], max_message_size),
                    properties_too_long(row["wire"])):
            if why:
                raise PutMessageError(f"a message of topic {row['topic']!r}: {why}; nothing was "
                                      "written")


def _plan(counts: List[tuple], state: CommitLogState, queue_nums: Dict[str, int]) -> Tuple[dict, CommitLogState]:
    """Each partition's starting round-robin index per topic, starting offset per queue and
    starting physical offset, and the state after the whole put."""
    by_partition: Dict[int, list] = {}
    for row in counts:
        by_partition.setdefault(row["p"], []).append(row)
    new = CommitLogState(state.next_commitlog_offset, state.min_commitlog_offset,
                         {t: dict(q) for t, q in state.queues.items()}, dict(state.round_robin))
    plan = {}
    for p in sorted(by_partition):
        rows = by_partition[p]
        part = {"phys": new.next_commitlog_offset, "rr": {}, "queues": {}, "width": {}}
        for row in rows:
            new.next_commitlog_offset += int(row["bytes"])
        for topic in sorted({r["topic"] for r in rows}):
            width = queue_nums[topic]
            part["width"][topic] = width
            queues = new.queues.setdefault(topic, {})
            part["queues"][topic] = {q: queues.get(q, 0) for q in range(width)}
            for r in rows:
                if r["topic"] == topic and r["queue_id"] is not None:
                    queues[r["queue_id"]] = queues.get(r["queue_id"], 0) + int(r["n"])
            n_rr = sum(int(r["n"]) for r in rows if r["topic"] == topic and r["queue_id"] is None)
            start = new.round_robin.get(topic, 0)
            part["rr"][topic] = start
            for q in range(width):
                hits = n_rr // width + (1 if (q - start) % width < n_rr % width else 0)
                if hits:
                    queues[q] = queues.get(q, 0) + hits
            new.round_robin[topic] = (start + n_rr) % width
        plan[p] = part
    return plan, new


# --- pass 2: assignment on the executors --------------------------------------------------

def _rank_within(keys: np.ndarray) -> np.ndarray:
    """For each row, how many earlier rows share its key (a vectorised groupby cumcount)."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.r_[0, np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1]
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(keys)]))
    ranks = np.empty(len(keys), dtype=np.int64)
    ranks[order] = np.arange(len(keys)) - run_start
    return ranks


def _assigner(plan: dict):
    """The ``mapInArrow`` function of pass 2: vectorised over each Arrow batch, carrying the
    per-topic and per-queue counters from one batch to the next."""
    def assign(batches):
        import pyarrow.compute as pc
        from pyspark import TaskContext

        part = plan.get(TaskContext.get().partitionId())
        phys = part["phys"] if part else 0
        rr_used: Dict[str, int] = {}
        queue_used: Dict[Tuple[str, int], int] = {}
        for batch in batches:
            if batch.num_rows == 0:
                continue
            encoded = batch.column("topic").dictionary_encode()
            codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            names = encoded.dictionary.to_pylist()
            queue = pc.fill_null(batch.column("queue_id"), -1).to_numpy(zero_copy_only=False).astype(np.int64)
            base = np.zeros(len(codes), dtype=np.int64)
            for code, topic in enumerate(names):
                mine = codes == code
                rr_rows = mine & (queue < 0)
                k = int(rr_rows.sum())
                start = part["rr"][topic] + rr_used.get(topic, 0)
                queue[rr_rows] = (start + np.arange(k)) % part["width"][topic]
                rr_used[topic] = rr_used.get(topic, 0) + k
                for q in np.unique(queue[mine]):
                    key = (topic, int(q))
                    rows = mine & (queue == q)
                    base[rows] = part["queues"][topic][int(q)] + queue_used.get(key, 0)
                    queue_used[key] = queue_used.get(key, 0) + int(rows.sum())
            queue_offset = base + _rank_within(codes * 1_000_003 + queue)
            sizes = batch.column("store_size").to_numpy(zero_copy_only=False).astype(np.int64)
            offsets = phys + np.cumsum(sizes) - sizes
            phys += int(sizes.sum())
            yield (batch
                   .set_column(batch.schema.get_field_index("queue_id"), "queue_id",
                               pa.array(queue))
                   .append_column("queue_offset", pa.array(queue_offset))
                   .append_column("commitlog_offset", pa.array(offsets)))
    return assign


def _store_host_prefix(store_host: str) -> str:
    """The first 16 hex digits of an offset message id: the store host's IPv4 and port."""
    ip, port = store_host.rsplit(":", 1)
    return bytes(int(x) for x in ip.split(".")).hex().upper() + f"{int(port):08X}"


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


def _msg_ids(prefix: str, offsets: np.ndarray) -> pa.Array:
    """``prefix`` + 16 upper-case hex digits of each offset, as one string buffer (vectorised)."""
    n = len(offsets)
    chars = np.empty((n, 32), np.uint8)
    chars[:, :16] = np.frombuffer(prefix.encode("ascii"), np.uint8)
    chars[:, 16:] = np.frombuffer(binascii.hexlify(offsets.astype(">u8").tobytes()).upper(),
                                  np.uint8).reshape(n, 16)
    ends = np.arange(0, 32 * (n + 1), 32, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(ends), pa.py_buffer(chars))


def _assign_and_write(plan: dict, table, prefix: str, row_group_rows: int):
    """Pass 2's ``mapInArrow`` function: assign the offsets and message ids, and write the
    table's parquet files in the same Python worker (one trip of the rows through Python)."""
    assign = _assigner(plan)
    schema, uri, stats = table.arrow_schema, table.uri, list(table.stats_columns)
    options = table.storage_options

    def run(batches):
        from rocketfilter.delta.write import write_partition

        def finished():
            for batch in assign(batches):
                offsets = batch.column("commitlog_offset").to_numpy()
                yield batch.append_column("msg_id", _msg_ids(prefix, offsets))
        yield from write_partition(finished(), root_uri=uri, schema=schema, stats_columns=stats,
                                   max_rows_per_file=1_000_000, row_group_rows=row_group_rows,
                                   storage_options=options)
    return run


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
    counts = _counts(prepared)
    if not counts:
        return [] if as_list else _no_result(spark)
    missing = sum(int(r["n"]) for r in counts if r["topic"] is None)
    if missing:
        raise PutMessageError(f"{missing} message(s) have no topic (column 'topic' is null); "
                              "nothing was written")
    queue_nums = _check_topics(tables, _wanted((r["topic"], r["queue_id"]) for r in counts))
    _check_sizes(counts, tables.config.max_message_size)
    promote_configured(tables)

    def attempt():
        table = tables.table(S.COMMITLOG)
        version = table.version()
        if app_transaction is not None and _already_put(tables, app_transaction):
            return None   # a concurrent put of the same transaction landed first
        state = tables.commitlog_state()
        plan, new_state = _plan(counts, state, queue_nums)
        now = int(time.time() * 1000)
        table._check_writable()
        # The promoted columns the table has now (a retry after a promote sees the new ones).
        rows = (_finish(prepared, store_host, now, table.schema)
                .mapInArrow(_assign_and_write(plan, table, _store_host_prefix(store_host),
                                              tables.config.commit_log_row_group_rows), RESULT_DDL)
                .collect())
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

