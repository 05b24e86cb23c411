"""Property tests: the vectorised pull loop equals the plain model (tests/pull/model.py).

Random queues with every knob small enough to matter inside a few dozen entries: the scan
window, the CQ file size, the in-memory boundary (a tiny total_physical_memory), the byte and
count tiers, maxPullSize, removed commit-log prefixes and scattered removals with a small
commit-log file size (skipUntilPhy), holes in the CQ, non-monotone positions (not produced by
dispatch, handled exactly), size-0 records, slave offset correction, and offsets anywhere,
including out of range.
"""
from __future__ import annotations

import dataclasses
import random

from hypothesis import given, note, settings
from hypothesis import strategies as st

from rocketfilter.pull.batch import PullLimits, get_message_window, pull_sequence_arrays
from tests.pull import model
from tests.pull.model import to_arrays


@st.composite
def scenarios(draw):
    """(queue, limits, max_msg_nums, max_offset_py, offset, end_offset).

    In "regular" examples every record has the same even size and no gap, and the commit-log
    file size, byte limits, maxPullSize and the in-memory threshold are multiples of it, so the
    boundaries (``pos == skipUntilPhy``, ``bufferTotal + size == limit``, ``diff == memory``) are
    hit exactly; other examples are irregular.
    """
    # A seeded Random, not st.randoms(): hypothesis's own randoms lean hard towards 0, which
    # starves the multi-message paths; a failing example is still reproducible from its seed.
    rnd = random.Random(draw(st.integers(0, 2 ** 64 - 1)))
    n = rnd.choice([0, rnd.randint(1, 8), rnd.randint(1, 60), rnd.randint(1, 60),
                    rnd.randint(30, 60), rnd.randint(30, 60)])
    start = rnd.choice([0, 0, 1, 7, 29, 100])
    regular = rnd.random() < 0.4
    unit = rnd.choice([10, 50, 100])
    big = rnd.random() < 0.25
    if regular:
        sizes = [unit] * n
    else:
        tiny = rnd.choice([0.0, 0.0, 0.03, 0.2])     # size-0 records: FOUND with bufferTotal 0
        sizes = [rnd.choice([0, 0, 1, 5]) if rnd.random() < tiny
                 else rnd.randint(1, 3000 if big else 300) for _ in range(n)]
    pos = unit * rnd.randint(0, 30) if regular else rnd.randint(0, 3000)
    positions = []
    for s in sizes:
        positions.append(pos)
        pos += s + (rnd.randint(0, 200) if not regular and rnd.random() < 0.3 else 0)
    tail = pos
    unordered = n > 1 and rnd.randint(0, 7) == 0
    if unordered:
        rnd.shuffle(positions)            # exercises the exact skip fallback
    p_cq = rnd.choice([0.0, 0.3, 0.8, 1.0, 1.0])
    p_cl = rnd.choice([0.0, 0.5, 0.9, 1.0, 1.0])
    p_rm = rnd.choice([0.1, 0.3]) if unordered else rnd.choice([0.0, 0.0, 0.1, 0.5])
    cl_min = rnd.randint(0, tail + 1) if not unordered and rnd.random() < 0.5 else 0
    entries = {}
    for i in range(n):
        q = start + i
        entries[q] = model.Entry(q, positions[i], sizes[i], rnd.random() < p_cq,
                                 rnd.random() < p_cl,
                                 positions[i] < cl_min or rnd.random() < p_rm)
    if n and rnd.randint(0, 4) == 0:   # a hole in the CQ
        a = rnd.randint(start, start + n - 1)
        for q in range(a, min(start + n, a + rnd.randint(1, 10))):
            del entries[q]
    if n == 0:
        min_offset = max_offset = rnd.choice([0, start])
    else:
        min_offset = start - rnd.choice([0, 0, 0, 2])
        max_offset = start + n + rnd.choice([0, 0, 0, 3])
    queue = model.Queue(entries, min_offset, max_offset)

    ratio = rnd.choice([40, 40, 40, 26, 50, 100, 0])
    max_offset_py = tail + (0 if regular else rnd.choice([0, 0, 100, -50]))
    if regular and ratio in (40, 50, 100):
        # memory threshold = an exact multiple of the record size (unit is even).
        total_physical_memory = unit * rnd.randint(0, n + 1) * 100 // ratio
    else:
        total_physical_memory = rnd.randint(0, 2 * tail + 10)

    def byte_limit() -> int:
        if regular:
            return unit * rnd.randint(0, 14)
        return rnd.choice([0, rnd.randint(1, 8000)] + [rnd.randint(300, 8000)] * 6)

    limits = PullLimits(
        max_transfer_bytes_on_message_in_memory=byte_limit(),
        max_transfer_count_on_message_in_memory=rnd.randint(1, 12),
        max_transfer_bytes_on_message_in_disk=byte_limit(),
        max_transfer_count_on_message_in_disk=rnd.randint(1, 12),
        access_message_in_memory_max_ratio=ratio,
        total_physical_memory=total_physical_memory,
        max_filter_message_size=rnd.choice([16000, 0, 20, 100, 210, 400, 600]),
        mapped_file_size_consume_queue=rnd.choice(
            [rnd.randint(1, 8), rnd.randint(8, 40), 300000, 300000]) * 20
        + rnd.choice([0, 0, 7]),
        mapped_file_size_commitlog=(unit * rnd.randint(1, 10) if regular
                                    else max(1, tail // rnd.randint(2, 8)) if unordered
                                    else rnd.randint(1, 3000)),
        max_pull_msg_size=rnd.choice([128 * 1024 * 1024] * 18 + [50, 2000]),
        max_total_msg_size=rnd.choice([128 * 1024 * 1024] * 12 + [0, 150, 1000, 4000]
                                      + [unit * rnd.randint(1, 14)] * 2),
        broker_role=rnd.choice(["ASYNC_MASTER", "ASYNC_MASTER", "ASYNC_MASTER", "SLAVE"]),
        offset_check_in_slave=rnd.random() < 0.5,
    )
    max_msg_nums = rnd.choice([0, 1, 2, 3, 5, 8, 16, 32, 32, 40, 40, 40])

    def any_offset() -> int:
        kind = rnd.random()
        if kind < 0.7 and max_offset > min_offset:
            return rnd.randint(min_offset, max_offset - 1)
        if kind < 0.8:
            return min_offset - rnd.randint(1, 3)
        if kind < 0.9:
            return max_offset
        return rnd.choice([0, max_offset + rnd.randint(1, 3)])

    offset = any_offset()
    end_offset = None if rnd.random() < 0.4 else any_offset() + rnd.randint(0, 5)
    return queue, limits, max_msg_nums, max_offset_py, offset, end_offset


def _key(res) -> tuple:
    return (res.status, res.next_begin_offset, [int(q) for q in res.found_queue_offsets],
            res.buffer_total_size, res.message_count, res.filter_message_count,
            res.suggest_pulling_from_slave, res.min_offset, res.max_offset)


def _model_key(ref: model.Result) -> tuple:
    return (ref.status, ref.next_begin_offset, ref.found, ref.buffer_total, ref.message_count,
            ref.filtered, ref.suggest_pulling_from_slave, ref.min_offset, ref.max_offset)


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_window_matches_model(sc):
    """One pull at every offset from min_offset - 3 to max_offset + 3 (and 0)."""
    queue, limits, max_msg_nums, max_offset_py, _, _ = sc
    note(f"limits={limits} max_msg_nums={max_msg_nums} max_offset_py={max_offset_py}")
    arrays = to_arrays(queue)
    cfg = model.Config(**dataclasses.asdict(limits))
    for offset in sorted({0, *range(queue.min_offset - 3, queue.max_offset + 4)}):
        res = get_message_window(**arrays, offset=offset, max_msg_nums=max_msg_nums,
                                 min_offset=queue.min_offset, max_offset=queue.max_offset,
                                 max_offset_py=max_offset_py, limits=limits)
        ref = model.get_message(queue, offset, max_msg_nums, max_offset_py, cfg)
        assert _key(res) == _model_key(ref), offset
        # The funnel adds up: a scanned entry is skipped, a tag miss, removed, rejected or found.
        assert res.scanned in (0, res.next_begin_offset - offset)
        assert res.passed_cq == res.removed + res.commitlog_read
        assert res.commitlog_read == res.filter_message_count + res.message_count


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_sequence_matches_model(sc):
    queue, limits, max_msg_nums, max_offset_py, offset, end_offset = sc
    a = to_arrays(queue)
    seq = pull_sequence_arrays(**a, start_offset=offset, end_offset=end_offset,
                               max_msg_nums=max_msg_nums, min_offset=queue.min_offset,
                               max_offset=queue.max_offset, max_offset_py=max_offset_py,
                               limits=limits, max_pulls=500)
    ref = model.pull_sequence(queue, offset, end_offset, max_msg_nums, max_offset_py,
                              model.Config(**dataclasses.asdict(limits)), max_pulls=500)
    assert len(seq.pulls) < 500
    assert seq.pull_offsets == [o for o, _ in ref]
    assert [_key(r) for r in seq.pulls] == [_model_key(r) for _, r in ref]
    delivered = [int(q) for q in a["queue_offset"][seq.entry_index]]
    assert delivered == [q for _, r in ref for q in r.found]
    per_pull = [(k, r.next_begin_offset, r.status.value) for k, (_, r) in enumerate(ref)
                for _ in r.found]
    assert list(zip(seq.entry_pull.tolist(), seq.entry_next_begin_offset.tolist(),
                    seq.entry_status.tolist())) == per_pull
