"""The string-property conformance suite through two stores: one whose every property is
promoted, one where none is. Each case's properties are one message; the selectors are compiled
with the store's promoted columns (``store.promoted_properties()``) and evaluated on the
CommitLog rows the store wrote, in chunks (one Spark job per chunk over one cached read), each distinct selector compiled once.

The store keeps properties as the broker sees them, after the properties-string round trip,
so the expected decision is RocketMQ's ``matched_wire``; the two stores must also agree on the
raw result and the error flag."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from rocketfilter.selector import parse
from rocketfilter.selector.spark import compile_selector
from rocketfilter.store import MessageStore

from ..conftest import conformance

TOPIC = "Conformance"
COLUMNS = 200   # distinct selectors per Spark job
# Sorted by selector: cases sharing one are neighbours, in one chunk, read through one Column.
CASES = sorted((c for c in conformance.compiled("sql92_cases.jsonl") if "props" in c), key=lambda c: c["expr"])


def _store(spark, root, promote: bool):
    store = MessageStore.open(root, spark)
    if promote:  # an empty store: the columns are added, nothing is rewritten
        report = store.promote(sorted({name for c in CASES for name in c["props"]}))
        assert report.files_rewritten == 0 and report.promoted
    store.create_topic(TOPIC, read_queue_nums=1, write_queue_nums=1)
    store.put_messages([{"topic": TOPIC, "properties": c["props"]} for c in CASES])
    return store


def _chunks():
    """Consecutive ranges of CASES (so of queue offsets) holding at most COLUMNS selectors."""
    start, exprs = 0, set()
    for i, case in enumerate(CASES):
        if case["expr"] not in exprs and len(exprs) == COLUMNS:
            yield start, i
            start, exprs = i, set()
        exprs.add(case["expr"])
    yield start, len(CASES)


def _results(store):
    """(decision, raw, error) per case id, through ``store``'s columns: each distinct selector
    compiled once, each case reading its own row of its selector's column."""
    df = store.commitlog.read(store.spark).cache()
    assert df.count() == len(CASES)
    promoted = store.promoted_properties()
    out = {}
    for start, stop in _chunks():
        names, cols = {}, []
        for case in CASES[start:stop]:
            if case["expr"] not in names:
                selector = parse(case["expr"])
                used = {n: promoted[n] for n in selector.properties if n in promoted}
                # Without promoted columns this is the map compile the Spark conformance test
                # made already: shared (Conformance.map_column).
                c = (compile_selector(selector.ast, "properties", promoted=used) if used
                     else conformance.map_column(case["expr"]))
                names[case["expr"]] = name = f"c{len(names)}"
                cols.append(F.struct(c.decision, c.raw, c.error).alias(name))
        rows = (df.where(F.col("queue_offset").between(start, stop - 1))
                .select("queue_offset", *cols).collect())
        for r in rows:
            case = CASES[r["queue_offset"]]
            out[case["id"]] = tuple(r[names[case["expr"]]])
    df.unpersist()
    return out


@pytest.fixture(scope="module")
def both(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("promoted-conformance")
    promoted = _store(spark, str(root / "promoted"), True)
    plain = _store(spark, str(root / "plain"), False)
    assert len(promoted.promoted_properties()) == len({n for c in CASES for n in c["props"]})
    assert plain.promoted_properties() == {}
    return _results(promoted), _results(plain)


def test_every_case_through_promoted_and_plain_stores(both):
    promoted, plain = both
    wrong = []
    for case in CASES:
        want = case["matched_wire"]
        got_p, got_m = promoted[case["id"]], plain[case["id"]]
        if got_p[0] != want or got_m[0] != want or got_p != got_m:
            wrong.append((case["id"], case["expr"], case["props"], want, got_p, got_m))
    assert not wrong, f"{len(wrong)} of {len(CASES)} cases differ, e.g. {wrong[:3]}"
