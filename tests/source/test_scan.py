"""The read path without Spark: the driver's plan and each task's Arrow read, against the Python
model of what a consumer receives, for many subscriptions and offset ranges; with tiny tasks, so
a read is many partitions that must tile the CommitLog (every message once)."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest

from rocketfilter.source.datasource import open_store, scan_spec
from rocketfilter.source.options import SourceOptions
from rocketfilter.source.plan import plan_scan
from rocketfilter.source.scan import read_partition
from rocketfilter.source.schema import source_schema
from rocketfilter.source.offsets import queue_bounds

from .conftest import TOPIC
from .model import consumer_receives

SUBSCRIPTIONS = [
    ("*", "TAG"), ("TagA", "TAG"), ("TagA || BB", "TAG"), ("Aa", "TAG"), ("日本", "TAG"),
    ("TagC || TagB || nope", "TAG"), (" * ", "TAG"), ("TagA||TagB", "TAG"),
    ("a > 50", "SQL92"), ("region IN ('eu', 'us') AND a < 100", "SQL92"), ("price > 10.0", "SQL92"),
    ("a BETWEEN 10 AND 20 OR NOT (region = 'eu')", "SQL92"), ("region IS NULL", "SQL92"),
    ("a = 'x' OR a > 100", "SQL92"), ("TAGS = 'TagA'", "SQL92"), ("region STARTSWITH 'a'", "SQL92"),
]


def _options(store, sub, kind):
    return SourceOptions.parse({"store": store.uri, "topic": TOPIC, "subExpression": sub,
                                "expressionType": kind})


def scan(store, options, ranges, partition_rows=32):
    """(keys delivered, number of partitions) of a read, task by task."""
    spec = scan_spec(options, source_schema())
    parts = plan_scan(open_store(options), TOPIC, ranges, partition_rows=partition_rows)
    keys = []
    for part in parts:
        for batch in read_partition(part, spec):
            assert batch.schema == spec.schema
            keys += list(zip(batch.column("queue_id").to_pylist(), batch.column("queue_offset").to_pylist()))
    return keys, len(parts)


def _random_ranges(rng, bounds):
    out = {}
    for q, (lo, hi) in bounds.items():
        a, b = sorted(rng.randint(lo, hi) for _ in range(2))
        out[q] = (a, b)
    return out


@pytest.mark.parametrize("sub,kind", SUBSCRIPTIONS, ids=[f"{k}:{s}" for s, k in SUBSCRIPTIONS])
def test_tasks_deliver_what_a_consumer_receives(source_store, source_rows, sub, kind):
    options = _options(source_store, sub, kind)
    bounds = queue_bounds(source_store, TOPIC)
    rng = random.Random(sub)
    for ranges in [{q: b for q, b in bounds.items()}] + [_random_ranges(rng, bounds) for _ in range(3)]:
        keys, n_parts = scan(source_store, options, ranges)
        assert len(keys) == len(set(keys)), "a message was delivered twice"
        assert set(keys) == consumer_receives(source_rows, TOPIC, sub, kind, ranges), ranges
    assert n_parts >= 1


def test_a_read_is_many_tasks_that_tile_the_commitlog(source_store, source_rows):
    options = _options(source_store, "*", "TAG")
    full = {q: b for q, b in queue_bounds(source_store, TOPIC).items()}
    keys, n_parts = scan(source_store, options, full, partition_rows=16)
    assert n_parts > 5
    assert sorted(keys) == sorted(consumer_receives(source_rows, TOPIC, "*", "TAG", full))
    one, single = scan(source_store, options, full, partition_rows=1 << 30)
    assert single == 1 and sorted(one) == sorted(keys)


def test_rows_carry_the_message(source_store, source_rows):
    options = _options(source_store, "TagA", "TAG")
    spec = scan_spec(options, source_schema())
    parts = plan_scan(open_store(options), TOPIC, dict(queue_bounds(source_store, TOPIC)))
    table = pa.Table.from_batches([b for p in parts for b in read_partition(p, spec)])
    by_offset = {r["commitlog_offset"]: r for r in source_rows}
    assert table.num_rows > 0
    for row in table.to_pylist():
        stored = by_offset[row["commitlog_offset"]]
        for name in ("topic", "queue_id", "queue_offset", "msg_id", "tags", "keys", "body", "flag",
                     "sys_flag", "reconsume_times"):
            assert row[name] == stored[name], name
        assert dict(row["properties"]) == dict(stored["properties"])
        assert int(row["store_timestamp"].timestamp() * 1000) == stored["store_timestamp"]
        assert int(row["born_timestamp"].timestamp() * 1000) == stored["born_timestamp"]


def test_empty_ranges_plan_no_task(source_store):
    options = _options(source_store, "*", "TAG")
    bounds = queue_bounds(source_store, TOPIC)
    assert plan_scan(open_store(options), TOPIC, {q: (hi, hi) for q, (_, hi) in bounds.items()}) == []


def test_a_narrow_range_reads_only_the_row_groups_that_hold_it(source_store, source_rows):
    from rocketfilter.delta import footers

    options = _options(source_store, "*", "TAG")
    _, hi = queue_bounds(source_store, TOPIC)[0]
    parts = plan_scan(open_store(options), TOPIC, {0: (hi - 3, hi)})
    planned = [g for p in parts for _, groups in p.commitlog_groups for g in groups]
    total = sum(len(footers.row_group_stats(f.path)) for f in source_store.commitlog.files())
    # The plan prunes by the ConsumeQueue's row-group statistics: a group of 8 entries of queue 0
    # spans 64 CommitLog rows (4 queues, 2 topics), at most 5 of the CommitLog's 16-row groups.
    assert -1 not in planned and 1 <= len(planned) <= 5 and total >= 15
    keys, _ = scan(source_store, options, {0: (hi - 3, hi)})
    assert sorted(keys) == [(0, o) for o in range(hi - 3, hi)
                            if (0, o) in consumer_receives(source_rows, TOPIC, "*", "TAG")]
