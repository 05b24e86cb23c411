"""rows_only: Arrow batches bounded by rows alone inside the block, the session as it was after."""
from __future__ import annotations

import sys
import threading

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException

from rocketfilter.arrow_batches import (DEFAULT_BYTES, MAX_BYTES, MAX_RECORDS, UNBOUNDED, parse_bytes,
                                        rows_only, rows_per_batch)
from rocketfilter.spark_mode import get_conf


@pytest.mark.parametrize("text, expected", [
    ("67108864b", 64 << 20), ("64m", 64 << 20), ("64MB", 64 << 20), ("1g", 1 << 30), ("1024", 1024),
    ("2k", 2048), (None, DEFAULT_BYTES), ("lots", DEFAULT_BYTES), ("", DEFAULT_BYTES)])
def test_parse_bytes(text, expected):
    assert parse_bytes(text, DEFAULT_BYTES) == expected


@pytest.mark.parametrize("max_bytes, max_records, widest, expected", [
    (64 << 20, 10_000, 300, 10_000),        # small rows: the row bound as it was
    (64 << 20, 10_000, 4 << 20, 16),        # 4 MiB bodies: 16 rows keep 64 MiB
    (64 << 20, 10_000, 1 << 30, 1),         # a row over the byte bound: one at a time
    (64 << 20, 0, 1 << 20, 64),             # no row bound: the byte bound alone
    (1 << 20, 500, 100, 500),
])
def test_rows_per_batch(max_bytes, max_records, widest, expected):
    assert rows_per_batch(max_bytes, max_records, widest) == expected


def _batch_rows(spark, n: int):
    def sizes(batches):
        for b in batches:
            yield pa.RecordBatch.from_pydict({"n": [b.num_rows]})
    return [r["n"] for r in spark.range(0, n, numPartitions=1).mapInArrow(sizes, "n long").collect()]


def test_the_block_bounds_batches_by_rows_and_restores_the_session(spark):
    keys = [MAX_BYTES, MAX_RECORDS]
    before = get_conf(spark, keys)
    with rows_only(spark, widest_row_bytes=DEFAULT_BYTES // 300):
        assert get_conf(spark, keys) == {MAX_BYTES: str(UNBOUNDED), MAX_RECORDS: "300"}
        inside = _batch_rows(spark, 1000)
    assert get_conf(spark, keys) == before
    assert inside == [300, 300, 300, 100]
    assert max(_batch_rows(spark, 1000)) == 1000   # Spark's 10,000 rows again


def test_the_session_own_bounds_are_the_budget_and_come_back(spark):
    keys = [MAX_BYTES, MAX_RECORDS]
    spark.conf.set(MAX_BYTES, "1m")
    spark.conf.set(MAX_RECORDS, "200")
    try:
        with rows_only(spark, widest_row_bytes=1 << 14):     # 64 rows of 16 KiB fill 1 MiB
            assert get_conf(spark, keys)[MAX_RECORDS] == "64"
        with rows_only(spark, widest_row_bytes=16):
            assert get_conf(spark, keys)[MAX_RECORDS] == "200"
        assert get_conf(spark, keys) == {MAX_BYTES: "1m", MAX_RECORDS: "200"}
        spark.conf.set(MAX_BYTES, str(UNBOUNDED))          # already no byte check: untouched
        with rows_only(spark, widest_row_bytes=1 << 20):
            assert get_conf(spark, keys) == {MAX_BYTES: str(UNBOUNDED), MAX_RECORDS: "200"}
    finally:
        spark.conf.unset(MAX_BYTES)
        spark.conf.unset(MAX_RECORDS)


class _Conf:
    """A session conf that refuses one key, as a Spark Connect server may."""

    def __init__(self, refused):
        self.values, self.refused = {}, refused

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        if key == self.refused:
            raise PySparkException(f"refused {key}")
        self.values[key] = value

    def unset(self, key):
        self.values.pop(key, None)


class _Session:
    def __init__(self, refused):
        self.conf = _Conf(refused)


@pytest.mark.parametrize("refused", [MAX_BYTES, MAX_RECORDS])
def test_a_refused_setting_leaves_both_as_they_were(refused):
    session = _Session(refused)
    with rows_only(session, widest_row_bytes=1 << 20):
        assert session.conf.values == {}   # never the byte check off without a row bound
    assert session.conf.values == {}


def _open(session, widest):
    block = rows_only(session, widest_row_bytes=widest)
    block.__enter__()
    return block


def test_overlapping_blocks_keep_the_lowest_bound_and_the_last_out_restores():
    session = _Session(refused=None)
    session.conf.values[MAX_RECORDS] = "500"
    narrow = _open(session, 1 << 10)            # 64 MiB / 1 KiB: the session's 500 rows
    assert session.conf.values == {MAX_BYTES: str(UNBOUNDED), MAX_RECORDS: "500"}
    wide = _open(session, 1 << 20)              # 64 rows of 1 MiB while both are open
    assert session.conf.values == {MAX_BYTES: str(UNBOUNDED), MAX_RECORDS: "64"}
    again = _open(session, 1 << 10)             # never raised while the wide block is open
    assert session.conf.values[MAX_RECORDS] == "64"
    for block in (narrow, wide):                # not in the order they opened
        block.__exit__(None, None, None)
        assert session.conf.values[MAX_BYTES] == str(UNBOUNDED)
    again.__exit__(None, None, None)
    assert session.conf.values == {MAX_RECORDS: "500"}


class _SlowConf(_Conf):
    """A conf whose reads make the interpreter switch threads every microsecond, so that blocks
    interleave between reading and setting the conf, as JVM round trips let them."""

    def get(self, key, default=None):
        sys.setswitchinterval(1e-6)
        return super().get(key, default)


def test_blocks_from_many_threads_restore_the_session():
    session = _Session(refused=None)
    session.conf = _SlowConf(refused=None)
    seen, start = [], threading.Barrier(8)

    def work():
        start.wait()
        for _ in range(200):
            with rows_only(session, widest_row_bytes=1 << 10):
                seen.append(session.conf.values.get(MAX_BYTES))

    switch = sys.getswitchinterval()
    try:
        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert session.conf.values == {}                     # the session's own settings again
    assert set(seen) == {str(UNBOUNDED)}                 # and no block ran with the byte check on
