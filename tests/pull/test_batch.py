"""The pull loop (SEMANTICS §12.2): each status and each listed consequence, case by case.

Every single-pull case also runs the plain model (tests/pull/model.py) and checks agreement.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from rocketfilter.pull.batch import (
    DEFAULT_LIMITS,
    MAX_PLACED_GROUPS,
    PullLimits,
    STATUS_NAMES,
    get_message_from_dataframe,
    get_message_window,
    group_placement,
    is_the_batch_full,
    no_matched_logic_queue,
    pull_sequence,
    pull_sequence_arrays,
    status_name,
)
from rocketfilter.pull.result import GetMessageStatus as S
from tests.pull import model
from tests.pull.model import make_queue, to_arrays

GIB = 1024 ** 3
MEM = PullLimits(total_physical_memory=24 * GIB)      # everything "in memory"
DISK = PullLimits(total_physical_memory=1)             # nothing "in memory"


def tail(queue: model.Queue) -> int:
    """commitLog.maxOffset: one past the last record."""
    return max((e.pos + e.size for e in queue.entries.values()), default=0)


def pull(queue: model.Queue, offset: int, max_msg_nums: int = 32, limits: PullLimits = MEM,
         max_offset_py=None):
    """get_message_window on the queue, checked against the model; returns the WindowResult."""
    py = tail(queue) if max_offset_py is None else max_offset_py
    res = get_message_window(**to_arrays(queue), offset=offset, max_msg_nums=max_msg_nums,
                             min_offset=queue.min_offset, max_offset=queue.max_offset,
                             max_offset_py=py, limits=limits)
    ref = model.get_message(queue, offset, max_msg_nums, py,
                            model.Config(**dataclasses.asdict(limits)))
    assert (res.status, res.next_begin_offset, list(res.found_queue_offsets),
            res.buffer_total_size, res.message_count, res.filter_message_count,
            res.suggest_pulling_from_slave, res.min_offset, res.max_offset) == (
        ref.status, ref.next_begin_offset, ref.found, ref.buffer_total, ref.message_count,
        ref.filtered, ref.suggest_pulling_from_slave, ref.min_offset, ref.max_offset)
    return res


# --- isTheBatchFull ------------------------------------------------------------------------------

@pytest.mark.parametrize("args, full", [
    ((10 ** 9, 1, 32, 1 << 27, 0, 0, True), False),        # empty buffer: always take it
    ((100, 1, 32, 1 << 27, 0, 5, True), False),
    ((100, 1, 32, 1 << 27, 100, 0, True), False),
    ((100, 1, 3, 1 << 27, 300, 3, True), True),              # messageTotal + batchNum > max
    ((100, 1, 4, 1 << 27, 300, 3, True), False),
    ((101, 1, 32, 400, 300, 3, False), True),                # > maxBytes
    ((100, 1, 32, 400, 300, 3, False), False),
    ((262044, 1, 64, 1 << 27, 100, 1, True), False),         # exactly 256 KiB fits
    ((262045, 1, 64, 1 << 27, 100, 1, True), True),
    ((1, 1, 64, 1 << 27, 100, 31, True), False),
    ((1, 1, 64, 1 << 27, 100, 32, True), True),              # 32 in memory
    ((65436, 1, 64, 1 << 27, 100, 1, False), False),         # exactly 64 KiB fits
    ((65437, 1, 64, 1 << 27, 100, 1, False), True),
    ((1, 1, 64, 1 << 27, 100, 7, False), False),
    ((1, 1, 64, 1 << 27, 100, 8, False), True),              # 8 on disk
])
def test_is_the_batch_full(args, full):
    assert is_the_batch_full(*args, config=MEM) is full
    assert model.batch_full(*args, model.Config()) is full


def test_limits_defaults():
    lim = PullLimits(total_physical_memory=24 * GIB)
    assert lim.max_pull_size == 128 * 1024 * 1024
    assert lim.memory_threshold == int(24 * GIB * 0.4)
    assert lim.window_entries(32) == 800 and lim.window_entries(1000) == 1000
    assert lim.consume_queue_units_per_file == 300000
    assert lim.roll_next_consume_queue_file(5) == 300000
    assert lim.roll_next_consume_queue_file(300000) == 600000
    assert lim.roll_next_commitlog_file(GIB + 7) == 2 * GIB
    assert DEFAULT_LIMITS.total_physical_memory > 0


# --- the loop's limits ---------------------------------------------------------------------------

def test_first_message_taken_however_big():
    q = make_queue([200 * 1024 * 1024, 10, 10])
    for lim in (MEM, DISK):
        r = pull(q, 0, limits=lim)
        assert (r.status, r.message_count, r.next_begin_offset) == (S.FOUND, 1, 1)
        assert r.buffer_total_size == 200 * 1024 * 1024


@pytest.mark.parametrize("max_msg_nums, limits, expected", [
    (64, MEM, 32), (32, MEM, 32), (10, MEM, 10), (1, MEM, 1), (0, MEM, 1),
    (64, DISK, 8), (5, DISK, 5),
])
def test_count_limit(max_msg_nums, limits, expected):
    q = make_queue([100] * 100)
    r = pull(q, 3, max_msg_nums, limits)
    assert (r.status, r.message_count, r.next_begin_offset) == (S.FOUND, expected, 3 + expected)
    assert list(r.found_queue_offsets) == list(range(3, 3 + expected))


@pytest.mark.parametrize("limits, expected", [(MEM, 26), (DISK, 6)])
def test_byte_limit(limits, expected):
    # 26 x 10000 = 260000 <= 256 KiB < 270000; 6 x 10000 = 60000 <= 64 KiB < 70000.
    r = pull(make_queue([10000] * 50), 0, 32, limits)
    assert (r.message_count, r.buffer_total_size, r.next_begin_offset) == (
        expected, expected * 10000, expected)


def test_in_memory_is_per_entry():
    # Only the last 40 % of "RAM" behind the commit-log tail is in memory: entries near the head
    # are on disk (8 per pull), the tail ones in memory (32).
    q = make_queue([100] * 200)
    lim = PullLimits(total_physical_memory=10000)   # threshold 4000 bytes = the last 40 entries
    assert pull(q, 0, 64, lim).message_count == 8
    assert pull(q, 160, 64, lim).message_count == 32
    # The tier is judged per entry: from 150, entry 158 (on disk) sees 8 messages and stops;
    # from 155, entries 160+ are in memory and the pull goes on to 32.
    assert pull(q, 150, 64, lim).message_count == 8
    assert pull(q, 155, 64, lim).message_count == 32


def test_max_pull_size():
    q = make_queue([60] * 20)
    lim = dataclasses.replace(MEM, max_total_msg_size=150)
    assert pull(q, 0, 32, lim).message_count == 2          # 120 + 60 > 150
    lim = dataclasses.replace(MEM, max_total_msg_size=10)   # clamped up to 100
    assert pull(q, 0, 32, lim).message_count == 1


def test_buffer_at_max_pull_size_breaks_before_a_size_zero_record():
    # isTheBatchFull lets a 0-byte record through at bufferTotal == maxPullSize; the separate
    # `bufferTotal >= maxPullSize` test stops there.
    q = make_queue([100, 0, 5])
    r = pull(q, 0, 32, dataclasses.replace(MEM, max_total_msg_size=100))
    assert (r.message_count, r.next_begin_offset) == (1, 1)
    r = pull(q, 0, 32, dataclasses.replace(MEM, max_total_msg_size=101))
    assert (r.message_count, r.next_begin_offset) == (2, 2)


def test_size_zero_found_then_rejection_resets_status():
    # FOUND with bufferTotal still 0: a later rejection sets the status back (bufferTotal == 0).
    r = pull(make_queue([0, 10], cl=[True, False]), 0)
    assert (r.status, r.message_count, r.next_begin_offset) == (S.NO_MATCHED_MESSAGE, 1, 2)


def test_size_zero_found_after_removed_then_rejection():
    # The same through the skipUntilPhy path: 0 (removed, file 0) sets the skip to 1000; 1 is
    # a 0-byte FOUND at 1000; 2's rejection at bufferTotal 0 sets NO_MATCHED_MESSAGE again.
    q = make_queue([100, 0, 10], pos0=900, cl=[True, True, False], removed=[True, False, False])
    r = pull(q, 0, 32, dataclasses.replace(MEM, mapped_file_size_commitlog=1000))
    assert (r.status, r.message_count, r.removed) == (S.NO_MATCHED_MESSAGE, 1, 1)


def test_window_of_800_entries():
    q = make_queue([100] * 2000, cq=[False] * 2000)
    r = pull(q, 5)
    assert (r.status, r.next_begin_offset, r.scanned) == (S.NO_MATCHED_MESSAGE, 805, 800)
    r = pull(q, 5, max_msg_nums=1000)                 # max(16000, 1000 x 20) bytes
    assert r.next_begin_offset == 1005
    r = pull(q, 5, limits=dataclasses.replace(MEM, max_filter_message_size=210))
    assert r.next_begin_offset == 5 + 32              # max(210, 640) / 20


def test_window_then_found_is_past_window():
    cq = [False] * 900 + [True] * 10
    q = make_queue([100] * 910, cq=cq)
    r = pull(q, 0)
    assert (r.status, r.next_begin_offset, r.message_count) == (S.NO_MATCHED_MESSAGE, 800, 0)
    r = pull(q, 800)
    assert (r.status, r.next_begin_offset, list(r.found_queue_offsets)) == (
        S.FOUND, 910, list(range(900, 910)))


def test_cq_file_boundary():
    lim = dataclasses.replace(MEM, mapped_file_size_consume_queue=20 * 100)
    q = make_queue([100] * 300)
    r = pull(q, 90, 32, lim)
    assert (r.status, r.next_begin_offset, r.message_count) == (S.FOUND, 100, 10)
    r = pull(make_queue([100] * 300, cq=[False] * 300), 30, 32, lim)
    assert (r.status, r.next_begin_offset) == (S.NO_MATCHED_MESSAGE, 100)


# --- filtering -----------------------------------------------------------------------------------

def test_everything_filtered_advances_next():
    n = 50
    cq = [i % 2 == 0 for i in range(n)]
    q = make_queue([100] * n, cq=cq, cl=[False] * n)     # odd: tag miss; even: SQL92 miss
    r = pull(q, 0)
    assert (r.status, r.next_begin_offset, r.message_count) == (S.NO_MATCHED_MESSAGE, n, 0)
    assert r.filter_message_count == 25                  # only SQL92 rejections count
    assert (r.scanned, r.passed_cq, r.commitlog_read, r.passed_sql92) == (50, 25, 25, 0)


def test_mixed_is_found_and_later_rejections_advance():
    cl = [False, False, True, False, True, False, False]
    q = make_queue([100] * 7, cl=cl)
    r = pull(q, 0)
    assert (r.status, list(r.found_queue_offsets), r.next_begin_offset) == (S.FOUND, [2, 4], 7)
    assert r.filter_message_count == 5


def test_batch_full_leaves_next_at_entry_that_did_not_fit():
    # 32 matches interleaved with rejections: the entry after the 32nd match breaks, whatever it is.
    cq = [i % 3 != 1 for i in range(200)]
    q = make_queue([100] * 200, cq=cq)
    r = pull(q, 0, 64)
    last = int(r.found_queue_offsets[-1])
    assert r.message_count == 32 and r.next_begin_offset == last + 1
    # Byte break: the 27th 10000-byte entry does not fit and is re-read by the next pull.
    q = make_queue([10000] * 40)
    first, second = pull(q, 0), pull(q, 26)
    assert first.next_begin_offset == 26 and int(second.found_queue_offsets[0]) == 26


# --- removed commit log --------------------------------------------------------------------------

def test_removed_prefix_is_message_was_removing():
    lim = dataclasses.replace(MEM, mapped_file_size_commitlog=1000)
    q = make_queue([100] * 900, removed=[True] * 900)
    r = pull(q, 0, 32, lim)
    assert (r.status, r.next_begin_offset, r.message_count) == (S.MESSAGE_WAS_REMOVING, 800, 0)
    assert r.filter_message_count == 0


def test_skip_until_next_commitlog_file():
    # Entries 0-2 removed; 3-9 share their 1000-byte commit-log file and are skipped although
    # present and matching; 10+ (next file) are found.
    lim = dataclasses.replace(MEM, mapped_file_size_commitlog=1000)
    q = make_queue([100] * 30, removed=[True] * 3 + [False] * 27)
    r = pull(q, 0, 32, lim)
    assert (r.status, int(r.found_queue_offsets[0]), r.skipped, r.removed) == (S.FOUND, 10, 9, 1)
    r = pull(q, 0, 32, dataclasses.replace(lim, mapped_file_size_commitlog=300))
    assert int(r.found_queue_offsets[0]) == 3


def test_removed_after_found_keeps_found():
    q = make_queue([100] * 10, removed=[False] * 3 + [True] * 7)
    r = pull(q, 0)
    assert (r.status, r.message_count, r.next_begin_offset) == (S.FOUND, 3, 10)


def test_removed_but_tag_miss_does_not_skip():
    lim = dataclasses.replace(MEM, mapped_file_size_commitlog=1000)
    q = make_queue([100] * 5, cq=[False, True, True, True, True],
                   removed=[True, False, False, False, False])
    r = pull(q, 0, 32, lim)
    assert list(r.found_queue_offsets) == [1, 2, 3, 4]


def test_unordered_positions_use_exact_skip():
    # Not produced by dispatch, but handled: a FOUND message resets the skip.
    entries = {q: model.Entry(q, pos, 100) for q, pos in enumerate([0, 50, 2500, 100])}
    entries[0].removed = True
    queue = model.Queue(entries, 0, 4)
    r = pull(queue, 0, 32, dataclasses.replace(MEM, mapped_file_size_commitlog=1000))
    assert list(r.found_queue_offsets) == [2, 3]   # 1 skipped; 3 found after 2 reset the skip


# --- offsets and statuses ------------------------------------------------------------------------

def test_offset_statuses():
    q = make_queue([100] * 10, start=5)
    assert (pull(q, 2).status, pull(q, 2).next_begin_offset) == (S.OFFSET_TOO_SMALL, 5)
    assert (pull(q, 15).status, pull(q, 15).next_begin_offset) == (S.OFFSET_OVERFLOW_ONE, 15)
    assert (pull(q, 99).status, pull(q, 99).next_begin_offset) == (S.OFFSET_OVERFLOW_BADLY, 15)
    empty = model.Queue({}, 0, 0)
    r = pull(empty, 7)
    assert (r.status, r.next_begin_offset) == (S.NO_MESSAGE_IN_QUEUE, 0)
    r = no_matched_logic_queue(7)
    ref = model.get_message(None, 7, 32, 0, model.Config())
    assert (r.status, r.next_begin_offset) == (ref.status, ref.next_begin_offset) == (
        S.NO_MATCHED_LOGIC_QUEUE, 0)


def test_slave_keeps_old_offset():
    q = make_queue([100] * 10, start=5)
    slave = dataclasses.replace(MEM, broker_role="SLAVE")
    assert pull(q, 2, limits=slave).next_begin_offset == 2
    assert pull(q, 99, limits=slave).next_begin_offset == 99
    checked = dataclasses.replace(slave, offset_check_in_slave=True)
    assert pull(q, 99, limits=checked).next_begin_offset == 15


def test_offset_found_null_rolls_to_next_cq_file():
    lim = dataclasses.replace(MEM, mapped_file_size_consume_queue=20 * 100)
    q = make_queue([100] * 300)
    for k in range(50, 150):
        del q.entries[k]                                # a lost CQ file and a half
    r = pull(q, 60, 32, lim)
    assert (r.status, r.next_begin_offset) == (S.OFFSET_FOUND_NULL, 100)
    r = pull(q, 120, 32, lim)
    assert (r.status, r.next_begin_offset) == (S.OFFSET_FOUND_NULL, 200)
    r = pull(q, 40, 32, lim)                           # the iterator stops at the hole
    assert (r.status, r.next_begin_offset, r.message_count) == (S.FOUND, 50, 10)


def test_suggest_pulling_from_slave():
    q = make_queue([100] * 100)
    lim = PullLimits(total_physical_memory=10000)      # threshold 4000 bytes
    assert pull(q, 0, 4, lim).suggest_pulling_from_slave
    assert not pull(q, 90, 4, lim).suggest_pulling_from_slave


# --- sequences -----------------------------------------------------------------------------------

def test_pull_sequence_delivers_all_matches():
    n = 3000
    rng = np.random.default_rng(1)
    cq = rng.random(n) < 0.3
    q = make_queue(list(rng.integers(50, 3000, n)), start=10, cq=cq)
    a = to_arrays(q)
    seq = pull_sequence_arrays(**a, max_msg_nums=32, max_offset_py=tail(q), limits=MEM)
    assert list(a["queue_offset"][seq.entry_index]) == [10 + i for i in np.flatnonzero(cq)]
    assert seq.next_begin_offset == 10 + n
    assert all(p.status in (S.FOUND, S.NO_MATCHED_MESSAGE) for p in seq.pulls)
    # Pulls chain: each starts where the previous one ended.
    assert seq.pull_offsets[1:] == [p.next_begin_offset for p in seq.pulls[:-1]]
    ref = model.pull_sequence(q, 10, None, 32, tail(q), model.Config(**dataclasses.asdict(MEM)))
    assert [r.next_begin_offset for _, r in ref] == [p.next_begin_offset for p in seq.pulls]


def test_pull_sequence_stops():
    q = make_queue([100] * 10, start=5)
    a = to_arrays(q)
    kw = dict(max_msg_nums=4, max_offset_py=tail(q), limits=MEM)
    seq = pull_sequence_arrays(**a, start_offset=99, **kw)
    assert [p.status for p in seq.pulls] == [S.OFFSET_OVERFLOW_BADLY]
    seq = pull_sequence_arrays(**a, start_offset=15, **kw)
    assert [p.status for p in seq.pulls] == [S.OFFSET_OVERFLOW_ONE]
    seq = pull_sequence_arrays(**a, start_offset=0, end_offset=10, **kw)
    assert [(p.status, p.next_begin_offset) for p in seq.pulls] == [
        (S.OFFSET_TOO_SMALL, 5), (S.FOUND, 9), (S.FOUND, 13)]
    seq = pull_sequence_arrays(**a, max_pulls=1, **kw)
    assert len(seq.pulls) == 1 and len(seq.entry_index) == 4


# --- Spark ---------------------------------------------------------------------------------------

def _spark_queues(rng):
    """Six queues over two topics (one non-ASCII), as one Arrow table and per-queue arrays."""
    tables, arrays = [], {}
    for topic in ("t1", "ünï"):
        for queue_id in range(3):
            n = int(rng.integers(1, 400))
            q = make_queue(list(rng.integers(1, 20000, n)), start=int(rng.integers(0, 50)),
                           pos0=int(rng.integers(0, 10 ** 6)), cq=rng.random(n) < 0.6,
                           cl=rng.random(n) < 0.8, removed=np.arange(n) < rng.integers(0, 30))
            a = arrays[(topic, queue_id)] = to_arrays(q)
            tables.append(pa.table({"topic": pa.array([topic] * n),
                                    "queue_id": pa.array(np.full(n, queue_id, np.int32)),
                                    **{k: pa.array(v) for k, v in a.items()}}))
    return pa.concat_tables(tables), arrays


def test_spark_pull_sequence_matches_arrays(spark):
    rng = np.random.default_rng(7)
    table, arrays = _spark_queues(rng)
    df = spark.createDataFrame(table.take(rng.permutation(table.num_rows)))   # any row order
    lim = PullLimits(total_physical_memory=4 * 10 ** 6, mapped_file_size_commitlog=10 ** 5,
                     mapped_file_size_consume_queue=20 * 150)
    py = 5 * 10 ** 6
    starts = {k: int(a["queue_offset"][0]) + 3 for k, a in arrays.items()}
    kw = dict(max_msg_nums=16, max_offset_py=py, limits=lim, start_offsets=starts)
    got = pull_sequence(df, **kw).collect()
    pulls = pull_sequence(df, output="pulls", **kw).collect()
    expected, expected_pulls = set(), set()
    for (topic, qid), a in arrays.items():
        seq = pull_sequence_arrays(**a, start_offset=starts[(topic, qid)], max_msg_nums=16,
                                   max_offset_py=py, limits=lim)
        for i, p, nb, st in zip(seq.entry_index, seq.entry_pull, seq.entry_next_begin_offset,
                                seq.entry_status):
            expected.add((topic, qid, int(a["queue_offset"][i]), int(a["commitlog_offset"][i]),
                          int(a["size"][i]), int(p), int(nb), st))
        for k, (off, r) in enumerate(zip(seq.pull_offsets, seq.pulls)):
            expected_pulls.add((topic, qid, k, off, r.status.value, r.next_begin_offset,
                                r.message_count))
    assert len(got) == len(expected) and set(map(tuple, got)) == expected
    assert len(pulls) == len(expected_pulls)
    assert {tuple(r)[:7] for r in pulls} == expected_pulls


def test_spark_pull_sequence_status_codes_name_the_same_statuses(spark):
    """``status_codes=True`` gives each entry's status as its index in STATUS_NAMES, which
    ``status_name`` turns back into the name the default output has; pulls keep their names."""
    from pyspark.sql import functions as F

    names = spark.range(len(STATUS_NAMES)).select(status_name(F.col("id")).alias("n")).collect()
    assert [r["n"] for r in names] == list(STATUS_NAMES) == [s.value for s in S]
    rng = np.random.default_rng(11)
    table, arrays = _spark_queues(rng)
    df = spark.createDataFrame(table.take(rng.permutation(table.num_rows)))
    kw = dict(max_msg_nums=4, max_offset_py=5 * 10 ** 6,
              start_offsets={k: int(a["queue_offset"][0]) for k, a in arrays.items()})
    coded = pull_sequence(df, status_codes=True, **kw)
    assert dict(coded.dtypes)["pull_status"] == "int"
    assert dict(pull_sequence(df, output="pulls", status_codes=True, **kw).dtypes)["pull_status"] == "string"
    key = ["topic", "queue_id", "queue_offset", "pull_number"]
    decoded = {tuple(r) for r in coded.select(*key, status_name(F.col("pull_status"))).collect()}
    named = {tuple(r) for r in pull_sequence(df, **kw).select(*key, "pull_status").collect()}
    assert len(decoded) == len(named) > 0 and decoded == named


@pytest.mark.parametrize("groups", [[(0, 0), (0, 1), (0, 2), (1, 0), (1, 2)],   # each its own partition
                                    [(1, 0), (1, 2)],          # filter 0's keys left out: below the range, shared
                                    None])                                      # hashed groupBy
def test_spark_pull_sequence_with_known_groups(spark, groups):
    """Given the (filter_index, queue_id) keys, each gets a partition of its own (mapInArrow, no
    sort); the rows are the same as the arrays' whichever way the keys are placed."""
    rng = np.random.default_rng(11)
    table, arrays = _spark_queues(rng)
    one = table.filter(pc.equal(table.column("topic"), "t1")).drop_columns(["topic"])
    # the same queues pulled under two filters (filter 1 skips queue 1), rows in any order
    both = pa.concat_tables([one.add_column(0, "filter_index", pa.array(np.full(one.num_rows, i, np.int32)))
                             for i in (0, 1)])
    both = both.filter(pc.invert(pc.and_(
        pc.equal(both.column("filter_index"), 1), pc.equal(both.column("queue_id"), 1))))
    df = spark.createDataFrame(both.take(rng.permutation(both.num_rows)))
    kw = dict(max_msg_nums=8, max_offset_py=5 * 10 ** 6, topic="t1", by=("filter_index",), groups=groups)
    got = pull_sequence(df, **kw)
    plan = got._jdf.queryExecution().executedPlan().toString()
    assert ("MapInArrow" in plan) == (groups is not None) and ("FlatMapGroupsInArrow" in plan) == (groups is None)
    expected = set()
    for f, qid in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2)]:
        a = arrays[("t1", qid)]
        seq = pull_sequence_arrays(**a, max_msg_nums=8, max_offset_py=5 * 10 ** 6)
        for i, pn, nb in zip(seq.entry_index, seq.entry_pull, seq.entry_next_begin_offset):
            expected.add((f, "t1", qid, int(a["queue_offset"][i]), int(pn), int(nb)))
    rows = got.select("filter_index", "topic", "queue_id", "queue_offset", "pull_number", "next_begin_offset")
    assert sorted(map(tuple, rows.collect())) == sorted(expected)


def test_spark_pull_sequence_sends_packed_longs_and_gives_back_the_types(spark):
    """The loop's input travels as longs (ints widened, size and flags in one long) and the
    result has the input's types again; a null flag counts as false, an absent ``cl_match`` as
    true and an absent ``cl_present`` as ``commitlog_offset >= min_commitlog_offset``."""
    rng = np.random.default_rng(5)
    table, arrays = _spark_queues(rng)
    a = arrays[("t1", 1)]
    n = len(a["queue_offset"])
    cq = pa.array([None if i % 7 == 0 else bool(v) for i, v in enumerate(a["cq_match"])], pa.bool_())
    pos = a["commitlog_offset"]
    floor = int(pos[n // 3])
    src = pa.table({"filter_index": pa.array(np.full(n, 3, np.int16)), "queue_id": pa.array(np.full(n, 1, np.int32)),
                    "queue_offset": a["queue_offset"], "commitlog_offset": pos, "size": pa.array(a["size"].astype(np.int32)),
                    "cq_match": cq, "n": pa.array(np.arange(n, dtype=np.int32)), "b": pa.array(np.arange(n) % 2 == 0),
                    "s": pa.array([f"m{i}" for i in range(n)])})
    df = spark.createDataFrame(src.take(rng.permutation(n)))
    kw = dict(max_msg_nums=8, max_offset_py=5 * 10 ** 6, topic="t1", by=("filter_index",),
              min_commitlog_offset=floor, groups=[(3, 1)])
    start = int(a["queue_offset"][n // 3])
    got = pull_sequence(df, carry=("n", "b", "s"), start_offsets=start, **kw)
    from_first = pull_sequence(df, output="pulls", **kw).select("pull_status", "next_begin_offset").collect()
    types = dict(got.dtypes)
    assert (types["filter_index"], types["queue_id"], types["size"], types["n"], types["b"], types["s"]) == (
        "smallint", "int", "int", "int", "boolean", "string")
    flags = dict(cq_match=np.array([bool(v) if v is not None else False for v in cq.to_pylist()]),
                 cl_present=pos >= floor, cl_match=np.ones(n, bool))
    arrays_kw = dict(max_msg_nums=8, max_offset_py=5 * 10 ** 6)
    first = pull_sequence_arrays(a["queue_offset"], pos, a["size"], **flags, **arrays_kw)
    assert [tuple(r) for r in from_first] == [(p.status.value, p.next_begin_offset) for p in first.pulls]
    assert first.pulls[0].status.value == "MESSAGE_WAS_REMOVING"     # the floor is read
    seq = pull_sequence_arrays(a["queue_offset"], pos, a["size"], **flags, start_offset=start, **arrays_kw)
    expected = {(3, 1, int(a["queue_offset"][i]), int(a["size"][i]), int(p), int(i), bool(i % 2 == 0), f"m{i}")
                for i, p in zip(seq.entry_index, seq.entry_pull)}
    rows = got.select("filter_index", "queue_id", "queue_offset", "size", "pull_number", "n", "b", "s").collect()
    assert len(rows) == len(expected) > 0 and set(map(tuple, rows)) == expected


def test_group_placement(spark):
    """Dense integer keys: one partition each (mixed radix over their ranges); sparse or
    non-integer keys: None (the caller hashes)."""
    groups = [(f, q) for f in (2, 3) for q in (4, 5, 6)]
    pid, n = group_placement(["f", "q"], groups)
    assert n == 6
    ids = spark.createDataFrame(groups, "f int, q int").select(pid.alias("p")).collect()
    assert sorted(r["p"] for r in ids) == list(range(6))
    assert group_placement(["q"], [(0,), (1,), (7,)]) is not None     # 8 partitions for 3 keys
    assert group_placement(["q"], [(0,), (100,)]) is None               # too sparse
    assert group_placement(["q"], [(-1,), (0,)]) is None
    assert group_placement(["q"], [("a",)]) is None
    assert group_placement(["q"], [(True,)]) is None
    assert group_placement(["q"], [(q,) for q in range(MAX_PLACED_GROUPS)]) is not None
    assert group_placement(["q"], [(q,) for q in range(MAX_PLACED_GROUPS + 1)]) is None   # many: hashed


def test_get_message_from_dataframe(spark):
    q = make_queue([100] * 50, start=3, cq=[i % 2 == 0 for i in range(50)])
    a = to_arrays(q)
    rows = [("t", 0, *(x.item() for x in vals)) for vals in zip(*a.values())]
    df = spark.createDataFrame(rows, "topic string, queue_id int, queue_offset long, "
                               "commitlog_offset long, size int, cq_match boolean, "
                               "cl_present boolean, cl_match boolean")
    res, table = get_message_from_dataframe(df, topic="t", queue_id=0, offset=4, max_msg_nums=8,
                                            min_offset=3, max_offset=53, max_offset_py=tail(q),
                                            limits=MEM)
    ref = pull(q, 4, 8)
    assert (res.status, res.next_begin_offset) == (ref.status, ref.next_begin_offset)
    assert table.column("queue_offset").take(res.found_index).to_pylist() == list(
        ref.found_queue_offsets)
    res, table = get_message_from_dataframe(df, topic="t", queue_id=0, offset=53, max_msg_nums=8,
                                            min_offset=3, max_offset=53, max_offset_py=0)
    assert res.status == S.OFFSET_OVERFLOW_ONE and table is None
