"""rocketfilter on a Spark Connect session (the suite's JVM serves it; see conftest.py): sessions,
the selector and tag functions, cached Columns across modes, and the Spark features the store
and the pull loop rely on (Arrow in and out, mapInArrow, applyInArrow, conf)."""
from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from rocketfilter.jobs.demo_run import run_demo, seed_messages
from rocketfilter.functions import sql92, tag_exact_filter, tag_filter
from rocketfilter.selector import parse
from rocketfilter.session import get_spark
from rocketfilter.spark_mode import column_cache_key, default_parallelism, is_connect, is_remote
from rocketfilter.delta.table import delta_spark_available

pytestmark = pytest.mark.connect


def _ids(df) -> list:
    return sorted(r.msg_id for r in df.select("msg_id").collect())


def test_get_spark_returns_a_connect_session_as_is(connect_spark, spark):
    assert is_connect(connect_spark) and not is_connect(spark)
    assert get_spark(connect_spark) is connect_spark
    assert get_spark() is connect_spark  # the active session, in Connect mode


def test_get_spark_decorates_a_connect_builder(connect_spark, connect_server):
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    connect_spark.conf.set("spark.sql.session.timeZone", "Europe/Paris")
    session = get_spark(RemoteSparkSession.builder.remote(connect_server))
    assert session is connect_spark  # getOrCreate: the same server session
    assert session.conf.get("spark.sql.session.timeZone") == "UTC"  # rocketfilter's default applied
    assert session.conf.get("spark.sql.shuffle.partitions") == "2"  # the server's own, untouched


def test_the_demo_on_connect(connect_spark):
    out = io.StringIO()
    run_demo(connect_spark, out=out)
    tag_part, sql_part = out.getvalue().split("SQL92 selector")
    assert "delivered: 7 of 10" in tag_part and "delivered: 1 of 10" in sql_part


def test_selector_and_tag_functions_on_a_connect_dataframe(connect_spark):
    messages = seed_messages(connect_spark)
    assert _ids(messages.filter(tag_filter("TAG_A || TAG_C"))) == [f"msg-{i}" for i in range(10) if i % 3 != 1]
    assert _ids(messages.filter(tag_exact_filter("TAG_B"))) == ["msg-1", "msg-4", "msg-7"]
    assert _ids(messages.filter(sql92("age >= 8 AND name IS NOT NULL"))) == ["msg-9"]
    typed = connect_spark.createDataFrame([("a", 5), ("b", 9)], "msg_id string, age int")
    assert _ids(typed.filter(sql92("age > 6", None, typed.schema))) == ["b"]


def test_cached_columns_never_cross_modes(connect_spark, spark, monkeypatch):
    selector = parse("age > 6")
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED")
    assert not is_remote()
    classic = selector.to_column("properties")
    assert column_cache_key() == ("classic", spark.sparkContext)
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    remote = selector.to_column("properties")
    assert column_cache_key() == "connect" and remote is not classic
    assert type(remote).__module__.startswith("pyspark.sql.connect")
    assert selector.to_column("properties") is remote  # cached within the mode
    assert _ids(seed_messages(connect_spark).filter(remote)) == ["msg-7", "msg-8", "msg-9"]


def _doubled(batches):
    for batch in batches:
        yield pa.RecordBatch.from_arrays([batch.column(0), pc.multiply(batch.column(1), 2)], names=["k", "v"])


def _total(table: pa.Table) -> pa.Table:
    return pa.table({"k": [table.column("k")[0].as_py()], "s": [pc.sum(table.column("v")).as_py()]})


def test_arrow_paths_and_conf_work_through_connect(connect_spark):
    df = connect_spark.createDataFrame(pa.table({"k": [1, 1, 2], "v": [1.0, 2.0, 3.0]}))
    doubled = df.mapInArrow(_doubled, df.schema)
    totals = doubled.groupBy("k").applyInArrow(_total, "k long, s double").orderBy("k").toArrow()
    assert totals.to_pydict() == {"k": [1, 2], "s": [6.0, 6.0]}
    connect_spark.conf.set("spark.rocketfilter.enablePropertyFilter", "false")
    try:
        assert connect_spark.conf.get("spark.rocketfilter.enablePropertyFilter") == "false"
    finally:
        connect_spark.conf.unset("spark.rocketfilter.enablePropertyFilter")


def test_connect_safe_session_questions(connect_spark, spark):
    assert default_parallelism(connect_spark) == spark.sparkContext.defaultParallelism
    assert delta_spark_available(connect_spark) is False
