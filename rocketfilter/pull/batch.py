"""Successive pulls of a queue, in numpy and as one Spark job over all queues.

:func:`get_message_window` (in :mod:`rocketfilter.pull.window`) is one pull. Here a consumer's
pulls are replayed: each starts at the previous ``next_begin_offset``. The loop is over pulls,
each pull vectorised. :func:`pull_sequence` runs it per (topic, queue_id) with
``groupBy().applyInArrow``; :func:`get_message_from_dataframe` runs one pull on the driver.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rocketfilter.pull.chain import pull_chain
from rocketfilter.pull.result import GetMessageStatus
from rocketfilter.pull.limits import (
    CQ_STORE_UNIT_SIZE,
    DEFAULT_LIMITS,
    MAX_PULL_MSG_SIZE,
    PullLimits,
    is_the_batch_full,
)
from rocketfilter.pull.window import (
    PreparedQueue,
    WindowResult,
    get_message_window,
    no_matched_logic_queue,
)

__all__ = [
    "CQ_STORE_UNIT_SIZE", "DEFAULT_LIMITS", "MAX_PULL_MSG_SIZE", "PullLimits", "PreparedQueue",
    "WindowResult",
    "PullSequence", "get_message_window", "is_the_batch_full", "no_matched_logic_queue",
    "pull_sequence_arrays", "delivered_entries", "pull_sequence", "group_placement", "get_message_from_dataframe",
    "INPUT_COLUMNS",
    "ENTRY_SCHEMA", "PULL_SCHEMA", "STATUS_NAMES", "status_name",
]

# A status after which the same request would answer the same again.
_TERMINAL = frozenset({GetMessageStatus.OFFSET_OVERFLOW_ONE, GetMessageStatus.NO_MESSAGE_IN_QUEUE,
                       GetMessageStatus.NO_MATCHED_LOGIC_QUEUE})

INPUT_COLUMNS = ("topic", "queue_id", "queue_offset", "commitlog_offset", "size",
                 "cq_match", "cl_present", "cl_match")
ENTRY_SCHEMA = ("topic string, queue_id int, queue_offset long, commitlog_offset long, size int, "
                "pull_number int, next_begin_offset long, pull_status string")
PULL_SCHEMA = ("topic string, queue_id int, pull_number int, offset long, pull_status string, "
               "next_begin_offset long, message_count int, buffer_total_size long, "
               "filter_message_count int, suggest_pulling_from_slave boolean, scanned int, "
               "min_offset long, max_offset long")


@dataclass
class PullSequence:
    """Pulls replayed from a start offset. ``entry_*`` has one element per delivered entry."""

    pulls: List[WindowResult] = field(default_factory=list)
    pull_offsets: List[int] = field(default_factory=list)
    entry_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    entry_pull: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))

    @property
    def entry_next_begin_offset(self) -> np.ndarray:
        nxt = np.array([p.next_begin_offset for p in self.pulls], dtype=np.int64)
        return nxt[self.entry_pull] if len(nxt) else np.zeros(0, np.int64)

    @property
    def entry_status(self) -> np.ndarray:
        names = np.array([p.status.value for p in self.pulls], dtype=object)
        return names[self.entry_pull] if len(names) else np.zeros(0, object)

    @property
    def next_begin_offset(self) -> Optional[int]:
        """Where the consumer resumes after the last pull."""
        return self.pulls[-1].next_begin_offset if self.pulls else None


def pull_sequence_arrays(queue_offset: np.ndarray, commitlog_offset: np.ndarray, size: np.ndarray,
                         cq_match: np.ndarray, cl_present: np.ndarray, cl_match: np.ndarray, *,
                         start_offset: Optional[int] = None, end_offset: Optional[int] = None,
                         max_msg_nums: int, min_offset: Optional[int] = None,
                         max_offset: Optional[int] = None, max_offset_py: int,
                         limits: PullLimits = DEFAULT_LIMITS,
                         max_pulls: Optional[int] = None) -> PullSequence:
    """The pulls a consumer makes on one queue, from ``start_offset`` on.

    Arrays as for :func:`get_message_window`, covering the whole range pulled. ``min_offset``,
    ``max_offset`` and ``start_offset`` default to the data's first offset / last + 1 / min.
    After each pull, stop if its status is OFFSET_OVERFLOW_ONE, NO_MESSAGE_IN_QUEUE or
    NO_MATCHED_LOGIC_QUEUE, if ``next_begin_offset`` did not move forward, if it reached
    ``min(end_offset, max_offset)``, or after ``max_pulls`` pulls. The first pull is always made.
    Pulls are whole: the last one may deliver entries at or past ``end_offset``.
    """
    queue = PreparedQueue(queue_offset, commitlog_offset, size, cq_match, cl_present, cl_match,
                          max_msg_nums=max_msg_nums, max_offset_py=max_offset_py, limits=limits)
    bounds = _bounds(queue, start_offset, end_offset, min_offset, max_offset)
    return _sequence(queue, *bounds, max_pulls)


def _bounds(queue: PreparedQueue, start_offset, end_offset, min_offset, max_offset
            ) -> Tuple[int, int, int, int]:
    """(start, stop_at, min_offset, max_offset) with the defaults of pull_sequence_arrays."""
    qo = queue.queue_offset
    if min_offset is None:
        min_offset = int(qo[0]) if len(qo) else 0
    if max_offset is None:
        max_offset = int(qo[-1]) + 1 if len(qo) else 0
    offset = min_offset if start_offset is None else start_offset
    stop_at = max_offset if end_offset is None else min(end_offset, max_offset)
    return offset, stop_at, min_offset, max_offset


def _sequence(queue: PreparedQueue, offset: int, stop_at: int, min_offset: int, max_offset: int,
              max_pulls: Optional[int]) -> PullSequence:
    seq = PullSequence()
    found: List[np.ndarray] = []
    while max_pulls is None or len(seq.pulls) < max_pulls:
        res = queue.get_message(offset, min_offset=min_offset, max_offset=max_offset)
        seq.pulls.append(res)
        seq.pull_offsets.append(offset)
        found.append(res.found_index)
        nxt = res.next_begin_offset
        if res.status in _TERMINAL or nxt <= offset or nxt >= stop_at:
            break
        offset = nxt
    seq.entry_index = np.concatenate(found) if found else np.zeros(0, np.int64)
    seq.entry_pull = np.repeat(np.arange(len(found), dtype=np.int32),
                               [len(f) for f in found]).astype(np.int32)
    return seq


def delivered_entries(queue_offset: np.ndarray, commitlog_offset: np.ndarray, size: np.ndarray,
                      cq_match: np.ndarray, cl_present: np.ndarray, cl_match: np.ndarray, *,
                      start_offset: Optional[int] = None, end_offset: Optional[int] = None,
                      max_msg_nums: int, min_offset: Optional[int] = None,
                      max_offset: Optional[int] = None, max_offset_py: int,
                      limits: PullLimits = DEFAULT_LIMITS, max_pulls: Optional[int] = None
                      ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, List[str]]:
    """What :func:`pull_sequence_arrays` delivers, as arrays: ``(entry_index, entry_pull,
    next_begin_offset per pull, status per pull)``. Through :mod:`.chain` where that is exact
    (no numpy pass per pull), else the general loop."""
    queue = PreparedQueue(queue_offset, commitlog_offset, size, cq_match, cl_present, cl_match,
                          max_msg_nums=max_msg_nums, max_offset_py=max_offset_py, limits=limits)
    offset, stop_at, lo, hi = _bounds(queue, start_offset, end_offset, min_offset, max_offset)
    chain = pull_chain(queue, offset, min_offset=lo, max_offset=hi, stop_at=stop_at, max_pulls=max_pulls)
    if chain is not None:
        return chain.entry_index, chain.entry_pull, chain.next_begin_offsets, chain.statuses
    seq = _sequence(queue, offset, stop_at, lo, hi, max_pulls)
    return (seq.entry_index, seq.entry_pull,
            np.array([p.next_begin_offset for p in seq.pulls], dtype=np.int64),
            [p.status.value for p in seq.pulls])


QueueValue = Union[None, int, Mapping[Tuple[str, int], int]]


def _per_queue(value: QueueValue, key: Tuple[str, int]) -> Optional[int]:
    if value is None or isinstance(value, int):
        return value
    return value.get(key)


def _queue_function(*, output: str, max_msg_nums: int, max_offset_py: int, limits: PullLimits,
                    start_offsets: QueueValue, end_offsets: QueueValue, min_offsets: QueueValue,
                    max_offsets: QueueValue, max_pulls: Optional[int], by: Tuple[str, ...] = (),
                    carry: Tuple[str, ...] = (), topic: Optional[str] = None,
                    narrowed: Optional[Mapping[str, str]] = None, status_codes: bool = False) -> Callable:
    """The applyInArrow function for one group of ``GROUP_KEY``: one (*by, topic, queue_id)
    unless hashes collide, and then each of them in turn. The rows are :func:`_loop_input`'s:
    with ``topic`` they have no topic column and neither has the result. ``narrowed``: the
    columns sent widened to long, with the Arrow type (by name) they go back to. ``status_codes``:
    an entry's ``pull_status`` is its index in :data:`STATUS_NAMES`."""
    names = (*by, "queue_id") if topic is not None else (*by, "topic", "queue_id")
    constant_topic = topic
    back = {name: getattr(pa, t)() for name, t in (narrowed or {}).items()}

    def run(_: Tuple[Any, ...], table: pa.Table) -> pa.Table:
        outs = [one(key, part) for key, part in _split(table, names)]
        return outs[0] if len(outs) == 1 else pa.concat_tables(outs)

    def one(key: Tuple[Any, ...], table: pa.Table) -> pa.Table:
        queue_key = key[len(by):]
        if constant_topic is not None:
            queue_key = (pa.scalar(constant_topic, pa.string()), *queue_key)
        out = pull_table(queue_key, table)
        for i, name in enumerate(by):   # the extra keys lead, as in the schema
            out = out.add_column(i, name, pa.repeat(key[i], out.num_rows).cast(
                back.get(name, table.schema.field(name).type)))
        return out

    def status_column(entry_pull: np.ndarray, statuses: List[str]) -> pa.Array:
        if status_codes:
            return pa.array(np.array([_STATUS_CODE[v] for v in statuses], np.int32)[entry_pull]
                            if len(entry_pull) else np.zeros(0, np.int32))
        # Per pull, spread to the entries by index as a dictionary array.
        return pa.DictionaryArray.from_arrays(pa.array(entry_pull), pa.array(statuses, pa.string())).cast(pa.string())

    def pull_table(key: Tuple[Any, ...], table: pa.Table) -> pa.Table:
        topic, queue_id = key[0].as_py(), key[1].as_py()
        qkey = (topic, queue_id)
        qo = table.column("queue_offset").to_numpy()
        pos = table.column("commitlog_offset").to_numpy()
        meta = table.column(META).to_numpy()
        order = None
        if len(qo) > 1 and np.any(qo[1:] < qo[:-1]):   # groups arrive in no particular order
            order = np.argsort(qo, kind="stable")
            qo, pos, meta = qo[order], pos[order], meta[order]
        size = meta >> 3

        def leading(n: int) -> dict:   # given ``topic``, the rows had no topic column: no result has one
            return {} if constant_topic is not None else {"topic": pa.repeat(pa.scalar(topic, pa.string()), n)}

        arrays = (qo, pos, size, (meta & 1) != 0, (meta & 4) != 0, (meta & 2) != 0)
        bounds = dict(start_offset=_per_queue(start_offsets, qkey), end_offset=_per_queue(end_offsets, qkey),
                      max_msg_nums=max_msg_nums, min_offset=_per_queue(min_offsets, qkey),
                      max_offset=_per_queue(max_offsets, qkey), max_offset_py=max_offset_py,
                      limits=limits, max_pulls=max_pulls)
        if output == "pulls":
            seq = pull_sequence_arrays(*arrays, **bounds)
            p = seq.pulls
            return pa.table({
                **leading(len(p)),
                "queue_id": pa.repeat(pa.scalar(queue_id, pa.int32()), len(p)),
                "pull_number": pa.array(np.arange(len(p), dtype=np.int32)),
                "offset": pa.array(seq.pull_offsets, pa.int64()),
                "pull_status": pa.array([r.status.value for r in p], pa.string()),
                "next_begin_offset": pa.array([r.next_begin_offset for r in p], pa.int64()),
                "message_count": pa.array([r.message_count for r in p], pa.int32()),
                "buffer_total_size": pa.array([r.buffer_total_size for r in p], pa.int64()),
                "filter_message_count": pa.array([r.filter_message_count for r in p], pa.int32()),
                "suggest_pulling_from_slave": pa.array(
                    [r.suggest_pulling_from_slave for r in p], pa.bool_()),
                "scanned": pa.array([r.scanned for r in p], pa.int32()),
                "min_offset": pa.array([r.min_offset for r in p], pa.int64()),
                "max_offset": pa.array([r.max_offset for r in p], pa.int64()),
            })
        idx, entry_pull, next_begin, statuses = delivered_entries(*arrays, **bounds)
        n = len(idx)
        rows = idx if order is None else order[idx]
        carried = {name: table.column(name).take(rows) for name in carry}
        carried = {name: c.cast(back[name]) if name in back else c for name, c in carried.items()}
        # Per-pull values spread to the entries by index.
        return pa.table({
            **leading(n),
            "queue_id": pa.repeat(pa.scalar(queue_id, pa.int32()), n),
            "queue_offset": pa.array(qo[idx]),
            "commitlog_offset": pa.array(pos[idx]),
            "size": pa.array(size[idx].astype(np.int32)),
            "pull_number": pa.array(entry_pull),
            "next_begin_offset": pa.array(next_begin[entry_pull] if n else np.zeros(0, np.int64)),
            "pull_status": status_column(entry_pull, statuses),
            **carried,
        })

    return run


def pull_sequence(df, *, max_msg_nums: int, max_offset_py: int,
                  limits: PullLimits = DEFAULT_LIMITS, start_offsets: QueueValue = None,
                  end_offsets: QueueValue = None, min_offsets: QueueValue = None,
                  max_offsets: QueueValue = None, max_pulls: Optional[int] = None,
                  output: str = "entries", by: Sequence[str] = (), carry: Sequence[str] = (),
                  topic: Optional[str] = None, min_commitlog_offset: Optional[int] = None,
                  groups: Optional[Sequence[Tuple[int, ...]]] = None, status_codes: bool = False):
    """:func:`pull_sequence_arrays` for every (topic, queue_id) of ``df``, in one Spark job.

    ``df`` has the columns :data:`INPUT_COLUMNS` (null flags count as false) and must hold every
    CQ row of each queue in the pulled range. Offsets are an int for all queues or a mapping
    ``{(topic, queue_id): offset}``; a missing one defaults as in :func:`pull_sequence_arrays`
    (from the group's rows, so pass min/max explicitly when ``df`` is a slice of the queue).
    ``output="entries"`` gives one row per delivered entry (:data:`ENTRY_SCHEMA`);
    ``output="pulls"`` one row per pull (:data:`PULL_SCHEMA`).

    ``by`` names more columns to group on: each (*by, topic, queue_id) is pulled on its own (the
    same queue under different filters, say) and the result starts with them. ``carry`` names
    columns of ``df`` that delivered entries keep (``output="entries"`` only).

    Less to send to the Python workers (their Arrow transfer is most of the job's cost): with
    ``topic``, ``df`` holds that topic's rows only and needs no ``topic`` column; with
    ``min_commitlog_offset`` it needs no ``cl_present`` (an entry's record is present from that
    commit-log offset on); without a ``cl_match`` column every record matches (tag filters).

    ``groups``, with ``topic``: the ``(*by, queue_id)`` keys of ``df``'s rows, when the caller
    knows them. Each then gets a Spark partition of its own (:func:`group_placement`), so no sort
    groups the rows and no hash puts two queues in one task while a core idles. A key left out
    costs balance, never correctness.

    ``status_codes`` (``output="entries"``): ``pull_status`` is an int, the status's index in
    :data:`STATUS_NAMES` (:func:`status_name` gives the name back), for a caller that shuffles
    the entries before it needs the names: a fixed-width field instead of a string.
    """
    if output not in ("entries", "pulls"):
        raise ValueError(f"output must be 'entries' or 'pulls', not {output!r}")
    by, carry = tuple(by), tuple(carry)
    if carry and output != "entries":
        raise ValueError("carry needs output='entries': a pull row has no single entry to carry from")
    if "cl_present" not in df.columns and min_commitlog_offset is None:
        raise ValueError("df has no cl_present column: pass min_commitlog_offset")
    sent, narrowed = _loop_input(df, by, carry, topic, min_commitlog_offset)
    fn = _queue_function(output=output, max_msg_nums=max_msg_nums, max_offset_py=max_offset_py,
                         limits=limits, start_offsets=start_offsets, end_offsets=end_offsets,
                         min_offsets=min_offsets, max_offsets=max_offsets, max_pulls=max_pulls,
                         by=by, carry=carry, topic=topic, narrowed=narrowed,
                         status_codes=status_codes and output == "entries")
    fields = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    base = ENTRY_SCHEMA if output == "entries" else PULL_SCHEMA
    if status_codes and output == "entries":
        base = base.replace("pull_status string", "pull_status int")
    columns = [*by, *[c.split()[0] for c in base.split(", ")], *carry]
    schema = ", ".join([f"{name} {fields[name]}" for name in by]
                       + [base.replace("topic string, ", "", 1) if topic is not None else base]
                       + [f"{name} {fields[name]}" for name in carry])
    from pyspark.sql import functions as F

    keys = [*by, "queue_id"] if topic is not None else [*by, "topic", "queue_id"]
    placement = group_placement(keys, groups) if topic is not None and groups else None
    if placement is not None:
        partition_id, partitions = placement
        out = (df.repartitionById(partitions, partition_id).select(*sent)
               .mapInArrow(_whole_partition(fn), schema=schema))
    else:
        # One long key rather than (*by, topic, queue_id): Spark then sorts the rows for the
        # groups by radix on it instead of comparing rows whose keys tie across a whole queue.
        out = (df.select(*sent, F.xxhash64(*keys).alias(GROUP_KEY)).groupBy(GROUP_KEY)
               .applyInArrow(fn, schema=schema))
    if topic is None:
        return out
    return out.select(*[F.lit(topic).alias(c) if c == "topic" else c for c in columns])


# pull_status by code (``status_codes``): GetMessageStatus in its order.
STATUS_NAMES = tuple(status.value for status in GetMessageStatus)
_STATUS_CODE = {name: i for i, name in enumerate(STATUS_NAMES)}


def status_name(code):
    """The Column of status names for a Column of :data:`STATUS_NAMES` indexes."""
    from pyspark.sql import functions as F

    return F.element_at(F.array(*[F.lit(name) for name in STATUS_NAMES]), code.cast("int") + 1)


GROUP_KEY = "_pull_group"
# An entry's size and flags in one long: size << 3 | cl_present << 2 | cl_match << 1 | cq_match.
META = "_pull_meta"
_LONG_TYPES = {"int": "int32", "smallint": "int16", "tinyint": "int8"}


def _loop_input(df, by: Tuple[str, ...], carry: Tuple[str, ...], topic: Optional[str],
                min_commitlog_offset: Optional[int]):
    """The Columns sent to the loop's Python workers, and the ones widened to long (name ->
    pyarrow type name to narrow back to).

    Spark's Arrow writer measures the batch after every row through each column's vector; with
    longs (and strings) alone those calls stay monomorphic and cheap. Measured on 5M entries:
    six int, long and boolean columns cost 1.6 s over the shuffle read, four longs 0.5 s. So
    the size and the flags travel packed in :data:`META`, and int keys as longs."""
    from pyspark.sql import functions as F

    def flag(name: str, absent) -> "F.Column":
        return F.coalesce(F.col(name), F.lit(False)).cast("long") if name in df.columns else absent

    present = flag("cl_present", (F.col("commitlog_offset") >= F.lit(min_commitlog_offset)).cast("long"))
    meta = (F.col("size").cast("long") * 8 + present * 4 + flag("cl_match", F.lit(1).cast("long")) * 2
            + F.coalesce(F.col("cq_match"), F.lit(False)).cast("long"))
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    keys = (*by, "queue_id") if topic is not None else (*by, "topic", "queue_id")
    narrowed = {name: _LONG_TYPES[types[name]] for name in (*keys, *carry) if types[name] in _LONG_TYPES}
    cols = [F.col(name).cast("long").alias(name) if name in narrowed else F.col(name) for name in keys]
    cols += [F.col("queue_offset").cast("long").alias("queue_offset"),
             F.col("commitlog_offset").cast("long").alias("commitlog_offset"), meta.alias(META)]
    cols += [F.col(name).cast("long").alias(name) if name in narrowed else F.col(name) for name in carry]
    return cols, narrowed


# A bound on a loop input row's bytes (positions, sizes, flags and short keys), for the jobs
# that run the loop inside ``arrow_batches.rows_only``.
LOOP_ROW_BYTES = 4096


# Partitions per known group at most, when its keys are sparse integers (queue ids with gaps).
_SPARSE_PARTITIONS = 4
# More groups than this are hashed: a task each would cost more in task and Python-worker start-up
# than the balance gains when queues are many and small.
MAX_PLACED_GROUPS = 64


def group_placement(keys: Sequence[str], groups: Sequence[Tuple[int, ...]]):
    """``(partition id Column, partition count)`` that gives each of ``groups`` (tuples of
    non-negative ints, one per column of ``keys``) its own partition: the keys' mixed-radix
    number over their ranges. None when they are not such ints, too sparse for that, or more
    than :data:`MAX_PLACED_GROUPS`."""
    groups = list(set(groups))
    if len(groups) > MAX_PLACED_GROUPS or not all(len(g) == len(keys) and all(type(v) is int and v >= 0 for v in g) for g in groups):
        return None
    from pyspark.sql import functions as F

    lows = [min(g[i] for g in groups) for i in range(len(keys))]
    spans = [max(g[i] for g in groups) - lows[i] + 1 for i in range(len(keys))]
    partitions = math.prod(spans)
    if partitions > _SPARSE_PARTITIONS * len(groups):
        return None
    pid, stride = F.lit(0), 1
    for name, low, span in reversed(list(zip(keys, lows, spans))):   # the last key varies fastest
        pid = pid + (F.col(name).cast("int") - F.lit(low)) * F.lit(stride)
        stride *= span
    return pid, partitions


def _whole_partition(fn: Callable) -> Callable:
    """``fn`` (an ``applyInArrow`` function) over a whole partition, for ``mapInArrow``: the rows
    of a partition from :func:`group_placement` are all one queue's (``fn`` splits the rest)."""
    def run(batches):
        batches = list(batches)
        if not any(b.num_rows for b in batches):
            return
        yield from fn((), pa.Table.from_batches(batches)).to_batches()

    return run


def _split(table: pa.Table, names: Tuple[str, ...]):
    """(key scalars, rows) per distinct value of ``names`` in ``table``: usually one."""
    cols = [table.column(n) for n in names]
    if table.num_rows and all(pc.count_distinct(c).as_py() == 1 and c.null_count == 0 for c in cols):
        yield tuple(c[0] for c in cols), table
        return
    for row in table.select(list(names)).group_by(list(names)).aggregate([]).to_pylist():
        mask = None
        for n in names:
            m = pc.is_null(table.column(n)) if row[n] is None else pc.equal(table.column(n), row[n])
            mask = m if mask is None else pc.and_(mask, m)
        part = table.filter(mask)
        yield tuple(part.column(n)[0] for n in names), part


def get_message_from_dataframe(df, *, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                               min_offset: int, max_offset: int, max_offset_py: int,
                               limits: PullLimits = DEFAULT_LIMITS
                               ) -> Tuple[WindowResult, Optional[pa.Table]]:
    """One pull on the driver: collect only the rows the loop can reach, then the numpy loop.

    Returns the result and the collected window (``found_index`` indexes its rows), or ``None``
    when the status was decided without reading the queue.
    """
    if max_offset == 0 or offset < min_offset or offset >= max_offset:
        res = get_message_window(np.zeros(0, np.int64), np.zeros(0, np.int64),
                                 np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, bool),
                                 np.zeros(0, bool), offset=offset, max_msg_nums=max_msg_nums,
                                 min_offset=min_offset, max_offset=max_offset,
                                 max_offset_py=max_offset_py, limits=limits)
        return res, None
    from pyspark.sql import functions as F

    end = min(offset + limits.window_entries(max_msg_nums),
              limits.roll_next_consume_queue_file(offset), max_offset)
    rows = (df.where((F.col("topic") == topic) & (F.col("queue_id") == queue_id)
                     & (F.col("queue_offset") >= offset) & (F.col("queue_offset") < end))
            .select(*INPUT_COLUMNS).toArrow().sort_by("queue_offset"))

    def col(name: str, dtype) -> np.ndarray:
        c = rows.column(name)
        if dtype is bool:
            c = pc.fill_null(c, False)
        return c.to_numpy(zero_copy_only=False).astype(dtype, copy=False)

    res = get_message_window(
        col("queue_offset", np.int64), col("commitlog_offset", np.int64), col("size", np.int64),
        col("cq_match", bool), col("cl_present", bool), col("cl_match", bool), offset=offset,
        max_msg_nums=max_msg_nums, min_offset=min_offset, max_offset=max_offset,
        max_offset_py=max_offset_py, limits=limits)
    return res, rows
