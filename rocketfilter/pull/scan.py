"""The Spark reads of one pull, in as few jobs as the filter allows (SEMANTICS §12).

Spark's cost for a small query is mostly fixed (planning, a job, a result transfer), so a pull
that needs three reads pays it three times. Usually it needs one: the ConsumeQueue window, with
the tag-code check pushed down, united with the CommitLog rows of the same queue window, read
within the ``commitlog_offset`` range that the ConsumeQueue footers give for the window, with the
compiled selector and the bodies of the rows that could be delivered. The driver joins the two
on ``commitlog_offset``.

The CommitLog is read after the ConsumeQueue instead when:

* a SQL92 filter has a usable bitmap: the bitmap decides which CommitLog rows are read (§7);
* the footers give no range (no statistics).

Bodies stay out of the first read when the window's largest entry times its length could exceed
``BODY_BUDGET_BYTES``; a found entry without a body (a tag-hash collision, say) is read by offset.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional
import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F

from rocketfilter.pull.bits import bit, slot_for_filter
from rocketfilter.spark_mode import restore_conf, set_conf
from rocketfilter.delta import footers
from rocketfilter.store import schema as S

BODY_BUDGET_BYTES = 16 << 20
# Interpreted evaluation for a pull's few hundred rows: the literals (offsets) change with every
# pull, so generated code would be compiled anew each time, which costs more than it saves. One
# task per file: a file split in two makes two tasks parse the same footer for one row group.
SMALL_QUERY_CONF = {"spark.sql.codegen.wholeStage": "false",
                    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                    "spark.sql.files.minPartitionNum": "1"}
_MESSAGE_SQL = "struct(" + ", ".join(f"`{n}`" for n in S.COMMITLOG_SCHEMA.fieldNames()) + ")"


@contextmanager
def small_query_conf(spark):
    """Run the enclosed queries with :data:`SMALL_QUERY_CONF`, restoring the session's values.

    Settings the session refuses (a Spark Connect server may allow only some, as Databricks
    serverless does) are skipped: they make a pull faster, never change its answer."""
    previous = set_conf(spark, SMALL_QUERY_CONF)
    try:
        yield
    finally:
        restore_conf(spark, previous)


def is_sql_filter(message_filter) -> bool:
    """Whether ``message_filter`` holds a non-TAG (SQL92) subscription."""
    from rocketfilter.tags import is_tag_type

    sub = getattr(message_filter, "subscription_data", None)
    return sub is not None and not is_tag_type(sub.expression_type)


@dataclass
class WindowScan:
    """A ConsumeQueue window in queue order and what is known so far of its CommitLog rows."""

    queue_offsets: np.ndarray
    positions: np.ndarray
    sizes: np.ndarray
    cq_match: np.ndarray
    jobs: int = 1
    _cl_positions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    _cl_match: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    _bodies: list = field(default_factory=list)  # pa.Tables of CommitLog rows

    def _learn(self, table: pa.Table) -> None:
        """Keep the flags and bodies of CommitLog rows (``commitlog_offset``, ``ok``, ``msg``)."""
        self._cl_positions = np.concatenate([self._cl_positions, table["commitlog_offset"].to_numpy()])
        self._cl_match = np.concatenate([self._cl_match, table["ok"].to_numpy(zero_copy_only=False)])
        if "msg" in table.column_names:
            msg = table["msg"].combine_chunks()
            rows = pa.Table.from_struct_array(msg.filter(msg.is_valid()))
            if rows.num_rows:
                self._bodies.append(rows)

    def _known(self, positions: np.ndarray) -> tuple:
        """(known, match) for ``positions``: whether a CommitLog flag was read, and its value."""
        order = np.argsort(self._cl_positions, kind="stable")
        sorted_pos = self._cl_positions[order]
        at = np.clip(np.searchsorted(sorted_pos, positions), 0, max(len(sorted_pos) - 1, 0))
        known = (sorted_pos[at] == positions) if len(sorted_pos) else np.zeros(len(positions), bool)
        match = np.zeros(len(positions), bool)
        match[known] = self._cl_match[order][at[known]]
        return known, match

    def commit_log_matches(self, store, reach: np.ndarray, message_filter) -> np.ndarray:
        """``isMatchedByCommitLog`` aligned with the window, for the entries in ``reach``;
        reads the CommitLog rows whose flag the first read did not bring."""
        if not is_sql_filter(message_filter):
            return np.ones(len(self.positions), bool)
        known, _ = self._known(self.positions)
        missing = self.positions[reach & ~known]
        if len(missing):
            bodies = len(missing) * int(self.sizes.max()) <= BODY_BUDGET_BYTES
            self._learn(_commitlog_read(store, _offsets_where(missing),
                                        _columns(message_filter, "cl", bodies, store)).toArrow())
            self.jobs += 1
        return self._known(self.positions)[1] & reach

    def messages(self, store, offsets: np.ndarray) -> pa.Table:
        """The CommitLog rows at ``offsets`` (at most one batch), in that order."""
        if len(offsets) == 0:
            return S.arrow_schema(S.COMMITLOG_SCHEMA).empty_table()
        have = pa.concat_tables(self._bodies) if self._bodies else None
        got = set() if have is None else set(have["commitlog_offset"].to_pylist())
        missing = np.array([o for o in offsets.tolist() if o not in got], np.int64)
        if len(missing):
            self.jobs += 1
            fetched = _commitlog_read(store, _offsets_where(missing), None).toArrow()
            have = fetched if have is None else pa.concat_tables([have, fetched.cast(have.schema)])
        return in_offset_order(have, offsets, store.commitlog.uri)


def in_offset_order(have: pa.Table, offsets: np.ndarray, uri: str) -> pa.Table:
    """The CommitLog rows of ``have`` in the order of ``offsets`` (commit-log offsets);
    LookupError naming the table ``uri`` when any is missing."""
    index = {o: i for i, o in enumerate(have["commitlog_offset"].to_pylist())}
    lost = [o for o in offsets.tolist() if o not in index]
    if lost:
        raise LookupError(f"{uri}: no CommitLog rows at commit-log offsets {lost[:5]} "
                          f"({len(lost)} of {len(offsets)}) that the ConsumeQueue points to; the "
                          "CommitLog changed during the pull (expire, vacuum?) or is damaged")
    return have.take(pa.array([index[o] for o in offsets.tolist()], pa.int64()))


def _offsets_where(offsets: np.ndarray) -> tuple:
    """A CommitLog read of exactly ``offsets``: the range prunes files and row groups; the
    ``IN`` is one SQL expression of integers the store produced, never user text."""
    where = [("commitlog_offset", ">=", int(offsets.min())), ("commitlog_offset", "<=", int(offsets.max()))]
    return where, F.expr(f"commitlog_offset IN ({','.join(str(int(v)) for v in offsets)})")


def _commitlog_read(store, where_and_extra: tuple, columns: Optional[list]):
    """CommitLog rows selected as ``columns`` (see :func:`_columns`), or whole (the message's
    columns, without promoted ones) when None."""
    where, extra = where_and_extra
    df = store.commitlog.read(store.spark, where=where)
    df = df if extra is None else df.where(extra)
    return df.select(*(columns if columns is not None else S.COMMITLOG_SCHEMA.fieldNames()))


_NO_FILTER_COLUMNS: dict = {}


def _columns(message_filter, side: str, bodies: bool = False, store=None) -> list:
    """The select list of a read: ``kind``, ``queue_offset``, ``commitlog_offset``, ``size``,
    ``ok`` (the consume-queue check on the ``"cq"`` side, the selector on the ``"cl"`` side)
    and with ``bodies`` ``msg``, the whole row where it could be delivered. Built once per
    filter and Spark context (or Spark Connect, see :func:`column_cache_key`): every Column costs
    JVM calls, which a pull would pay each time. The selector reads the ``store``'s promoted
    columns where it has them."""
    from rocketfilter.spark_mode import column_cache_key

    cache = _NO_FILTER_COLUMNS if message_filter is None else message_filter.__dict__.setdefault("_scan_columns", {})
    promoted = store.promoted_properties() if store is not None and side == "cl" else {}
    key = (column_cache_key(), side, bodies, tuple(sorted(promoted.items())))
    if key not in cache:
        if any(k[0] != key[0] for k in cache):
            cache.clear()
        sql = is_sql_filter(message_filter)
        if side == "cq":
            ok = F.lit(True) if message_filter is None else message_filter.consume_queue_column()
            cols = [F.lit(0).alias("kind"), F.col("queue_offset"), F.col("commitlog_offset"), F.col("size")]
        else:
            ok = message_filter.commit_log_column(promoted=promoted) if sql else F.lit(True)
            cols = [F.lit(1).alias("kind"), F.col("queue_offset"), F.col("commitlog_offset"),
                    F.col("store_size").alias("size")]
        cols.append(ok.alias("ok"))
        if bodies:
            # TAG: only the bodies the client keeps; a hash collision's body is read if found.
            want = ok if sql or message_filter is None else ok & message_filter.exact_tag_column()
            cols.append(F.when(want, F.expr(_MESSAGE_SQL)).alias("msg"))
        cache[key] = cols
    return cache[key]


def read_window(store, topic: str, queue_id: int, start: int, end: int, message_filter) -> WindowScan:
    """The window ``[start, end)`` of one queue, in queue order, with ``isMatchedByConsumeQueue``;
    and in the same job, when allowed, its CommitLog rows (see the module's docstring)."""
    cq_where = [("topic", "=", topic), ("queue_id", "=", queue_id),
                ("queue_offset", ">=", start), ("queue_offset", "<", end)]
    cq_files = store.consumequeue.files(cq_where)
    sql = is_sql_filter(message_filter)
    columns = _columns(message_filter, "cq")
    slot = slot_for_filter(store, topic, message_filter, {queue_id: start})
    if slot is not None:  # exact subscription bits: the decision is in the ConsumeQueue
        columns = ([c for c in columns] + [bit(slot).alias("bit")] if sql
                   else columns[:-1] + [bit(slot).alias("ok")])
    query = store.consumequeue.read(store.spark, where=cq_where, files=cq_files).select(*columns)
    bitmap = sql and getattr(message_filter, "uses_bitmap", False)
    found = None if bitmap or (sql and slot is not None) else \
        footers.bounds([f.path for f in cq_files], cq_where[1:], ["commitlog_offset", "size"])
    if found:
        (lo, hi), (_, largest) = found["commitlog_offset"], found["size"]
        cl_where = [("commitlog_offset", ">=", lo), ("commitlog_offset", "<=", hi)] + cq_where
        bodies = (end - start) * largest <= BODY_BUDGET_BYTES
        query = query.unionByName(_commitlog_read(store, (cl_where, None),
                                                  _columns(message_filter, "cl", bodies, store)),
                                  allowMissingColumns=True)
    table = query.toArrow()
    kind = table["kind"].to_numpy()
    cq = table.filter(pa.array(kind == 0))
    cq = cq.take(pa.array(np.argsort(cq["queue_offset"].to_numpy(), kind="stable")))
    scan = WindowScan(cq["queue_offset"].to_numpy(), cq["commitlog_offset"].to_numpy(), cq["size"].to_numpy(),
                      cq["ok"].to_numpy(zero_copy_only=False))
    if found:
        scan._learn(table.filter(pa.array(kind == 1)))
    if sql and slot is not None:
        scan._learn(cq.select(["commitlog_offset", "bit"]).rename_columns(["commitlog_offset", "ok"]))
    return scan
