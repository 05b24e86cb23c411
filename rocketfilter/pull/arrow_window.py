"""The reads of one pull from the Delta files with pyarrow: :func:`read_window` of
:mod:`rocketfilter.pull.scan` without Spark, for work of a few hundred rows.

A single pull or a trace reads one queue window (at most ~800 ConsumeQueue units) and the
CommitLog rows those units point to. Spark answers that in well under a second once it runs,
but starting it costs a JVM; here the same reads are parquet reads on the driver, from the
files the Delta log's statistics allow (then pyarrow's row-group statistics), and the filter's
two checks are numpy and the Arrow selector backend (:mod:`rocketfilter.selector.arrow`):

* ``isMatchedByConsumeQueue``: the tag code against the subscription's codes, or for SQL92 the
  bloom bitmap of the unit, exactly as :meth:`ExpressionMessageFilter.consume_queue_column`;
* ``isMatchedByCommitLog``: the compiled selector on the properties map (which keeps every
  property, promoted or not), the retry filter per original topic;
* an exact subscription bit (:mod:`rocketfilter.pull.bits`) replaces the decision it holds.

:class:`ArrowWindowScan` answers as :class:`rocketfilter.pull.scan.WindowScan` does, so
:func:`rocketfilter.pull.get_message.get_message` and the message trace run either; the answers
are the same (tests/pull/test_arrow_window.py runs both on the same cases).

>>> scan = read_window(store, "TopicTest", 1, 0, 400, message_filter)   # doctest: +SKIP
>>> scan.cq_match[:4]                                                     # doctest: +SKIP
array([ True, False,  True,  True])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rocketfilter.pull import bits
from rocketfilter.pull.filter import PROPERTY_RETRY_TOPIC, RetryFilterError
from rocketfilter.store import schema as S
from rocketfilter.delta.errors import UnreadableDataFile
from rocketfilter.delta.write import filesystem_path
from rocketfilter.tags import is_tag_type

ENGINES = ("auto", "arrow", "spark")
_CQ_COLUMNS = ["queue_offset", "commitlog_offset", "size", "tags_code", "store_timestamp", "filter_bitmap"]


def _engine(store) -> str:
    engine = getattr(store, "pull_engine", None) or "auto"
    if engine not in ENGINES:
        raise ValueError(f"pull_engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return engine


def arrow_reads(store) -> bool:
    """Whether reads that may span much of a queue or log (a trace's slice, a key lookup) use
    pyarrow: ``pull_engine`` "arrow", or "auto" on a store without a Spark session ("spark" then
    fails on the missing session)."""
    engine = _engine(store)
    return engine == "arrow" or (engine == "auto" and getattr(store, "spark", None) is None)


def arrow_pulls(store) -> bool:
    """Whether one ``get_message`` reads with pyarrow: unless ``pull_engine`` is "spark". Its
    window is bounded (at most one pull's ConsumeQueue units and one batch's CommitLog rows),
    which pyarrow reads in milliseconds from the files the Delta statistics leave, where even
    an empty Spark job costs several times that (bench/pull_latency.py measures both)."""
    return _engine(store) != "spark"


def read_rows(table, where: Sequence[tuple], columns: List[str], extra: Optional[tuple] = None,
              files: Optional[list] = None) -> pa.Table:
    """The rows of a store table matching ``where`` (``(column, op, value)``) and ``extra`` (one
    more pyarrow filter, such as ``("commitlog_offset", "in", [...])``), as ``columns``: the
    files the Delta statistics leave, then pyarrow's row-group statistics. Columns a file lacks
    (added later by a schema change) are null. ``files``: only these of the table's files."""
    files = table.files(where) if files is None else files
    schema = table.arrow_schema
    schema = pa.schema([schema.field(c) for c in columns])
    if not files:
        return schema.empty_table()
    located = [filesystem_path(f.path) for f in files]
    filters = [(c, "==" if op == "=" else op, v) for c, op, v in where] + ([extra] if extra else [])

    def read(paths):
        return pq.read_table(paths, filesystem=located[0][0], columns=columns,
                             filters=filters or None, schema=table.arrow_schema)

    try:
        return read([p for _, p in located]).select(columns).cast(schema)
    except (FileNotFoundError, PermissionError):
        raise   # they name the path (MessageStore.reading names a lost file as damage)
    except (OSError, pa.ArrowException) as exc:
        if "AWS Error" in str(exc):
            raise   # the object store failed, not the file's bytes
        for (_, path), f in zip(located, files):   # pyarrow does not say which file: find it
            try:
                read([path])
            except (OSError, pa.ArrowException) as cause:
                raise UnreadableDataFile(f.path, cause) from None
        raise


def _flags(array) -> np.ndarray:
    """A boolean column as a numpy mask, null as False."""
    return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), bool)


def _tag_codes_match(sub, tags_code) -> np.ndarray:
    """``tag_code_predicate``: no code, or its low 32 bits (Java's ``Long.intValue``) in the set."""
    n = len(tags_code)
    if sub.is_sub_all:
        return np.ones(n, bool)
    valid = np.asarray(tags_code.is_valid().to_numpy(zero_copy_only=False), bool)
    code = np.asarray(pc.fill_null(tags_code, 0).to_numpy(zero_copy_only=False), np.int64)
    low = ((code & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000
    return ~valid | np.isin(low, np.array(sorted(sub.code_set), np.int64))


def _bitmap_rows(bitmaps: pa.Array, width: int) -> np.ndarray:
    """Binary values all ``width`` bytes long, no nulls, as an (n, width) uint8 matrix."""
    bitmaps = bitmaps.combine_chunks() if isinstance(bitmaps, pa.ChunkedArray) else bitmaps
    if len(bitmaps) == 0:
        return np.zeros((0, width), np.uint8)
    kind = np.int64 if pa.types.is_large_binary(bitmaps.type) else np.int32
    offsets = np.frombuffer(bitmaps.buffers()[1], kind)[bitmaps.offset:bitmaps.offset + len(bitmaps) + 1]
    data = np.frombuffer(bitmaps.buffers()[2], np.uint8)
    return data[offsets[0]:offsets[-1]].reshape(len(bitmaps), width)


def consume_queue_matches(message_filter, units: pa.Table) -> np.ndarray:
    """``isMatchedByConsumeQueue`` for every unit (``tags_code``, ``store_timestamp``,
    ``filter_bitmap``), as the filter's ``consume_queue_column`` decides it."""
    f, n = message_filter, units.num_rows
    if f is None or f._passes_everything():
        return np.ones(n, bool)
    sub = f.subscription_data
    if is_tag_type(sub.expression_type):
        return _tag_codes_match(sub, units.column("tags_code"))
    if not f._sql_data_usable(with_bloom=True) or not f.bloom_data_valid:
        return np.ones(n, bool)
    bits = f.consumer_filter_data.bloom_filter_data
    positions = np.array(list(bits.bit_pos), np.int64)
    if np.any((positions < 0) | (positions >= bits.bit_num)):
        return np.ones(n, bool)   # BitsArray throws for every checked unit: a match
    stored, bitmap = units.column("store_timestamp"), units.column("filter_bitmap")
    born = f.consumer_filter_data.born_time
    checked = (_flags(pc.greater(stored, born)) & _flags(pc.is_valid(bitmap))
               & _flags(pc.equal(pc.multiply(pc.binary_length(bitmap), 8), bits.bit_num)))
    out = np.ones(n, bool)
    if checked.any() and bits.bit_num % 8 == 0:
        rows = _bitmap_rows(bitmap.filter(pa.array(checked)), bits.bit_num // 8)
        hit = np.all(rows[:, positions // 8] & (1 << (positions % 8)).astype(np.uint8) != 0, axis=1)
        out[checked] = hit
    return out


def commit_log_matches(message_filter, rows: pa.Table) -> np.ndarray:
    """``isMatchedByCommitLog`` for CommitLog ``rows`` (``properties``), as the filter's
    ``commit_log_column`` decides it; RetryFilterError where a retry message has no
    ``RETRY_TOPIC`` (the Spark plan's raise_error)."""
    f, n = message_filter, rows.num_rows
    sub = None if f is None else f.subscription_data
    if f is None or f._passes_everything() or is_tag_type(sub.expression_type):
        return np.ones(n, bool)
    properties = rows.column("properties")
    group = f._retry_group(None) if hasattr(f, "_retry_group") else None
    if group is None:
        if not f._sql_data_usable(with_bloom=False):
            return np.ones(n, bool)
        return _selector(f.consumer_filter_data).matches(properties)
    real_topic = pc.map_lookup(properties.combine_chunks(), pa.scalar(PROPERTY_RETRY_TOPIC, pa.string()), "last")
    if n and real_topic.null_count:
        raise RetryFilterError(f._missing_retry_topic(group))
    out = np.ones(n, bool)
    datas = [] if f.filter_manager is None else f.filter_manager.get_by_group(group)
    for data in sorted(datas, key=lambda d: d.topic):
        if data.expression is None or data.compiled is None:
            continue
        mine = _flags(pc.equal(real_topic, data.topic))
        if mine.any():
            out[mine] = _selector(data).matches(properties.filter(pa.array(mine)))
    return out


def _selector(data):
    """The filter data's selector for Arrow, compiled once per filter data."""
    compiled = data.__dict__.get("_arrow_selector")
    if compiled is None:
        compiled = data.__dict__["_arrow_selector"] = data.compiled.to_arrow("properties")
    return compiled


@dataclass
class ArrowWindowScan:
    """A ConsumeQueue window in queue order, read with pyarrow; the interface of
    :class:`rocketfilter.pull.scan.WindowScan`."""

    queue_offsets: np.ndarray
    positions: np.ndarray
    sizes: np.ndarray
    cq_match: np.ndarray
    cl_bits: Optional[np.ndarray] = None   # a SQL92 slot's exact decision, per unit
    jobs: int = 0                          # Spark jobs: none
    _rows: dict = field(default_factory=dict)

    def commit_log_matches(self, store, reach: np.ndarray, message_filter) -> np.ndarray:
        """``isMatchedByCommitLog`` aligned with the window, for the units in ``reach``."""
        from rocketfilter.pull.scan import is_sql_filter

        if not is_sql_filter(message_filter):
            return np.ones(len(self.positions), bool)
        if self.cl_bits is not None:
            return self.cl_bits & reach
        out = np.zeros(len(self.positions), bool)
        wanted = self.positions[reach]
        if len(wanted):
            rows = _commitlog_at(store, wanted, ["commitlog_offset", "properties"])
            matched = commit_log_matches(message_filter, rows)
            offsets = rows.column("commitlog_offset").to_numpy()
            order = np.argsort(offsets, kind="stable")
            at = np.clip(np.searchsorted(offsets[order], self.positions), 0, max(len(offsets) - 1, 0))
            known = (offsets[order][at] == self.positions) if len(offsets) else np.zeros(len(out), bool)
            out[known] = matched[order][at[known]]
        return out & reach

    def messages(self, store, offsets: np.ndarray) -> pa.Table:
        """The CommitLog rows at ``offsets`` (at most one batch), in that order."""
        schema = S.arrow_schema(S.COMMITLOG_SCHEMA)
        if len(offsets) == 0:
            return schema.empty_table()
        have = _commitlog_at(store, offsets, schema.names).cast(schema)
        from rocketfilter.pull.scan import in_offset_order

        return in_offset_order(have, offsets, store.commitlog.uri)


def _commitlog_at(store, offsets: np.ndarray, columns: List[str]) -> pa.Table:
    values = sorted({int(v) for v in offsets})
    where = [("commitlog_offset", ">=", values[0]), ("commitlog_offset", "<=", values[-1])]
    return read_rows(store.commitlog, where, columns, ("commitlog_offset", "in", values))


def read_window(store, topic: str, queue_id: int, start: int, end: int, message_filter) -> ArrowWindowScan:
    """The window ``[start, end)`` of one queue, in queue order, with ``isMatchedByConsumeQueue``
    (and a SQL92 slot's decision when the store keeps one for the range)."""
    from rocketfilter.pull.scan import is_sql_filter

    where = [("topic", "=", topic), ("queue_id", "=", queue_id),
             ("queue_offset", ">=", start), ("queue_offset", "<", end)]
    slot = bits.usable(store, topic, bits.filter_key(message_filter), {queue_id: start})
    columns = _CQ_COLUMNS + ([S.SUB_BITS] if slot is not None else [])
    units = read_rows(store.consumequeue, where, columns).sort_by("queue_offset")
    cq_match = consume_queue_matches(message_filter, units)
    cl_bits = None
    if slot is not None:
        decided = _flags(pc.not_equal(pc.bit_wise_and(units.column(S.SUB_BITS), pa.scalar(1 << slot, pa.int64())), 0))
        if is_sql_filter(message_filter):
            cl_bits = decided
        else:
            cq_match = decided
    return ArrowWindowScan(units.column("queue_offset").to_numpy(), units.column("commitlog_offset").to_numpy(),
                           units.column("size").to_numpy(), cq_match, cl_bits)
