"""The pull chain (rocketfilter.pull.chain) against the general loop and the plain model.

Wherever :func:`pull_chain` answers, its pulls must be the model's, entry for entry; where it
declines, ``delivered_entries`` runs the general loop. The shared random scenarios
(test_batch_hypothesis) decline often (holes, removals, byte limits), so a second strategy draws
queues as dispatch writes them, where the chain must apply.
"""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from rocketfilter.pull.batch import PullLimits, delivered_entries
from rocketfilter.pull.chain import chain_applies, pull_chain
from rocketfilter.pull.window import PreparedQueue
from tests.pull import model
from tests.pull.model import to_arrays
from tests.pull.test_batch_hypothesis import scenarios


def _model_pulls(queue, offset, end_offset, max_msg_nums, max_offset_py, limits, max_pulls=None):
    ref = model.pull_sequence(queue, offset, end_offset, max_msg_nums, max_offset_py,
                              model.Config(**dataclasses.asdict(limits)), max_pulls=max_pulls)
    delivered = [q for _, r in ref for q in r.found]
    per_entry = [(k, r.next_begin_offset, r.status.value) for k, (_, r) in enumerate(ref) for _ in r.found]
    return ref, delivered, per_entry


def _check(queue, limits, max_msg_nums, max_offset_py, offset, end_offset, max_pulls=None) -> bool:
    """delivered_entries equals the model; returns whether the chain answered."""
    a = to_arrays(queue)
    prepared = PreparedQueue(*a.values(), max_msg_nums=max_msg_nums, max_offset_py=max_offset_py, limits=limits)
    stop_at = queue.max_offset if end_offset is None else min(end_offset, queue.max_offset)
    chain = pull_chain(prepared, offset, min_offset=queue.min_offset, max_offset=queue.max_offset,
                       stop_at=stop_at, max_pulls=max_pulls)
    idx, pull, nxt, statuses = delivered_entries(
        *a.values(), start_offset=offset, end_offset=end_offset, max_msg_nums=max_msg_nums,
        min_offset=queue.min_offset, max_offset=queue.max_offset, max_offset_py=max_offset_py,
        limits=limits, max_pulls=max_pulls)
    ref, delivered, per_entry = _model_pulls(queue, offset, end_offset, max_msg_nums, max_offset_py, limits,
                                             max_pulls)
    assert a["queue_offset"][idx].tolist() == delivered
    assert list(zip(pull.tolist(), nxt[pull].tolist(), [statuses[k] for k in pull.tolist()])) == per_entry
    assert len(nxt) == len(statuses) == len(ref)
    assert nxt.tolist() == [r.next_begin_offset for _, r in ref]
    assert statuses == [r.status.value for _, r in ref]
    return chain is not None


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_any_queue_matches_model(sc):
    queue, limits, max_msg_nums, max_offset_py, offset, end_offset = sc
    note(f"limits={limits} max_msg_nums={max_msg_nums}")
    _check(queue, limits, max_msg_nums, max_offset_py, offset, end_offset, max_pulls=500)


@st.composite
def dispatched(draw):
    """A queue as dispatch writes it: contiguous, positions in order, nothing removed, small
    records; small windows, CQ files and an in-memory boundary inside the queue."""
    rnd = random.Random(draw(st.integers(0, 2 ** 64 - 1)))
    n = rnd.randint(1, 400)
    start = rnd.choice([0, 3, 299, 1000])
    sizes = [rnd.randint(1, 60) for _ in range(n)]
    p_cq, p_cl = rnd.choice([0.0, 0.05, 0.5, 1.0]), rnd.choice([0.3, 1.0, 1.0])
    pos0 = rnd.randint(0, 500)
    queue = model.make_queue(sizes, start=start, pos0=pos0, cq=[rnd.random() < p_cq for _ in sizes],
                             cl=[rnd.random() < p_cl for _ in sizes])
    queue.max_offset += rnd.choice([0, 0, 2])
    tail = pos0 + sum(sizes)
    limits = PullLimits(
        max_transfer_count_on_message_in_memory=rnd.randint(1, 12),
        max_transfer_count_on_message_in_disk=rnd.randint(1, 12),
        max_transfer_bytes_on_message_in_memory=10_000, max_transfer_bytes_on_message_in_disk=5_000,
        total_physical_memory=rnd.randint(0, 2 * tail + 10), access_message_in_memory_max_ratio=40,
        max_filter_message_size=rnd.choice([16000, 100, 200, 400]),
        mapped_file_size_consume_queue=rnd.choice([7, 30, 300000]) * 20)
    max_msg_nums = rnd.choice([1, 2, 8, 32])
    offset = rnd.randint(queue.min_offset, queue.min_offset + n - 1)
    end_offset = rnd.choice([None, None, rnd.randint(offset, queue.max_offset + 3)])
    return queue, limits, max_msg_nums, tail, offset, end_offset


@settings(max_examples=400, deadline=None)
@given(dispatched())
def test_dispatched_queue_takes_the_chain(sc):
    queue, limits, max_msg_nums, max_offset_py, offset, end_offset = sc
    note(f"limits={limits} max_msg_nums={max_msg_nums} offset={offset} end={end_offset}")
    took = _check(queue, limits, max_msg_nums, max_offset_py, offset, end_offset)
    # Past max_offset's data (max_offset > last entry + 1) the general loop must decide.
    assert took or queue.max_offset > max(queue.entries) + 1


def _arrays(n, removed_at=None, big_at=None):
    rng = np.random.default_rng(7)
    size = rng.integers(300, 400, n)
    if big_at is not None:
        size[big_at] = 300_000
    pos = np.cumsum(size) - size
    present = np.ones(n, bool)
    if removed_at is not None:
        present[removed_at] = False
    return np.arange(n, dtype=np.int64), pos, size, rng.random(n) < 0.5, present, np.ones(n, bool)


@pytest.mark.parametrize("case, applies", [({}, True), ({"removed_at": 10}, False), ({"big_at": 10}, False)])
def test_chain_declines_what_it_cannot_answer(case, applies):
    """A removed record the CQ check passes (skipUntilPhy) or a record bigger than the byte
    limit leaves the pulls to the general loop."""
    a = _arrays(5_000, **case)
    a[3][case.get("removed_at", 0)] = True
    queue = PreparedQueue(*a, max_msg_nums=32, max_offset_py=int(a[1][-1] + a[2][-1]))
    assert chain_applies(queue) is applies


def test_no_pull_when_none_is_allowed():
    queue = model.make_queue([10] * 20)
    for max_pulls in (0, 1, 2):
        _check(queue, PullLimits(), 2, 200, 0, None, max_pulls=max_pulls)
