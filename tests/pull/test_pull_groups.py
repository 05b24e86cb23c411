"""pull_sequence groups rows on one hashed key: the Arrow function must still pull each
(filter, queue) on its own when two of them share a group (a hash collision), and it reads the
flags packed in the rows it is sent."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from rocketfilter.pull.batch import META, _queue_function, pull_sequence_arrays
from rocketfilter.pull.limits import DEFAULT_LIMITS


def _queue(queue_id: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    size = rng.integers(100, 200, n).astype(np.int32)
    order = rng.permutation(n)   # rows arrive in no particular order
    return pa.table({
        "filter_index": pa.array(np.zeros(n, np.int32)), "queue_id": pa.array(np.full(n, queue_id, np.int32)),
        "queue_offset": pa.array(np.arange(n, dtype=np.int64)),
        "commitlog_offset": pa.array(np.arange(n, dtype=np.int64) * 1000 + queue_id),
        "size": pa.array(size), "cq_match": pa.array(rng.random(n) < 0.4),
    }).take(order)


def _loop_rows(t: pa.Table, min_commitlog_offset: int = 0) -> pa.Table:
    """``t`` as pull_sequence sends it to the loop (``batch._loop_input``): longs, the size and
    the flags packed in one (a record present from ``min_commitlog_offset`` on, cl_match true)."""
    pos = t.column("commitlog_offset").to_numpy()
    meta = ((t.column("size").to_numpy().astype(np.int64) << 3) | ((pos >= min_commitlog_offset).astype(np.int64) << 2)
            | 2 | t.column("cq_match").to_numpy(zero_copy_only=False).astype(np.int64))
    return pa.table({"filter_index": t.column("filter_index").cast(pa.int64()),
                     "queue_id": t.column("queue_id").cast(pa.int64()),
                     "queue_offset": t.column("queue_offset"), "commitlog_offset": t.column("commitlog_offset"),
                     META: pa.array(meta)})


def _function():
    return _queue_function(output="entries", max_msg_nums=4, max_offset_py=10**9, limits=DEFAULT_LIMITS,
                           start_offsets=None, end_offsets=None, min_offsets=None, max_offsets=None,
                           max_pulls=None, by=("filter_index",), topic="T",
                           narrowed={"filter_index": "int32", "queue_id": "int32"})


def test_two_queues_in_one_group_are_pulled_apart():
    fn = _function()
    a, b = _loop_rows(_queue(1, 300, 1)), _loop_rows(_queue(2, 200, 2))
    apart = pa.concat_tables([fn((0,), a), fn((0,), b)]).sort_by([("queue_id", "ascending"), ("queue_offset", "ascending")])
    together = fn((0,), pa.concat_tables([b, a])).sort_by([("queue_id", "ascending"), ("queue_offset", "ascending")])
    assert together.equals(apart)
    assert set(together.column("queue_id").to_pylist()) == {1, 2}
    assert "topic" not in together.column_names
    # Each queue's pulls number from 0: they were not run as one queue.
    for q in (1, 2):
        part = together.filter(pa.compute.equal(together.column("queue_id"), q))
        assert part.column("pull_number")[0].as_py() == 0


def test_records_before_min_commitlog_offset_are_gone():
    """An entry whose present bit is off (pull_sequence sets it from min_commitlog_offset when
    there is no cl_present column) is gone: the same pulls as the loop given that flag (here
    one pull that meets a removed record and skips the rest of its commit-log file:
    MESSAGE_WAS_REMOVING, nothing delivered)."""
    t = _queue(1, 300, 3)
    cut = 100 * 1000
    rows = t.sort_by("queue_offset")
    qo, pos, size, cq = (rows.column(c).to_numpy() for c in ("queue_offset", "commitlog_offset", "size", "cq_match"))
    for min_cl in (0, cut):
        out = _function()((0,), _loop_rows(t, min_cl))
        seq = pull_sequence_arrays(qo, pos, size, cq, pos >= min_cl, np.ones(len(qo), bool), max_msg_nums=4,
                                   max_offset_py=10**9)
        assert sorted(out.column("queue_offset").to_pylist()) == qo[seq.entry_index].tolist()
        assert set(out.column("pull_status").to_pylist()) <= {p.status.value for p in seq.pulls}
    assert [p.status.value for p in seq.pulls] == ["MESSAGE_WAS_REMOVING"]
