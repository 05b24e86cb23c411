"""Every compiled conformance case through the Spark compiler, under ANSI mode on and off.

Cases are evaluated in chunks: one DataFrame row per case and one column per case's selector,
so a chunk is one Spark job; each case reads its own row of its own column (the diagonal).
The string cases run over a map<string,string> column (the broker's view), as given (`matched`)
and after the properties-string round trip (`matched_wire`); the typed cases run over typed
top-level columns, and their `as_string` twins over the map.
"""
from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rocketfilter.selector import parse
from rocketfilter.selector.spark import compile_selector

from ..conftest import conformance

CHUNK = 120
ANSI_MODES = ("true", "false")

_SPARK_TYPES = {"Integer": T.IntegerType(), "Long": T.LongType(), "Double": T.DoubleType(),
                "Boolean": T.BooleanType(), "String": T.StringType(), "Object": T.BinaryType()}
_ARROW_TYPES = {T.IntegerType: pa.int32(), T.LongType: pa.int64(), T.DoubleType: pa.float64(),
                T.BooleanType: pa.bool_(), T.StringType: pa.string(), T.BinaryType: pa.binary()}
_PY_VALUE = {"Integer": int, "Long": int, "Double": float, "Boolean": lambda v: v == "true",
             "String": str, "Object": lambda v: b"\x00"}


def _compiled(filename):
    return conformance.compiled(filename)


def _string_inputs():
    """(key, expr, props) for every map evaluation a case asks for."""
    out = []
    for c in _compiled("sql92_cases.jsonl"):
        if "props" in c:
            out.append(((c["id"], "matched"), c["expr"], c["props"]))
            out.append(((c["id"], "matched_wire"), c["expr"], c.get("wire_props", c["props"])))
    for c in _compiled("sql92_typed_cases.jsonl"):
        if c.get("as_string"):
            out.append(((c["id"], "as_string"), c["expr"], c["as_string"]["props"]))
    return out


def _typed_inputs():
    out = []
    for c in _compiled("sql92_typed_cases.jsonl") + _compiled("sql92_cases.jsonl"):
        if c.get("typed_props") is not None and "props" not in c:
            out.append(((c["id"], "typed"), c["expr"], c["typed_props"]))
    return out


def _columns(compiled, i):
    return F.struct(compiled.decision, compiled.raw, compiled.error).alias(f"c{i}")


def _map_chunk(spark, chunk):
    """A local DataFrame (one row per case) and each case's compiled selector."""
    properties = pa.array([list(props.items()) for _, _, props in chunk],
                          type=pa.map_(pa.string(), pa.string()))
    df = spark.createDataFrame(pa.table({"row": pa.array(range(len(chunk)), pa.int32()),
                                         "properties": properties}))
    cols = [_columns(compile_selector(parse(expr).ast, "properties"), i)
            for i, (_, expr, _) in enumerate(chunk)]
    return df, cols


def _typed_chunk(spark, chunk):
    fields, columns = [T.StructField("row", T.IntegerType())], {"row": list(range(len(chunk)))}
    for i, (_, _, spec) in enumerate(chunk):
        for name, p in spec.items():
            column = f"c{i}_{name}"
            fields.append(T.StructField(column, _SPARK_TYPES[p["type"]]))
            columns[column] = [None] * len(chunk)
            columns[column][i] = _PY_VALUE[p["type"]](p.get("value"))
    schema = T.StructType(fields)
    table = pa.table({f.name: pa.array(columns[f.name], _ARROW_TYPES[type(f.dataType)])
                      for f in fields})
    df = spark.createDataFrame(table)
    cols = []
    for i, (_, expr, _) in enumerate(chunk):
        selector = parse(expr)
        columns = {n: f"c{i}_{n}" for n in selector.properties}
        cols.append(_columns(compile_selector(selector.ast, None, schema, columns=columns), i))
    return df, cols


@pytest.fixture(scope="module")
def compiled_chunks(spark):
    """Compiled once: a Column does not depend on the ANSI mode it is later analysed under."""
    chunks = []
    for inputs, build in ((_string_inputs(), _map_chunk), (_typed_inputs(), _typed_chunk)):
        for start in range(0, len(inputs), CHUNK):
            chunk = inputs[start:start + CHUNK]
            chunks.append(([key for key, _, _ in chunk], *build(spark, chunk)))
    return chunks


@pytest.fixture(scope="module", params=ANSI_MODES, ids=lambda m: f"ansi={m}")
def spark_results(request, spark, compiled_chunks):
    spark.conf.set("spark.sql.ansi.enabled", request.param)
    try:
        results = {}
        for keys, df, cols in compiled_chunks:
            rows = sorted(df.select("row", *cols).collect(), key=lambda r: r.row)
            results.update({key: tuple(rows[i][f"c{i}"]) for i, key in enumerate(keys)})
        return results
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


def _expect(case, variant):
    if variant == "as_string":
        s = case["as_string"]
        return s["matched"], s["raw"], s["eval_error"] is not None
    errored = case["eval_error"] is not None
    if variant == "matched_wire":
        return case["matched_wire"], None, None  # raw/error are reported for the direct map only
    return case["matched"], case["raw"], errored


def _check(case, variant, spark_results):
    decision, raw, error = spark_results[(case["id"], variant)]
    matched, exp_raw, exp_error = _expect(case, variant)
    got = (decision, raw, error) if exp_raw is not None or exp_error is not None else (decision,)
    want = (matched, exp_raw, exp_error) if len(got) == 3 else (matched,)
    assert got == want, (
        f"{case['id']} [{variant}] {case['expr']!r} props={case.get('props', case.get('typed_props'))}"
        f" -> spark (decision, raw, error)={got}, RocketMQ={want}")


def _ids(filename, pred):
    return [c for c in _compiled(filename) if pred(c)]


@pytest.mark.parametrize("case", _ids("sql92_cases.jsonl", lambda c: "props" in c),
                         ids=lambda c: c["id"])
def test_map_case(case, spark_results):
    _check(case, "matched", spark_results)
    _check(case, "matched_wire", spark_results)


@pytest.mark.parametrize("case", _ids("sql92_typed_cases.jsonl", lambda c: True)
                         + _ids("sql92_cases.jsonl", lambda c: "props" not in c),
                         ids=lambda c: c["id"])
def test_typed_case(case, spark_results):
    _check(case, "typed", spark_results)
    if case.get("as_string"):
        _check(case, "as_string", spark_results)

