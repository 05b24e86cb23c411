"""Promoted properties: written at put when the settings name them, added to an existing store
by ``promote`` (only the files holding them rewritten, then a metadata-only schema change), the
schema check that accepts them and nothing else, and the ``rocketfilter promote`` command."""
from __future__ import annotations

import argparse
import io

import pytest
from deltalake import DeltaTable

import rocketfilter
from rocketfilter.config import MessageStoreConfig
from rocketfilter.jobs.maintenance import promote_command
from rocketfilter.store import MessageStore
from rocketfilter.delta.table import DeltaSchemaError

TOPIC = "Promo"


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("promote") / "store"), spark,
                          MessageStoreConfig(promoted_properties="x"))
    s.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)
    s.put_messages([{"topic": TOPIC, "properties": {"x": v}} for v in ("7", "x", "+3", "1e3")])
    s.put_messages([{"topic": TOPIC, "properties": {"x": "1", "age": a}} for a in ("5", "07", "nine", "8")])
    return s


def test_settings_promote_at_put_with_the_compilers_conversions(store):
    assert store.promoted_properties() == {"x": "prop_x"}
    rows = {r.v: r for r in store.commitlog.read(store.spark).select("prop_x.*").withColumnRenamed("value", "v").collect()}
    assert (rows["7"].as_int, rows["7"].as_long, rows["7"].as_double, rows["7"].as_boolean) == (7, 7, 7.0, False)
    assert (rows["x"].as_int, rows["x"].as_double) == (None, None)      # Java throws: null
    assert (rows["+3"].as_int, rows["1e3"].as_int, rows["1e3"].as_double) == (3, None, 1000.0)


def test_promote_rewrites_only_the_files_holding_the_property(store):
    selector = "age BETWEEN 6 AND 9 OR age = 5"
    before = sorted(r.queue_offset for r in rocketfilter.read_messages(store, TOPIC, selector, "SQL92").collect())
    files = store.commitlog.refresh().files()
    version = store.commitlog.version()
    report = store.promote(["age", "x"])
    assert (report.promoted, report.already) == (["age"], ["x"])
    assert report.files_rewritten == 1 < len(files) and report.messages_rewritten == 4
    assert store.promoted_properties() == {"x": "prop_x", "age": "prop_age"}
    history = DeltaTable(store.commitlog.uri).history(limit=2)
    assert [h["version"] for h in history] == [version + 2, version + 1]
    assert [h.get("rocketfilter.operation") for h in history] == ["PROMOTE", "PROMOTE"]
    after = sorted(r.queue_offset for r in rocketfilter.read_messages(store, TOPIC, selector, "SQL92").collect())
    assert after == before and len(after) == 3   # 5, 07 and 8; "nine" does not parse
    assert store.promote("age").promoted == []    # nothing left to do


def test_the_command_promotes_and_reports(store):
    out = io.StringIO()
    args = argparse.Namespace(store=store.uri, properties="region, x", master=None)
    assert promote_command(args, spark=store.spark, out=out) == 0
    assert "promoted ['region']" in out.getvalue() and "rewrote 0 of" in out.getvalue()


def test_a_foreign_column_is_refused(spark, tmp_path):
    from deltalake.schema import Field, PrimitiveType

    s = MessageStore.open(str(tmp_path / "s"), spark)
    DeltaTable(s.commitlog.uri).alter.add_columns([Field("extra", PrimitiveType("string"))])
    with pytest.raises(DeltaSchemaError, match="unexpected \\['extra'\\]"):
        MessageStore.open(str(tmp_path / "s"), spark)


def test_the_most_frequent_user_properties_per_topic(spark):
    from rocketfilter.store.promoted import frequent_user_properties

    df = spark.createDataFrame(
        [("A", {"UNIQ_KEY": "u", "x": "1", "y": "2"}), ("A", {"UNIQ_KEY": "u", "x": "1"}),
         ("B", {"z": "1", "y": "2"}), ("B", {"z": "1"})],
        "topic string, properties map<string,string>")
    assert frequent_user_properties(df, 1) == ["x", "z"]      # UNIQ_KEY is RocketMQ's own
    assert sorted(frequent_user_properties(df, 2)) == ["x", "y", "z"]
    assert frequent_user_properties(df, 0) == []
