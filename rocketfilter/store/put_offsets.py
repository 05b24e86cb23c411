"""The offsets of a put (``put_messages``' two passes over its input, both on the executors).

1. :func:`count_rows`: rows and record bytes per (Spark partition, topic, explicit queue), and
   the largest body and properties string, so :func:`check_sizes` refuses what the broker would;
2. :func:`plan_offsets` on the driver: each partition's first round-robin index, queue offsets
   and commit-log offset; :func:`assign_and_write` on the executors: the offsets and message ids
   with numpy in ``mapInArrow``, and the parquet files written by the same Python worker.
"""
from __future__ import annotations

import binascii
from typing import Dict, List, Tuple

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame

from rocketfilter.arrow_batches import rows_only
from rocketfilter.store.put_input import PutMessageError, body_too_large, properties_too_long
from rocketfilter.store.state import CommitLogState


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


# Pass 1's rows: a topic name and four numbers (a generous bound: a topic has 127 characters).
_COUNT_ROW_BYTES = 1024


def count_rows(df: DataFrame) -> List[tuple]:
    # Only these columns travel to Python (profiled: shipping whole rows made this pass
    # as costly as the write).
    counted = (df.select("topic", "queue_id", "store_size", "_body_size", "_wire")
               .mapInArrow(_count_partition, "p int, topic string, queue_id long, n long, "
                                             "bytes long, body long, wire long"))
    with rows_only(df.sparkSession, _COUNT_ROW_BYTES):
        return counted.collect()


def widest_row(counts: List[tuple]) -> int:
    """A bound on pass 2's row bytes from pass 1's counts: the largest body and properties
    string, the properties again for the promoted columns and the table's fixed columns."""
    return max((int(r["body"] or 0) + 3 * int(r["wire"] or 0) + 4 * len(r["topic"] or "") + 4096
                for r in counts), default=4096)


def check_sizes(counts: List[tuple], max_message_size: int) -> None:
    """PutMessageError for a DataFrame holding a message the broker would refuse for its size
    (pass 1 saw each topic's largest body and properties string)."""
    for row in sorted(counts, key=lambda r: (r["topic"] or "", r["queue_id"] or -1)):
        for why in (body_too_large(row["body"], max_message_size),
                    properties_too_long(row["wire"])):
            if why:
                raise PutMessageError(f"a message of topic {row['topic']!r}: {why}; nothing was "
                                      "written")


def plan_offsets(counts: List[tuple], state: CommitLogState, queue_nums: Dict[str, int]) -> Tuple[dict, CommitLogState]:
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


def store_host_prefix(store_host: str) -> str:
    """The first 16 hex digits of an offset message id: the store host's IPv4 and port."""
    ip, port = store_host.rsplit(":", 1)
    return bytes(int(x) for x in ip.split(".")).hex().upper() + f"{int(port):08X}"


def _msg_ids(prefix: str, offsets: np.ndarray) -> pa.Array:
    """``prefix`` + 16 upper-case hex digits of each offset, as one string buffer (vectorised)."""
    n = len(offsets)
    chars = np.empty((n, 32), np.uint8)
    chars[:, :16] = np.frombuffer(prefix.encode("ascii"), np.uint8)
    chars[:, 16:] = np.frombuffer(binascii.hexlify(offsets.astype(">u8").tobytes()).upper(),
                                  np.uint8).reshape(n, 16)
    ends = np.arange(0, 32 * (n + 1), 32, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(ends), pa.py_buffer(chars))


def assign_and_write(plan: dict, table, prefix: str, row_group_rows: int):
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
