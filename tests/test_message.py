"""The properties string (SEMANTICS §9.1) against extra_cases.json, in Python and as Columns,
plus random maps through both."""
from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

from .conftest import conformance
from rocketfilter.message import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    java_utf8_bytes,
    normalize_properties,
    properties_to_string,
    string_to_properties,
)
from rocketfilter.message_columns import (
    normalize_properties_column,
    properties_to_string_column,
    string_to_properties_column,
)

EXTRA = "extra_cases.json"
RAW_CASES = [c for c in conformance.params(EXTRA, "props") if "raw" in c.values[0]]
MAP_CASES = [c for c in conformance.params(EXTRA, "props") if "map" in c.values[0]]


def test_separators():
    assert (NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR) == ("\u0001", "\u0002")


def test_every_props_case_is_covered():
    assert len(RAW_CASES) + len(MAP_CASES) == len(conformance.cases(EXTRA, "props")) > 0


@pytest.mark.parametrize("case", RAW_CASES)
def test_raw_parse_python(case):
    got = string_to_properties(case["raw"])
    assert got == case["parsed"], f"{case['id']} raw={case['raw']!r}: got {got}, want {case['parsed']}"


@pytest.mark.parametrize("case", MAP_CASES)
def test_map_round_trip_python(case):
    got = normalize_properties(case["map"])
    assert got == case["roundtrip"], f"{case['id']}: got {got}, want {case['roundtrip']}"
    assert got == case["decodeProperties"], f"{case['id']}: got {got}, want {case['decodeProperties']}"


@pytest.fixture(scope="module")
def spark_props(spark):
    """Every props case through the Column functions in one job: {id: (parsed raw, normalized map)}.
    A row with neither input checks that nulls stay null."""
    rows = [(c.values[0]["id"], c.values[0].get("raw"), c.values[0].get("map")) for c in RAW_CASES + MAP_CASES]
    rows.append(("nulls", None, None))
    df = spark.createDataFrame(rows, "id string, raw string, props map<string,string>")
    out = df.select(
        "id",
        string_to_properties_column("raw").alias("parsed"),
        normalize_properties_column(F.col("props")).alias("normalized"),
        properties_to_string_column("props").alias("wire"),
    ).collect()
    return {r.id: (r.parsed, r.normalized, r.wire) for r in out}


@pytest.mark.parametrize("case", RAW_CASES)
def test_raw_parse_spark(spark_props, case):
    got = spark_props[case["id"]][0]
    assert got == case["parsed"], f"{case['id']} raw={case['raw']!r}: got {got}, want {case['parsed']}"


@pytest.mark.parametrize("case", MAP_CASES)
def test_map_round_trip_spark(spark_props, case):
    got = spark_props[case["id"]][1]
    assert got == case["roundtrip"], f"{case['id']}: got {got}, want {case['roundtrip']}"


def test_null_map_and_string_stay_null_in_spark(spark_props):
    assert spark_props["nulls"] == (None, None, None)


@pytest.mark.parametrize(
    "raw, parsed",
    [
        ("", {}), ("a\u0001\u0002", {}), ("\u0001\u0001\u0002", {}), ("ab", {}),
        ("a\u0001b\u0001c", {"a": "b\u0001c"}),           # values may hold U+0001
        ("a\u0001bb\u0002\u0002\u0002c\u0001d", {"a": "bb", "c": "d"}),
        ("\U0001F600\u0001\U0001F600", {"\U0001F600": "\U0001F600"}),
        ("a\u0001\U0001F600", {"a": "\U0001F600"}),
        ("x\u0002y\u0001z", {"y": "z"}),
    ],
)
def test_parse_edges(raw, parsed):
    assert string_to_properties(raw) == parsed


def test_serialize_skips_none_values_and_writes_null_keys():
    assert properties_to_string({"a": "1", "b": None, None: "x"}) == "a\u00011\u0002null\u0001x\u0002"
    assert properties_to_string({}) == "" and properties_to_string(None) == ""


def test_corrupting_value_matches_spec_example():
    assert normalize_properties({"n": "a\u0002b\u0001c"}) == {"n": "a", "b": "c"}
    assert normalize_properties({"a": ""}) == {}


def test_lone_surrogates_reach_the_broker_as_question_marks():
    assert java_utf8_bytes("\ud800") == b"?"
    assert java_utf8_bytes("\ud83d" + "\ude00") == "\U0001F600".encode("utf-8")
    assert normalize_properties({"k": "a\udfffb"}) == {"k": "a?b"}


_alphabet = st.sampled_from(["a", "b", "K", " ", "\u0001", "\u0002", "\u00fc", "\u65e5", "\U0001F600", "="])
_text = st.text(alphabet=_alphabet, max_size=6)
_maps = st.dictionaries(_text, st.one_of(st.none(), _text), max_size=5)


_clean_text = st.text(alphabet=st.characters(blacklist_characters="\u0001\u0002",
                                             blacklist_categories=("Cs",)), min_size=1, max_size=8)


@given(_maps)
def test_normalize_is_idempotent(mapping):
    once = normalize_properties(mapping)
    assert normalize_properties(once) == once


@given(st.dictionaries(_clean_text, _clean_text, max_size=6))
def test_clean_maps_round_trip_unchanged(mapping):
    assert string_to_properties(properties_to_string(mapping)) == mapping
    assert normalize_properties(mapping) == mapping


def _random_maps(count: int, seed: int) -> list:
    """Maps biased towards separators and non-BMP text, where the round trip is interesting."""
    rng = random.Random(seed)
    pieces = ["a", "b", "K", " ", "\u0001", "\u0002", "\u00fc", "\u65e5", "\U0001F600", "="]

    def text():
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5)))

    return [{text(): (None if rng.random() < 0.15 else text()) for _ in range(rng.randint(0, 6))}
            for _ in range(count)]


def test_random_maps_python_and_spark_agree(spark):
    maps = _random_maps(500, seed=20240917)
    df = spark.createDataFrame([(i, m) for i, m in enumerate(maps)], "i int, m map<string,string>")
    out = df.select(
        "i",
        F.map_entries("m").alias("entries"),  # Spark's own entry order feeds the Python model
        properties_to_string_column("m").alias("wire"),
        normalize_properties_column("m").alias("normalized"),
    ).collect()
    assert len(out) == len(maps)
    reshaped = 0
    for row in out:
        ordered = {e["key"]: e["value"] for e in row.entries}
        assert row.wire == properties_to_string(ordered), f"map {ordered!r}"
        want = normalize_properties(ordered)
        assert row.normalized == want, f"map {ordered!r}: spark {row.normalized!r}, python {want!r}"
        assert string_to_properties(row.wire) == want
        reshaped += want != {k: v for k, v in ordered.items() if v is not None}
    assert reshaped > 100, "the random maps should exercise separator corruption"
