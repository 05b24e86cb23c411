"""The time search's algorithm against plain models, on random queues (no store, no Spark)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketfilter.store.offsets_by_time import BoundaryType, offset_in_queue_by_time, parse_boundary_type
from tests.store.offsets_model import ListUnits, Queue, intent, rocketmq


@st.composite
def queues(draw, monotonic: bool):
    """A queue of up to 40 units, ``units_per_file`` 1-9, with an expired prefix that the clean
    service has or has not caught up with (``lo`` below the first live unit)."""
    n = draw(st.integers(0, 40))
    if monotonic:
        steps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        times, t = [], draw(st.integers(1, 5))
        for s in steps:
            t += s
            times.append(t)
    else:
        times = draw(st.lists(st.integers(-1, 12), min_size=n, max_size=n))
    expired = draw(st.integers(0, n))
    first_file_unit = draw(st.integers(0, expired))   # where the queue's kept units start
    lo = draw(st.sampled_from(sorted({expired, first_file_unit})))
    units = {q: (q * 100, times[q]) for q in range(n)}
    queue = Queue(units, lo, n, min_phy=expired * 100)
    return queue, draw(st.integers(1, 9))


def _times_to_try(queue: Queue):
    seen = {queue.pickup(q) for q in range(queue.lo, queue.hi)} | {0, 1}
    return sorted({max(0, v + d) for v in seen for d in (-1, 0, 1)} | {100})


@settings(max_examples=300, deadline=None)
@given(queues(monotonic=True))
def test_monotonic_store_times_answer_the_intent(case):
    queue, per_file = case
    for t in _times_to_try(queue):
        for boundary in ("LOWER", "UPPER"):
            got = offset_in_queue_by_time(ListUnits(queue), per_file, t, BoundaryType(boundary))
            assert got == intent(queue, t, boundary) == rocketmq(queue, per_file, t, boundary), (t, boundary)


@settings(max_examples=300, deadline=None)
@given(queues(monotonic=False))
def test_any_store_times_answer_as_rocketmq(case):
    queue, per_file = case
    for t in _times_to_try(queue):
        for boundary in ("LOWER", "UPPER"):
            got = offset_in_queue_by_time(ListUnits(queue), per_file, t, BoundaryType(boundary))
            assert got == rocketmq(queue, per_file, t, boundary), (t, boundary)


def test_where_rocketmq_parts_from_the_intent():
    # A clock step back inside one file: the search lands on the unit stored at 2, and the walk
    # back stops at the 9 before it; the intent (first unit stored at or after 2) is offset 1.
    queue = Queue({q: (q * 100, t) for q, t in enumerate([1, 9, 2, 3, 4])}, 0, 5, 0)
    assert rocketmq(queue, 10, 2, "LOWER") == 2 != intent(queue, 2, "LOWER") == 1
    assert offset_in_queue_by_time(ListUnits(queue), 10, 2, BoundaryType.LOWER) == 2


def test_boundary_type_is_read_like_rocketmq_but_strictly():
    assert parse_boundary_type("lower") is BoundaryType.LOWER
    assert parse_boundary_type(BoundaryType.UPPER) is BoundaryType.UPPER
    with pytest.raises(ValueError, match="boundary_type must be 'LOWER' or 'UPPER', got 'MIDDLE'"):
        parse_boundary_type("MIDDLE")
