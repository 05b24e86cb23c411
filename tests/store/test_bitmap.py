"""CommitLogDispatcherCalcBitMap (SEMANTICS §10.4): the Python bitmap against the oracle, and the
Spark Column against the Python bitmap."""
from __future__ import annotations

import pytest
from pyspark.sql import types as T

from ..conftest import conformance
from rocketfilter.bloom import BloomFilterData
from rocketfilter.store.bitmap import bitmap_bits, calc_bitmap, calc_bitmap_column
from rocketfilter.store.filter_data import ConsumerFilterManager

WORKED = [("G1", "a > 1"), ("G2", "a < 1"), ("G3", "b = 1"), ("G4", "a >")]


def manager(groups, topic: str = "T") -> ConsumerFilterManager:
    m = ConsumerFilterManager(clock=lambda: 1)
    for group, expr in groups:
        m.register(topic, group, expr, "SQL92", 1)
    return m


def test_worked_example():
    m = manager(WORKED)
    assert m.get("T", "G4") is None                      # does not compile: not registered
    bitmap = calc_bitmap(m.filter_datas("T"), m.bloom, {"a": "5"})
    assert bitmap.hex() == "0000002000000100020000000000"
    assert bitmap_bits(bitmap) == [29, 48, 65] == sorted(m.get("T", "G1").bloom_filter_data.bit_pos)


def test_no_filter_data_means_no_bitmap():
    m = manager([])
    assert calc_bitmap(m.filter_datas("T"), m.bloom, {"a": "5"}) is None
    assert calc_bitmap_column(m.filter_datas("T"), m.bloom) is None
    assert calc_bitmap([], m.bloom, None) is None


def test_dead_filter_data_still_counts_until_cleaned():
    m = manager(WORKED)
    m.unregister("G1")
    assert m.get("T", "G1").is_dead()
    assert calc_bitmap(m.filter_datas("T"), m.bloom, {"a": "5"}).hex() == "0000002000000100020000000000"


def test_all_false_gives_zeros_not_none():
    m = manager(WORKED)
    assert calc_bitmap(m.filter_datas("T"), m.bloom, None) == bytes(14)


@pytest.mark.parametrize("scenario", conformance.params("bloom_cases.json", "bitmap_scenarios"))
def test_oracle_scenarios(scenario):
    m = manager([(g["group"], g["expr"]) for g in scenario["groups"]], scenario["topic"])
    registered = [m.get(scenario["topic"], g["group"]) is not None for g in scenario["groups"]]
    assert registered == scenario["registered"]
    bitmap = calc_bitmap(m.filter_datas(scenario["topic"]), m.bloom, scenario["props"])
    assert (None if bitmap is None else bitmap.hex()) == scenario["bitmap_hex"], scenario["id"]
    if bitmap is not None:
        assert bitmap_bits(bitmap) == scenario["bitmap_set_bits"]


def test_invalid_bloom_data_aborts_the_bitmap_only_when_it_would_be_set():
    m = manager(WORKED)
    m.get("T", "G2").bloom_filter_data = BloomFilterData([1, 2, 3], 64)
    assert calc_bitmap(m.filter_datas("T"), m.bloom, {"a": "5"}).hex() == "0000002000000100020000000000"
    assert calc_bitmap(m.filter_datas("T"), m.bloom, {"a": "0"}) is None   # G2 TRUE -> hashTo throws


PROPS = T.StructType([T.StructField("properties", T.MapType(T.StringType(), T.StringType()))])


def test_column_matches_python(spark):
    """One manager holding every oracle scenario's groups on one topic, and every scenario's
    properties as rows (plus a few extra), so each row sets several groups' bits."""
    scenarios = conformance.cases("bloom_cases.json", "bitmap_scenarios")
    groups = [(g["group"], g["expr"]) for s in scenarios for g in s["groups"]][:40]
    m = manager(groups + WORKED)
    m.get("T", "G3").bloom_filter_data = BloomFilterData([1, 2, 3], 64)       # invalid: poisons b = 1 rows
    rows = [(s["props"],) for s in scenarios] + [({"a": "5"},), ({"b": "1"},), (None,), ({},)]
    column = calc_bitmap_column(m.filter_datas("T"), m.bloom, "properties")
    got = [r[0] for r in spark.createDataFrame(rows, PROPS).select(column).collect()]
    want = [calc_bitmap(m.filter_datas("T"), m.bloom, props) for (props,) in rows]
    assert [None if g is None else bytes(g) for g in got] == want
    assert any(w is None for w in want) and any(w and any(w) for w in want)


def test_column_without_usable_groups_is_zeros(spark):
    m = manager([("G1", "a > 1")])
    m.get("T", "G1").compiled = None                                          # e.g. loaded, no longer compiles
    column = calc_bitmap_column(m.filter_datas("T"), m.bloom)
    got = spark.createDataFrame([({"a": "5"},)], PROPS).select(column).collect()[0][0]
    assert bytes(got) == bytes(14) == calc_bitmap(m.filter_datas("T"), m.bloom, {"a": "5"})
