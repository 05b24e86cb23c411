"""Bloom filter parameters, bit positions and bitmaps (SEMANTICS §10) against bloom_cases.json."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from .conftest import conformance
from rocketfilter.bloom import BloomFilter, BloomFilterData, bitmap_hit_column, is_hit

BLOOM = "bloom_cases.json"


@pytest.mark.parametrize("case", conformance.params(BLOOM, "bloom"))
def test_bloom_case(case):
    if "error" in case:
        with pytest.raises(ValueError) as info:
            BloomFilter(case["f"], case["n"]).bit_positions(case["key"])
        java_message = case["error"].split(": ", 1)[1]
        assert java_message in str(info.value), f"{case['id']}: got {info.value!r}, want {case['error']!r}"
        return
    bf = BloomFilter(case["f"], case["n"])
    positions = bf.bit_positions(case["key"])
    got = (bf.k, bf.m, positions, bf.bitmap([positions]).hex())
    want = (case["k"], case["m"], case["bitPos"], case["bitmap_hex"])
    assert got == want, f"{case['id']} key={case['key']!r}: got (k, m, bitPos, bitmap)={got}, want {want}"
    assert case["bitNum"] == bf.m
    assert is_hit(bf.bitmap([positions]), positions)


def test_spec_examples():
    bf = BloomFilter()
    assert (bf.f, bf.n, bf.k, bf.m) == (20, 32, 3, 112)
    assert bf.bit_positions("CID_abc_efg#TopicTest") == [22, 53, 14]
    assert bf.bit_positions("") == [0, 0, 0]
    assert bf.bloom_data("CID_abc_efg", "TopicTest") == BloomFilterData([22, 53, 14], 112)
    assert [(BloomFilter(f, n).k, BloomFilter(f, n).m) for f, n in [(20, 64), (10, 20), (1, 300)]] == [
        (3, 216), (4, 96), (7, 2880)]


def _scenario_bitmap(bf, scenario):
    """The bitmap dispatch computes: null without registered groups, else the TRUE groups' bits."""
    groups = [g for g, ok in zip(scenario["groups"], scenario["registered"]) if ok]
    if not groups:
        return None
    return bf.bitmap(g["bitPos"] for g in groups if g["raw"] is True)


@pytest.mark.parametrize("scenario", conformance.params(BLOOM, "bitmap_scenarios"))
def test_bitmap_scenario(scenario):
    bf = BloomFilter(20, 32)
    assert (bf.k, bf.m) == (scenario["k"], scenario["m"])
    for group, registered in zip(scenario["groups"], scenario["registered"]):
        if registered:
            data = bf.bloom_data(group["group"], scenario["topic"])
            assert data.bit_pos == group["bitPos"], (
                f"{scenario['id']} {group['group']}: got {data.bit_pos}, want {group['bitPos']}")
            assert bf.is_valid(data)
        else:
            assert group["bitPos"] is None, scenario["id"]
    bitmap = _scenario_bitmap(bf, scenario)
    got = None if bitmap is None else bitmap.hex()
    assert got == scenario["bitmap_hex"], f"{scenario['id']}: got {got}, want {scenario['bitmap_hex']}"
    if bitmap is not None:
        set_bits = [p for p in range(bf.m) if is_hit(bitmap, [p])]
        assert set_bits == scenario["bitmap_set_bits"], scenario["id"]
        for group in scenario["groups"]:
            if group["bitPos"] is not None:  # the CQ check rejects only on a proven miss
                assert is_hit(bitmap, group["bitPos"]) == group["cq_hit"], f"{scenario['id']} {group['group']}"


def test_bitmap_scenarios_in_spark(spark):
    """Each registered group's cq_hit, read from its scenario's bitmap by bitmap_hit_column with
    the positions as an array column, and (for a few groups) as literals."""
    bf = BloomFilter()
    rows, want = [], {}
    for scenario in conformance.cases(BLOOM, "bitmap_scenarios"):
        bitmap = _scenario_bitmap(bf, scenario)
        for group in scenario["groups"]:
            if group["bitPos"] is not None and bitmap is not None:
                key = f"{scenario['id']}/{group['group']}"
                rows.append((key, bytearray(bitmap), group["bitPos"]))
                want[key] = group["cq_hit"]
    literal = F  # a flat CASE over a few groups: literal positions are unrolled into the plan
    for key, _, positions in rows[:6]:
        literal = literal.when(F.col("key") == key, bitmap_hit_column("bitmap", positions))
    df = spark.createDataFrame(rows, "key string, bitmap binary, pos array<int>")
    out = df.select("key", bitmap_hit_column("bitmap", "pos").alias("hit"), literal.alias("literal")).collect()
    got = {r.key: r.hit for r in out}
    wrong = {k: (got.get(k), want[k]) for k in want if got.get(k) != want[k]}
    assert not wrong, f"(got, want) per scenario/group: {wrong}"
    for r in out[:6]:
        assert r.literal == want[r.key], f"{r.key}: literal positions gave {r.literal}, want {want[r.key]}"


def test_bitmap_hit_column_edges(spark):
    bf = BloomFilter()
    full = bf.bitmap([[0, 7, 8, 111]])
    bitmaps = [bytearray(full), bytearray(full[:1]), None, bytearray(bf.bitmap([]))]
    df = spark.createDataFrame([(i, b, [8, 111], [-1, 0], []) for i, b in enumerate(bitmaps)],
                               "i int, b binary, p array<int>, neg array<int>, none array<int>")
    cols = [bitmap_hit_column("b", [0, 7]), bitmap_hit_column(F.col("b"), [8, 111]), bitmap_hit_column("b", []),
            bitmap_hit_column("b", "p"), bitmap_hit_column("b", F.col("neg")), bitmap_hit_column("b", "none")]
    got = [tuple(r[1:]) for r in sorted(df.select("i", *cols).collect())]
    assert got == [
        (True, True, True, True, False, True),
        (True, False, True, False, False, True),     # a short bitmap: missing bytes are unset
        (None, None, None, None, None, None),
        (False, False, True, False, False, True),
    ]
    with pytest.raises(ValueError, match="negative"):
        bitmap_hit_column("b", [-1])


def test_python_bitmap_validation():
    bf = BloomFilter()
    with pytest.raises(ValueError, match="outside"):
        bf.bitmap([[112]])
    with pytest.raises(ValueError, match="outside"):
        is_hit(b"\xff", [8])
    assert not bf.is_valid(BloomFilterData([1, 2], 112))
    assert not bf.is_valid(BloomFilterData([1, 2, 3], 216))
    assert not bf.is_valid(None)
    with pytest.raises(TypeError):
        BloomFilter(20.5, 32)
