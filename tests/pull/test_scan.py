"""The pieces a pull's reads stand on: footer statistics, the small-query settings, the reused
DataFrames and Columns, and a SQL92 pull whose bitmap keeps CommitLog rows unread."""
from __future__ import annotations

import pytest

from rocketfilter.config import BrokerConfig
from rocketfilter.pull.filter import ExpressionMessageFilter
from rocketfilter.pull.scan import SMALL_QUERY_CONF, small_query_conf
from rocketfilter.selector import parse
from rocketfilter.delta import footers
from rocketfilter.store import MessageStore
from rocketfilter.delta.table import _where_column
from rocketfilter.tags import build_subscription


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("scan") / "s"), spark)
    s.create_topic("S", read_queue_nums=2, write_queue_nums=2)
    s.put_messages([{"topic": "S", "queue_id": i % 2, "body": "b"} for i in range(50)])
    return s


def test_footer_bounds_cover_the_window(store):
    files = [f.path for f in store.consumequeue.files()]
    rows = store.consumequeue.read(store.spark, [("queue_id", "=", 1), ("queue_offset", ">=", 5),
                                                 ("queue_offset", "<", 15)]).collect()
    found = footers.bounds(files, [("queue_id", "=", 1), ("queue_offset", ">=", 5), ("queue_offset", "<", 15)],
                           ["commitlog_offset", "size"])
    lo, hi = found["commitlog_offset"]
    assert len(rows) == 10 and all(lo <= r["commitlog_offset"] <= hi for r in rows)
    assert found["size"][1] >= max(r["size"] for r in rows)
    assert footers.bounds(files, [("queue_offset", ">=", 10_000)], ["commitlog_offset"]) == {}
    assert footers.bounds(files, [], ["no_such_column"]) is None
    assert footers.bounds([files[0] + ".missing"], [], ["commitlog_offset"]) is None


def test_small_query_conf_restores_the_session(spark):
    from ..conftest import spark_engine

    with spark_engine(spark, "generated"):   # the suite's session interprets by default
        with small_query_conf(spark):
            assert {k: spark.conf.get(k) for k in SMALL_QUERY_CONF} == SMALL_QUERY_CONF
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"


def test_where_column_mixes_sql_integers_and_column_strings(spark):
    df = spark.createDataFrame([("a'b", 1, 5), ("x", 1, 5), ("a'b", 2, 9)], "topic string, q int, o bigint")
    cond = _where_column([("topic", "=", "a'b"), ("q", "==", 1), ("o", ">=", 5), ("o", "in", [5, 6])])
    assert df.filter(cond).count() == 1
    assert _where_column([]) is None


def test_reads_reuse_dataframes_and_selector_columns(store):
    table, spark = store.commitlog, store.spark
    paths = tuple(f.path for f in table.files())
    assert table._frame(spark, paths) is table._frame(spark, paths)
    selector = parse("a > 1")
    assert selector.to_column("properties") is selector.to_column("properties")
    assert selector.to_column("p") is not selector.to_column("properties")


def test_a_missing_commitlog_row_is_named(store):
    import numpy as np

    from rocketfilter.pull.scan import WindowScan

    scan = WindowScan(*(np.zeros(0, np.int64),) * 3, np.zeros(0, bool))
    with pytest.raises(LookupError, match=r"commit-log offsets \[999999999\]"):
        scan.messages(store, np.array([999_999_999], np.int64))


def test_sql92_bitmaps_keep_commitlog_rows_unread(spark, tmp_path):
    s = MessageStore.open(str(tmp_path / "s"), spark, broker_config=BrokerConfig(enable_calc_filter_bit_map=True))
    s.pull_engine = "spark"   # this module holds rocketfilter.pull.scan, Spark's reads
    s.create_topic("B", read_queue_nums=1, write_queue_nums=1)
    s.filter_manager.register("B", "G", "a > 1", "SQL92", 1)  # before the messages: they get bitmaps
    s.put_messages([{"topic": "B", "properties": {"a": str(i % 4)}, "body": "b"} for i in range(40)])
    sub = build_subscription("B", "a > 1", "SQL92")
    message_filter = ExpressionMessageFilter(sub, s.filter_manager.get("B", "G"), s.filter_manager)
    assert message_filter.uses_bitmap
    result = s.get_message("G", "B", 0, 0, 32, message_filter)
    assert result.message_queue_offsets == [i for i in range(40) if i % 4 > 1]
    funnel = result.funnel
    assert funnel.bitmap_skipped > 0 and funnel.commitlog_read == 40 - funnel.bitmap_skipped
    # The ConsumeQueue is read first, the CommitLog then only for the entries the bitmap passed.
    assert result.spark_jobs >= 2
