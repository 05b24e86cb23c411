"""The Arrow backend (``Selector.to_arrow``) against RocketMQ's cases and the reference evaluator.

No Spark. Cases sharing a selector are one batch (one row per case), so every compiled case of
sql92_cases.jsonl and sql92_typed_cases.jsonl runs in a few hundred small batches: the string
cases over a map<string,string> column as given (``matched``, ``raw``, error) and after the
properties-string round trip (``matched_wire``); the typed cases over typed top-level columns,
and their ``as_string`` twins over the map. Then hypothesis compares whole random batches with
the evaluator, and the Java parsers with :mod:`rocketfilter.javalang`.
"""
from __future__ import annotations

import math
from collections import defaultdict

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketfilter import javalang as J
from rocketfilter.selector import arrow_casts, parse

from ..conftest import conformance
from .test_properties_hypothesis import (TYPED, VALUE_POOL, _java_values, property_maps,
                                         python_result, selector_batch, typed_rows)

MAP_TYPE = pa.map_(pa.string(), pa.string())
_ARROW_TYPES = {"Integer": pa.int32(), "Long": pa.int64(), "Double": pa.float64(),
                "Boolean": pa.bool_(), "String": pa.string(), "Object": pa.binary()}
_VALUES = {"Integer": int, "Long": int, "Double": float, "Boolean": lambda v: v == "true",
           "String": str, "Object": lambda v: b"\x00"}


def _outcomes(result) -> list:
    return [(bool(m), r, bool(e)) for m, r, e in
            zip(result.matched, result.raw.to_pylist(), result.error)]


def _run_map_groups(items) -> list:
    """``items``: (label, expr, props, expected); one batch per selector. Returns mismatches."""
    groups = defaultdict(list)
    for item in items:
        groups[item[1]].append(item)
    bad = []
    for expr, group in groups.items():
        batch = pa.array([list(props.items()) for _, _, props, _ in group], MAP_TYPE)
        for (label, _, props, want), got in zip(group, _outcomes(parse(expr).to_arrow().evaluate(batch))):
            if got[:len(want)] != want:
                bad.append(f"{label} {expr!r} props={props}: arrow={got[:len(want)]} RocketMQ={want}")
    return bad


def _expected(case) -> tuple:
    return case["matched"], case["raw"], case["eval_error"] is not None


def test_map_cases_as_given_and_after_the_wire():
    items = []
    for c in conformance.compiled("sql92_cases.jsonl"):
        if "props" in c:
            items.append((c["id"], c["expr"], c["props"], _expected(c)))
            items.append((c["id"] + "/wire", c["expr"], c.get("wire_props", c["props"]), (c["matched_wire"],)))
    for c in conformance.compiled("sql92_typed_cases.jsonl"):
        s = c.get("as_string")
        if s:
            items.append((c["id"] + "/as_string", c["expr"], s["props"],
                          (s["matched"], s["raw"], s["eval_error"] is not None)))
    assert len(items) > 2700
    bad = _run_map_groups(items)
    assert not bad, f"{len(bad)} disagreement(s):\n" + "\n".join(bad[:20])


def test_typed_cases():
    cases = [c for c in conformance.compiled("sql92_typed_cases.jsonl")
             + conformance.compiled("sql92_cases.jsonl")
             if c.get("typed_props") is not None and "props" not in c]
    groups = defaultdict(list)
    for c in cases:  # one batch per selector and column types
        groups[(c["expr"], tuple(sorted((k, p["type"]) for k, p in c["typed_props"].items())))].append(c)
    bad = []
    for (expr, types), group in groups.items():
        columns = {f"c_{name}": pa.array([_VALUES[kind](c["typed_props"][name].get("value")) for c in group],
                                         _ARROW_TYPES[kind]) for name, kind in types}
        columns["row"] = pa.array(range(len(group)), pa.int32())
        selector = parse(expr)
        result = selector.to_arrow(None, {n: f"c_{n}" for n in selector.properties}).evaluate(
            pa.RecordBatch.from_pydict(columns))
        for c, got in zip(group, _outcomes(result)):
            if got != _expected(c):
                bad.append(f"{c['id']} {expr!r} {c['typed_props']}: arrow={got} RocketMQ={_expected(c)}")
    assert len(cases) > 2000
    assert not bad, f"{len(bad)} disagreement(s):\n" + "\n".join(bad[:20])


# --- random batches against the evaluator ---------------------------------------------------------

SETTINGS = settings(max_examples=40, deadline=None)


@SETTINGS
@given(texts=selector_batch(), maps=property_maps)
def test_map_batches_agree_with_evaluator(texts, maps):
    batch = pa.array([list(m.items()) for m in maps], MAP_TYPE)
    for text in texts:
        selector = parse(text)
        got = _outcomes(selector.to_arrow().evaluate(batch))
        assert got == [python_result(selector, m) for m in maps], text


@SETTINGS
@given(texts=selector_batch(), typed=typed_rows())
def test_typed_batches_agree_with_evaluator(texts, typed):
    kinds, rows = typed
    table = pa.table({"row": pa.array(range(len(rows)), pa.int32()),
                      **{n: pa.array([r[n] for r in rows], TYPED[k][0]) for n, k in kinds.items()}})
    inputs = [_java_values(kinds, r) for r in rows]
    for text in texts:
        selector = parse(text)
        got = _outcomes(selector.to_arrow(None).evaluate(table))
        assert got == [python_result(selector, p) for p in inputs], (text, kinds)


# --- the parsers ------------------------------------------------------------------------------------

def _java(parser, s):
    try:
        return parser(s)
    except J.NumberFormatError:
        return None


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


_hex_float = st.builds(
    lambda sign, digits, dot, exp: f"{sign}0x{digits[:dot]}.{digits[dot:]}p{exp}",
    st.sampled_from(["", "-", "+"]), st.text("0123456789abcdefABCDEF", min_size=1, max_size=30),
    st.integers(0, 30), st.integers(-1200, 1100))
_strings = st.one_of(st.sampled_from(VALUE_POOL), st.text(max_size=6),
                     st.text("0123456789+-.eExXpPfFdD ", max_size=12), _hex_float,
                     st.integers(-(1 << 70), 1 << 70).map(str))


@settings(max_examples=60, deadline=None)
@given(st.lists(_strings, min_size=1, max_size=50))
def test_parsers_agree_with_javalang(strings):
    array = pa.array(strings, pa.string())
    for arrow_parser, java_parser in ((arrow_casts.integer_value_of, J.integer_value_of),
                                      (arrow_casts.long_value_of, J.long_value_of),
                                      (arrow_casts.double_value_of, J.double_value_of)):
        values, ok = arrow_parser(array)
        for s, v, good in zip(strings, values.tolist(), ok):
            assert _same(v if good else None, _java(java_parser, s)), (arrow_parser.__name__, s)
    assert arrow_casts.boolean_value_of(array).tolist() == [J.boolean_value_of(s) for s in strings]


def test_hex_floats_round_like_java_at_the_edges():
    edges = ["0x1.0000000000000800000000001p0", "0x1.00000000000008p0", "0x1.00000000000018p0",
             "0x1p-1074", "0x1p-1075", "0x1.8p-1075", "0x1.fffffffffffff8p1023", "0x1p1024",
             "0x0.0p99999999999", "-0x1p99999999999", "0x1p-99999999999", "0x1.ffffffffffffe8p-1023"]
    values, ok = arrow_casts.double_value_of(pa.array(edges))
    assert ok.all()
    assert all(_same(v, J.double_value_of(s)) for s, v in zip(edges, values.tolist()))
