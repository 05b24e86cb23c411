"""``--engine`` of ``why`` and ``pull``: small work without --master/--remote is read with pyarrow
and starts no Spark (start_spark is forbidden here), and prints exactly what the Spark path
prints; --master or large work keeps Spark; --engine forces either."""
from __future__ import annotations

import argparse
import json
import re

import pytest

from rocketfilter.cli import main
from rocketfilter.jobs import common, engine

from .conftest import ORDERS


def _out(capsys, argv) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    # why exits 4 on a NOT_FOUND trace (jobs/why.NOT_FOUND_EXIT), 0 on any other answer.
    expected = 4 if argv[0] == "why" and ": NOT_FOUND " in out.split("\n", 1)[0] else 0
    assert code == expected, err
    return out


@pytest.fixture(scope="module")
def group_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("engine") / "g.json"
    path.write_text(json.dumps({"group": "GID_engine", "consumers": [
        {"clientId": "A", "subscriptions": {ORDERS: "TagA"}, "subVersion": 1},
        {"clientId": "B", "subscriptions": {ORDERS: "TagA || TagB"}, "subVersion": 2}]}), encoding="utf-8")
    return str(path)


def _why_cases(store, group_file):
    base = ["why", "--store", store, "--group-file", group_file]
    return ([base + ["--topic", ORDERS, "--queue", str(q), "--offset", str(o)] for q in range(3) for o in range(5)]
            + [base + ["--key", "order-7"], base + ["--key", "order-7", "--topic", ORDERS], base + ["--msg-id", "0" * 32]])


def test_why_auto_starts_no_spark_and_answers_as_spark(spark, orders_store, group_file, capsys, monkeypatch):
    spark_answers = [_out(capsys, argv + ["--engine", "spark"]) for argv in _why_cases(orders_store, group_file)]
    monkeypatch.setattr(engine, "open_store_without_spark", _counting(engine.open_store_without_spark))
    with pytest.MonkeyPatch.context() as mp:
        no_spark_fixture(mp)
        arrow_answers = [_out(capsys, argv) for argv in _why_cases(orders_store, group_file)]
    assert arrow_answers == spark_answers
    assert engine.open_store_without_spark.calls == len(spark_answers)
    verdicts = {re.search(r": ([A-Z_]+) ", a.splitlines()[0]).group(1) for a in arrow_answers}
    assert {"PENDING", "DROPPED_BY_CLIENT_RECHECK", "NOT_FOUND"} <= verdicts, verdicts


def test_pull_auto_starts_no_spark_and_answers_as_spark(spark, orders_store, capsys):
    cases = [["--tags", "TagA", "--offset", "0", "--max-msg-nums", "2", "--pulls", "2"],
             ["--sql", "amount > 100.0", "--offset", "1", "--queue", "2"],
             ["--sql", "region = 'eu' AND amount < 100", "--offset", "0", "--pulls", "3", "--max-msg-nums", "1"],
             ["--offset", "9"]]
    base = ["pull", "--store", orders_store, "--topic", ORDERS, "--group", "GID_engine_pull"]
    spark_answers = [_out(capsys, base + c + ["--engine", "spark"]) for c in cases]
    with pytest.MonkeyPatch.context() as mp:
        no_spark_fixture(mp)
        arrow_answers = [_out(capsys, base + c) for c in cases]
        forced = _out(capsys, base + cases[0] + ["--engine", "arrow"])
    assert arrow_answers == spark_answers and forced == spark_answers[0]
    assert "FOUND" in spark_answers[0] and "OFFSET_ILLEGAL" in spark_answers[3]


def test_what_chooses_spark(monkeypatch):
    from pyspark.sql import SparkSession

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    args = lambda **kw: argparse.Namespace(**{"engine": "auto", "master": None, "remote": None, **kw})  # noqa: E731
    assert engine.use_arrow(args(), small=True)
    assert not engine.use_arrow(args(), small=False)                       # large work
    assert not engine.use_arrow(args(master="local[2]"), small=True)      # asked for Spark
    assert not engine.use_arrow(args(remote="sc://h:15002"), small=True)
    assert not engine.use_arrow(args(), small=True, spark=object())       # a session handed in
    assert not engine.use_arrow(args(engine="spark"), small=True)
    assert engine.use_arrow(args(engine="arrow"), small=False)
    monkeypatch.setenv("SPARK_REMOTE", "sc://h:15002")
    assert not engine.use_arrow(args(), small=True)
    with pytest.raises(ValueError, match="--engine arrow reads on this machine"):
        engine.use_arrow(args(engine="arrow", master="local[2]"), small=True)


def _counting(fn):
    def wrapped(*args, **kwargs):
        wrapped.calls += 1
        return fn(*args, **kwargs)
    wrapped.calls = 0
    return wrapped


def no_spark_fixture(mp):
    from pyspark.sql import SparkSession

    def refuse(*args, **kwargs):
        raise AssertionError("Spark was started for small work")

    mp.setattr(common, "start_spark", refuse)
    mp.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    mp.delenv("SPARK_REMOTE", raising=False)
    mp.delenv("PYSPARK_GATEWAY_PORT", raising=False)
