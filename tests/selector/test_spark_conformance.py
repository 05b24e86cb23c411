"""Every compiled conformance case through the Spark compiler, under ANSI mode on and off, on
Spark's generated code (bulk jobs); under Spark's default ANSI mode also on its interpreted
expressions (pulls read by Spark: rocketfilter.pull.scan.SMALL_QUERY_CONF).

Cases are evaluated in chunks: one DataFrame row per case and one column per distinct selector
(cases sharing a selector share its compiled Column), so a chunk is one Spark job; each case
reads its own row of its selector's column.
The string cases run over a map<string,string> column (the broker's view), as given (`matched`)
and after the properties-string round trip (`matched_wire`); the typed cases run over typed
top-level columns, and their `as_string` twins over the map.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rocketfilter.selector import parse
from rocketfilter.selector.spark import compile_selector

from ..conftest import conformance, rows_by_ansi_mode

# Distinct selectors per chunk: Spark's optimizer costs more than linearly in a projection's
# width (the whole fixture: 169 s at 120, 132 to 148 s at 30 and 12).
COLUMNS = 30
ANSI_MODES = ("true", "false")
# Spark's expression engines per ANSI mode (tests/conftest.py ENGINES). The interpreted one runs
# under the default mode only, on the generated run's optimized plans (rows_by_ansi_mode).
ENGINES_BY_MODE = {"true": ("generated", "interpreted"), "false": ("generated",)}

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


def _struct(compiled):
    return F.struct(compiled.decision, compiled.raw, compiled.error)


def _chunks(inputs, key_of):
    """Inputs grouped so that those sharing a compiled selector share a chunk, each chunk
    holding at most COLUMNS distinct selectors (one Spark job per chunk)."""
    chunk, keys = [], set()
    for item in sorted(inputs, key=lambda x: key_of(x)):
        key = key_of(item)
        if key not in keys and len(keys) == COLUMNS:
            yield chunk
            chunk, keys = [], set()
        chunk.append(item)
        keys.add(key)
    if chunk:
        yield chunk


def _map_chunk(spark, chunk, compiled):
    """A local DataFrame (one row per input) and the compiled selectors the rows read: each
    distinct selector is compiled once for the whole suite over the map (Conformance.map_column)."""
    properties = pa.array([list(props.items()) for _, _, props in chunk],
                          type=pa.map_(pa.string(), pa.string()))
    df = spark.createDataFrame(pa.table({"row": pa.array(range(len(chunk)), pa.int32()),
                                         "properties": properties}))
    names = {}
    for _, expr, _ in chunk:
        if expr not in compiled:
            compiled[expr] = _struct(conformance.map_column(expr))
        names.setdefault(expr, f"c{len(names)}")
    cols = [compiled[expr].alias(name) for expr, name in names.items()]
    return df, cols, [names[expr] for _, expr, _ in chunk]


@lru_cache(maxsize=None)
def _properties(expr):
    return sorted(parse(expr).properties)


def _typed_key(item):
    """A typed input's selector and, per property it reads, the column type ("": absent)."""
    _, expr, spec = item
    return expr, tuple((n, spec[n]["type"] if n in spec else "") for n in _properties(expr))


def _typed_chunk(spark, chunk, compiled):
    """One top-level column per (property, type) the chunk's inputs read, each row holding its
    own input's values (null elsewhere); each (selector, types) is compiled once."""
    fields = {}
    for item in chunk:
        for n, kind in _typed_key(item)[1]:
            if kind:
                fields.setdefault((n, kind), T.StructField(f"p{len(fields)}", _SPARK_TYPES[kind]))
    columns = {"row": list(range(len(chunk)))}
    columns.update({f.name: [None] * len(chunk) for f in fields.values()})
    for row, (_, _, spec) in enumerate(chunk):
        for n, p in spec.items():
            if (n, p["type"]) in fields:
                columns[fields[n, p["type"]].name][row] = _PY_VALUE[p["type"]](p.get("value"))
    schema = T.StructType([T.StructField("row", T.IntegerType()), *fields.values()])
    df = spark.createDataFrame(pa.table({f.name: pa.array(columns[f.name], _ARROW_TYPES[type(f.dataType)])
                                         for f in schema.fields}))
    names = {}
    for item in chunk:
        key = _typed_key(item)
        if key not in compiled:
            expr, kinds = key
            mapping = {n: fields[n, kind].name if kind else f"absent_{n}" for n, kind in kinds}
            own = T.StructType([fields[n, kind] for n, kind in kinds if kind])
            compiled[key] = _struct(compile_selector(parse(expr).ast, None, own, columns=mapping))
        names.setdefault(key, f"c{len(names)}")
    cols = [compiled[key].alias(name) for key, name in names.items()]
    return df, cols, [names[_typed_key(item)] for item in chunk]


@pytest.fixture(scope="module")
def results_by_mode(spark):
    """{engine: (decision, raw, error)} per input key, under each ANSI mode.

    A worker thread runs each chunk's Spark job (one per mode) while this thread compiles the
    next chunk: a Column does not depend on the ANSI mode it is later analysed under, and only
    the worker runs queries, so it alone sets the mode. On two cores the compile (Python and
    Py4J) and Spark's analysis of the last chunk then overlap instead of taking turns.
    """
    results = {mode: {} for mode in ANSI_MODES}

    def run(keys, df, cols, reads):
        for mode in ANSI_MODES:
            for (_, engine), rows in rows_by_ansi_mode(spark, df, cols, (mode,), ENGINES_BY_MODE[mode]).items():
                for i, (key, name) in enumerate(zip(keys, reads)):
                    results[mode].setdefault(key, {})[engine] = tuple(rows[i][name])

    with ThreadPoolExecutor(max_workers=1) as worker:
        jobs = []
        for inputs, build, key_of in ((_string_inputs(), _map_chunk, lambda x: x[1]),
                                      (_typed_inputs(), _typed_chunk, _typed_key)):
            compiled = {}
            for chunk in _chunks(inputs, key_of):
                jobs.append(worker.submit(run, [key for key, _, _ in chunk], *build(spark, chunk, compiled)))
        for job in jobs:
            job.result()
    return results


@pytest.fixture(scope="module", params=ANSI_MODES, ids=lambda m: f"ansi={m}")
def spark_results(request, results_by_mode):
    return request.param, results_by_mode[request.param]


def _expect(case, variant):
    if variant == "as_string":
        s = case["as_string"]
        return s["matched"], s["raw"], s["eval_error"] is not None
    errored = case["eval_error"] is not None
    if variant == "matched_wire":
        return case["matched_wire"], None, None  # raw/error are reported for the direct map only
    return case["matched"], case["raw"], errored


def _check(case, variant, spark_results):
    mode, results = spark_results
    by_engine = results[(case["id"], variant)]
    assert sorted(by_engine) == sorted(ENGINES_BY_MODE[mode])
    matched, exp_raw, exp_error = _expect(case, variant)
    for engine, (decision, raw, error) in by_engine.items():
        got = (decision, raw, error) if exp_raw is not None or exp_error is not None else (decision,)
        want = (matched, exp_raw, exp_error) if len(got) == 3 else (matched,)
        assert got == want, (
            f"{case['id']} [{variant}] {case['expr']!r} props={case.get('props', case.get('typed_props'))}"
            f" -> spark {engine} (decision, raw, error)={got}, RocketMQ={want}")


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

