"""The executor's half of a ``rocketmq`` read: one :class:`~.plan.ScanPartition` into Arrow batches.

1. The ConsumeQueue entries of the read pointing into the task's ``commitlog_offset`` range,
   from the row groups whose statistics (queue id, queue offset, commit-log offset) may hold
   them; a TAG subscription's tag-code check runs here, so rejected entries cost no CommitLog
   read.
2. The CommitLog row groups that hold the remaining entries: first the columns the rest of the
   decision needs (the exact tag re-check, or the selector's properties), then the output
   columns of the row groups where something was delivered.

Entries whose message is gone are data loss (before the CommitLog's min offset: retention) or
damage (anywhere else); nothing is ever dropped silently. pyarrow and numpy only: no Spark, no
Python loop over rows.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rocketfilter.delta.object_store import register
from rocketfilter.source.filters import SubscriptionFilter
from rocketfilter.source.offsets import DataLossError
from rocketfilter.source.plan import ScanPartition
from rocketfilter.source.schema import COLUMNS, TIMESTAMPS
from rocketfilter.delta.write import filesystem_path
from rocketfilter.store.errors import StoreDamagedError

log = logging.getLogger(__name__)

_CQ_COLUMNS = ["topic", "queue_id", "queue_offset", "commitlog_offset", "tags_code"]
GROUPS_PER_READ = 16   # CommitLog row groups decided together (about 64k rows)


@dataclass(frozen=True)
class ScanSpec:
    """What every task of one read shares (pickled with the reader)."""

    store_uri: str
    topic: str
    filter: SubscriptionFilter
    columns: Tuple[str, ...]          # output columns, in order
    schema: pa.Schema                 # the Arrow schema Spark expects
    fail_on_data_loss: bool = True
    storage_options: Optional[dict] = None   # an object store's, resolved on the driver


def _open(path: str) -> pq.ParquetFile:
    fs, local = filesystem_path(path)
    try:
        return pq.ParquetFile(fs.open_input_file(local))
    except FileNotFoundError:
        raise StoreDamagedError(
            f"data file {path} is gone: the store changed under this read (an expire or vacuum "
            "after the query was planned?); run the read again") from None


def _stat(meta, group: int, column: str) -> Tuple[Optional[int], Optional[int]]:
    g = meta.row_group(group)
    for i in range(g.num_columns):
        c = g.column(i)
        if c.path_in_schema == column:
            s = c.statistics
            if s is not None and s.has_min_max and isinstance(s.min, int):
                return s.min, s.max
    return None, None


def _may_hold(lo, hi, a: int, b: Optional[int]) -> bool:
    """Could ``[lo, hi]`` (None: unknown) meet ``[a, b)``?"""
    return (hi is None or hi >= a) and (lo is None or b is None or lo < b)


def consumequeue_entries(part: ScanPartition, topic: str) -> pa.Table:
    """The entries of ``part.queues`` whose ``commitlog_offset`` is in the task's range, in
    commit-log order."""
    tables = []
    first_q, last_q = min(part.queues), max(part.queues)
    for path in part.consumequeue_files:
        pf = _open(path)
        meta = pf.metadata
        wanted = []
        for g in range(meta.num_row_groups):
            qlo, qhi = _stat(meta, g, "queue_id")
            clo, chi = _stat(meta, g, "commitlog_offset")
            if _may_hold(qlo, qhi, first_q, last_q + 1) and _may_hold(clo, chi, part.commitlog_lo, part.commitlog_hi):
                wanted.append(g)
        if wanted:
            tables.append(pf.read_row_groups(wanted, columns=_CQ_COLUMNS))
    if not tables:
        return pa.table({c: [] for c in _CQ_COLUMNS})
    t = pa.concat_tables(tables)
    q = t.column("queue_id").to_numpy().astype(np.int64)
    qo = t.column("queue_offset").to_numpy().astype(np.int64)
    clo = t.column("commitlog_offset").to_numpy().astype(np.int64)
    keep = np.zeros(t.num_rows, bool)
    for queue, (start, end) in part.queues.items():
        keep |= (q == queue) & (qo >= start) & (qo < end)
    keep &= clo >= part.commitlog_lo
    if part.commitlog_hi is not None:
        keep &= clo < part.commitlog_hi
    keep &= np.asarray(pc.fill_null(pc.equal(t.column("topic"), topic), False), bool)
    t = t.filter(pa.array(keep))
    return t.take(pa.array(np.argsort(t.column("commitlog_offset").to_numpy(), kind="stable")))


def _lost(entries: pa.Table, spec: ScanSpec, why: str) -> None:
    """Entries whose messages retention deleted: fail or skip, as ``failOnDataLoss`` says."""
    queues = sorted(set(entries.column("queue_id").to_pylist()))
    offsets = entries.column("queue_offset").to_numpy()
    detail = (f"{entries.num_rows} entries of topic {spec.topic!r} (queues {queues}, queue offsets "
              f"{int(offsets.min())}..{int(offsets.max())}) of store {spec.store_uri}: {why}")
    if spec.fail_on_data_loss:
        raise DataLossError(f"{detail}. Some data may have been lost; set the option failOnDataLoss "
                            "to false to skip it")
    log.warning("skipping %s (failOnDataLoss is false)", detail)


def _groups(pf: pq.ParquetFile, groups: Sequence[int]) -> List[Tuple[int, Optional[int], Optional[int]]]:
    meta = pf.metadata
    ids = range(meta.num_row_groups) if list(groups) == [-1] else groups
    return [(g, *_stat(meta, g, "commitlog_offset")) for g in ids]


def _output(rows: pa.Table, spec: ScanSpec) -> pa.RecordBatch:
    arrays = []
    for name, field in zip(spec.columns, spec.schema):
        column = rows.column(COLUMNS[name][1])
        if name in TIMESTAMPS:
            column = pc.multiply_checked(column.cast(pa.int64()), 1000).cast(field.type)
        arrays.append(column.cast(field.type).combine_chunks())
    return pa.RecordBatch.from_arrays(arrays, schema=spec.schema)


def read_partition(part: ScanPartition, spec: ScanSpec) -> Iterator[pa.RecordBatch]:
    """The delivered messages of one task, as Arrow batches in the schema Spark expects."""
    register(spec.store_uri, spec.storage_options)
    entries = consumequeue_entries(part, spec.topic)
    if part.expired:
        if entries.num_rows:
            _lost(entries, spec, f"their messages lie before the CommitLog's min offset "
                                 f"{part.min_commitlog_offset} (expired by retention)")
        return
    if entries.num_rows == 0:
        return
    passed = entries.filter(pa.array(spec.filter.consume_queue(entries.column("tags_code"))))
    wanted = passed.column("commitlog_offset").to_numpy().astype(np.int64)
    found = np.zeros(len(wanted), bool)
    decide = ["commitlog_offset", *spec.filter.commit_log_columns]
    rest = [c for c in dict.fromkeys(COLUMNS[n][1] for n in spec.columns) if c not in decide]
    for path, groups in part.commitlog_groups:
        if not len(wanted):
            break
        pf = _open(path)
        holding = []
        for g, lo, hi in _groups(pf, groups):
            if lo is None or hi is None:
                holding.append(g)
            elif np.searchsorted(wanted, hi, "right") > np.searchsorted(wanted, lo, "left"):
                holding.append(g)
        for i in range(0, len(holding), GROUPS_PER_READ):
            chunk = holding[i:i + GROUPS_PER_READ]
            rows = pf.read_row_groups(chunk, columns=decide)
            offsets = rows.column("commitlog_offset").to_numpy().astype(np.int64)
            at = np.clip(np.searchsorted(wanted, offsets), 0, len(wanted) - 1)
            hit = wanted[at] == offsets
            found[at[hit]] = True
            deliver = hit & spec.filter.commit_log(rows)
            if not deliver.any():
                continue
            mask = pa.array(deliver)
            picked = rows.filter(mask)
            if rest:
                more = pf.read_row_groups(chunk, columns=rest).filter(mask)
                for name in rest:
                    picked = picked.append_column(name, more.column(name))
            yield _output(picked, spec)
    missing = passed.filter(pa.array(~found))
    if missing.num_rows:
        gone = pc.less(missing.column("commitlog_offset"), part.min_commitlog_offset)
        lost = missing.filter(gone)
        if lost.num_rows:
            _lost(lost, spec, "their messages were expired by retention")
        damaged = missing.filter(pc.invert(gone))
        if damaged.num_rows:
            raise StoreDamagedError(
                f"store {spec.store_uri}: {damaged.num_rows} ConsumeQueue entries of topic "
                f"{spec.topic!r} point at CommitLog rows that are not there (e.g. queue "
                f"{damaged.column('queue_id')[0]} offset {damaged.column('queue_offset')[0]}, "
                f"commit-log offset {damaged.column('commitlog_offset')[0]})")
