"""``get_offset_in_queue_by_time`` on a store against the plain models, and the files it reads.

One store holds queues with store times that never decrease (with runs of equal times), one whose
times jump back and forth, one whose messages all expired, one that never received a message,
and expired prefixes both cleaned (min offsets moved) and not yet cleaned. A broker's consume-queue
file holds 50 units here, a ConsumeQueue Delta file at most 16 rows in row groups of 4.
"""
from __future__ import annotations

import random

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.store import MessageStore
from rocketfilter.store import cq_units
from tests.store.offsets_model import Queue, intent, rocketmq
from tests.store.store_times import RECORD_SIZE, put_with_store_times

UNITS_PER_FILE = 50
T0 = 1_700_000_000_000
MONOTONIC = [("TimeA", 0), ("TimeA", 1), ("TimeA", 2), ("TimeB", 0), ("TimeB", 1), ("Run", 0), ("Big", 0)]
ANY_ORDER = [("TimeA", 3)]


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    config = MessageStoreConfig(consume_queue_rows_per_file=16, consume_queue_row_group_rows=4,
                                mapped_file_size_consume_queue=UNITS_PER_FILE * 20,
                                mapped_file_size_commit_log=10 * RECORD_SIZE)
    store = MessageStore.open(str(tmp_path_factory.mktemp("by_time") / "s"), spark, config)
    rng = random.Random(20240501)
    clock = [T0]

    def tick():
        clock[0] += rng.choice((0, 0, 1, 2))
        return clock[0]

    def batch(n, queues, early=()):
        out = []
        for i in range(n):
            topic, q = rng.choice(list(early) if i < 20 and early else queues)
            t = tick()
            out.append((topic, q, t + rng.randint(-40, 40) if (topic, q) in ANY_ORDER else t))
        return out

    spread = [("TimeA", 0), ("TimeA", 1), ("TimeA", 2), ("TimeA", 3)]
    messages = batch(80, spread, early=spread + [("TimeB", 0)])
    run_times = [T0 + 500] * 5 + [T0 + 501] * 25 + [T0 + 503] * 20 + [T0 + 504] * 10
    clock[0] = T0 + 400
    messages += batch(40, spread) + [("Run", 0, t) for t in run_times]
    clock[0] = T0 + 1000
    messages += [("Big", 0, T0 + 1000 + i) for i in range(200)] + batch(10, spread)
    put_with_store_times(store, messages)   # one put, one dispatch: the machine is shared
    store.expire(before_commitlog_offset=30 * RECORD_SIZE)                              # cleaned
    store.expire(before_commitlog_offset=100 * RECORD_SIZE, clean_consume_queue=False)  # not yet
    return store


@pytest.fixture(scope="module")
def queues(store):
    """Each queue as the plain model sees it: every unit the ConsumeQueue table holds."""
    rows = store.consumequeue.read(store.spark).select(
        "topic", "queue_id", "queue_offset", "commitlog_offset", "store_timestamp").collect()
    min_phy = store.commitlog_state().min_commitlog_offset
    out = {}
    for topic, q in MONOTONIC + ANY_ORDER:
        units = {r["queue_offset"]: (r["commitlog_offset"], r["store_timestamp"])
                 for r in rows if (r["topic"], r["queue_id"]) == (topic, q)}
        lo, hi = store.consumequeue_state().offsets(topic, q) or (0, 0)
        out[(topic, q)] = Queue(units, lo, hi, min_phy)
    return out


def _times(queue: Queue, rng: random.Random, n: int = 14):
    seen = {queue.pickup(q) for q in range(queue.lo, queue.hi)} - {-1}
    near = sorted({v + d for v in seen for d in (-1, 0, 1)})
    return [0, T0 - 1, T0 + 10_000] + rng.sample(near, min(n, len(near)))


def test_the_store_has_every_kind_of_queue(store, queues):
    assert queues[("TimeB", 1)].hi == 0                                   # never received a message
    assert queues[("TimeB", 0)].hi > 0 and queues[("TimeB", 0)].lo == queues[("TimeB", 0)].hi  # all expired
    stale = [k for k, v in queues.items() if v.hi > v.lo and v.pickup(v.lo) == -1]
    assert stale, "an expired prefix the clean-up has not reached"
    assert max(v.hi for v in queues.values()) > 2 * UNITS_PER_FILE        # several broker files


@pytest.mark.parametrize("key", MONOTONIC + ANY_ORDER, ids=lambda k: f"{k[0]}-{k[1]}")
def test_offsets_by_time_agree_with_the_plain_models(store, queues, key):
    queue, rng = queues[key], random.Random(str(key))
    for t in _times(queue, rng):
        for boundary in ("LOWER", "UPPER"):
            got = store.get_offset_in_queue_by_time(key[0], key[1], t, boundary)
            assert got == rocketmq(queue, UNITS_PER_FILE, t, boundary), (t, boundary)
            if key in MONOTONIC:
                assert got == intent(queue, t, boundary), (t, boundary)


def test_the_edges(store, queues):
    big = queues[("Big", 0)]
    first, last = T0 + 1000, T0 + 1199
    assert store.get_offset_in_queue_by_time("Big", 0, first - 5) == big.lo           # before the first
    assert store.get_offset_in_queue_by_time("Big", 0, first - 5, "UPPER") == big.lo
    assert store.get_offset_in_queue_by_time("Big", 0, last + 5) == big.hi            # after the last
    assert store.get_offset_in_queue_by_time("Big", 0, last + 5, "UPPER") == big.hi - 1
    assert store.get_offset_in_queue_by_time("TimeB", 1, T0) == 0                      # empty queue
    assert store.get_offset_in_queue_by_time("NoSuchTopic", 0, T0) == 0
    gone = queues[("TimeB", 0)]                                                        # all expired
    assert store.get_offset_in_queue_by_time("TimeB", 0, T0) == gone.hi
    assert store.get_offset_in_queue_by_time("TimeB", 0, T0, "UPPER") == gone.hi
    run = queues[("Run", 0)]                                                           # equal times
    assert store.get_offset_in_queue_by_time("Run", 0, T0 + 501) == run.lo + 5
    assert store.get_offset_in_queue_by_time("Run", 0, T0 + 501, "UPPER") == run.lo + 29
    assert store.get_offset_in_queue_by_time("Run", 0, T0 + 502) == run.lo + 30       # between runs
    assert store.get_offset_in_queue_by_time("Run", 0, T0 + 502, "UPPER") == run.lo + 29


@pytest.fixture
def opened(monkeypatch):
    """The ConsumeQueue data files a lookup opens (footer or rows)."""
    paths = set()
    row_groups, read = cq_units._row_groups, cq_units._read
    monkeypatch.setattr(cq_units, "_row_groups", lambda path: paths.add(path) or row_groups(path))
    monkeypatch.setattr(cq_units, "_read", lambda tables, path, g: paths.add(path) or read(tables, path, g))
    return paths


def test_a_lookup_opens_only_the_files_that_can_hold_the_answer(store, opened):
    files = store.consumequeue.files([("topic", "=", "Big"), ("queue_id", "=", 0)])
    assert len(files) >= 10
    for t in (T0 + 1000 + 17, T0 + 1000 + 130, T0 + 1000 + 199):
        for boundary in ("LOWER", "UPPER"):
            opened.clear()
            offset = store.get_offset_in_queue_by_time("Big", 0, t, boundary)
            assert offset == t - (T0 + 1000)
            assert 1 <= len(opened) <= 2, (t, boundary, sorted(opened))
            holder = [f.path for f in files if f.min["store_timestamp"] <= t <= f.max["store_timestamp"]]
            assert set(holder) <= opened
    opened.clear()
    assert store.get_offset_in_queue_by_time("Big", 0, T0 + 5000) == 200
    assert not opened   # after the last message: the statistics alone answer


def test_bad_arguments_are_refused(store):
    with pytest.raises(ValueError, match="timestamp_ms must be an integer number of milliseconds"):
        store.get_offset_in_queue_by_time("Big", 0, -1)
    with pytest.raises(ValueError, match="boundary_type must be 'LOWER' or 'UPPER'"):
        store.get_offset_in_queue_by_time("Big", 0, T0, "BOTH")
    with pytest.raises(ValueError, match="queue_id must be an integer from 0"):
        store.get_offset_in_queue_by_time("Big", -1, T0)
    with pytest.raises(ValueError, match="illegal characters"):
        store.get_offset_in_queue_by_time("../Big", 0, T0)
