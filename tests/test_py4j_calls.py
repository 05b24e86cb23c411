"""rocketfilter.py4j_calls: pyspark's JVM lookups are cached per JVM, and Columns built through
the cache answer as before."""
from __future__ import annotations

from pyspark.sql import functions as F

from rocketfilter import py4j_calls


def _commands(spark, monkeypatch, build):
    client = spark.sparkContext._gateway._gateway_client
    sent = []
    original = type(client).send_command

    def counting(self, command, *args, **kwargs):
        sent.append(command.split("\n")[:3])   # kind, target, member (a call's method name)
        return original(self, command, *args, **kwargs)

    monkeypatch.setattr(type(client), "send_command", counting)
    try:
        build()
    finally:
        monkeypatch.setattr(type(client), "send_command", original)
    return sent


def test_lookups_are_cached_and_columns_answer_the_same(spark, monkeypatch):
    assert py4j_calls.cache_jvm_lookups(), "this pyspark's helpers changed: the cache is not installed"
    monkeypatch.setattr(py4j_calls, "_MEMBERS", type(py4j_calls._MEMBERS)())

    def build():
        return F.coalesce(F.when(F.col("a") > 1, F.lit("big")), F.lit("small"))

    first = _commands(spark, monkeypatch, build)
    again = _commands(spark, monkeypatch, build)
    # the first build also looked up when, col, lit, coalesce and PythonUtils.toSeq ("r": reflection)
    assert [c[0] for c in again].count("r") == 0 < [c[0] for c in first].count("r")
    assert len(again) < len(first)
    df = spark.createDataFrame([(0,), (2,), (None,)], "a int")
    assert [r[0] for r in df.select(build()).collect()] == ["small", "big", "small"]


def test_a_new_jvm_view_gets_its_own_handles(monkeypatch):
    monkeypatch.setattr(py4j_calls, "_MEMBERS", type(py4j_calls._MEMBERS)())

    class View:   # stands for a gateway's JVM view: a relaunched JVM has a new one
        pass

    old, new = View(), View()
    assert py4j_calls._member(old, "lit", lambda: "old handle") == "old handle"
    assert py4j_calls._member(old, "lit", lambda: "looked up again") == "old handle"
    assert py4j_calls._member(new, "lit", lambda: "new handle") == "new handle"
    assert py4j_calls._member(None, "lit", lambda: "asked pyspark") == "asked pyspark"   # no JVM
    assert len(py4j_calls._MEMBERS) == 2


def test_short_lists_go_over_in_one_call_and_the_rest_as_before(spark, monkeypatch):
    from pyspark.sql.classic import column as classic_column

    assert py4j_calls.cache_jvm_lookups()
    sc = spark.sparkContext
    cols = [F.lit(i) for i in range(3)]
    sent = _commands(spark, monkeypatch, lambda: F.array(*cols))
    assert ["c", "add"] not in [[c[0], c[-1]] for c in sent]   # no element-wise list
    for items in (["a", None, "c"], [str(i) for i in range(12)], ["x"]):   # a null, over 10, one
        seq = classic_column._to_seq(sc, items)
        assert [seq.apply(i) for i in range(seq.length())] == items
    df = spark.createDataFrame([(1, 2)], "a int, b int")
    assert df.select(F.array(*[F.col("a") + i for i in range(12)]).alias("x")).first().x == list(range(1, 13))
