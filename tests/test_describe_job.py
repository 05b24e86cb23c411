"""Issue 19.1 and 19.4: ``rocketfilter topics``, ``rocketfilter describe`` and ``store.describe()``
(what is in a store, read without Spark), ``offsets show`` without ``--topic``, and the lint's
NaN/Infinity finding from a store sample. The store is made once with the suite's session; the
commands then run with Spark's start-up replaced by a failure."""
from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from rocketfilter.cli import main
from rocketfilter.jobs import common

AMOUNTS = ["19.99", "NaN", "150", "NaN", "250.5", "Infinity", "80", "NaN", "7", "1e999"]


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    """Topic Prices (2 queues, 10 messages: amounts above, 3 'NaN', 'Infinity' and 1e999 which
    reads as Infinity; flag 'true'/'no'), empty topic Quiet; group GID_stored (saved, one consumer)
    with offset 2 on queue 0; group GID_offsets with offsets only; a registered SQL92 subscription."""
    from rocketfilter.consumer import ConsumerGroup
    from rocketfilter.store import MessageStore

    uri = str(tmp_path_factory.mktemp("describe") / "store")
    s = MessageStore.open(uri, spark)
    s.create_topic("Prices", read_queue_nums=2, write_queue_nums=2)
    s.create_topic("Quiet", read_queue_nums=1, write_queue_nums=1)
    s.put_messages([{"topic": "Prices", "tags": "TagA", "body": f"m{i}",
                     "properties": {"amount": a, "flag": ["true", "no"][i % 2]}} for i, a in enumerate(AMOUNTS)])
    group = ConsumerGroup("GID_stored")
    group.add_consumer("c1", {"Prices": "TagA"})
    s.save_group(group)
    s.commit_consumer_offset("GID_stored", "Prices", 0, 2)
    s.commit_consumer_offset("GID_offsets", "Quiet", 0, 0)
    s.register_subscription_bits("GID_bits", "Prices", "amount > 100.0", "SQL92")
    return s


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    monkeypatch.setattr(common, "start_spark", lambda *a, **k: pytest.fail("Spark started"))


def _expected_queues(uri: str) -> dict:
    """Per queue of Prices: (count, first store time, last store time), from the CommitLog read
    with delta-rs, independently of the code under test."""
    rows = DeltaTable(f"{uri}/commitlog").to_pyarrow_table(
        columns=["topic", "queue_id", "queue_offset", "store_timestamp"]).to_pylist()
    out = {}
    for q in (0, 1):
        mine = sorted((r["queue_offset"], r["store_timestamp"]) for r in rows
                      if r["topic"] == "Prices" and r["queue_id"] == q)
        out[q] = (len(mine), mine[0][1], mine[-1][1])
    return out


def test_topics_lists_queues_offsets_counts_and_store_times(store, capsys):
    assert main(["topics", "--store", store.uri, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [t["topic"] for t in status] == ["Prices", "Quiet"]
    prices, quiet = status
    expected = _expected_queues(store.uri)
    assert prices["messages"] == 10 and prices["read_queue_nums"] == 2
    for q in prices["queues"]:
        count, first, last = expected[q["queue_id"]]
        assert (q["min_offset"], q["max_offset"], q["messages"]) == (0, count, count)
        assert (q["first_store_time"], q["last_store_time"]) == (first, last)
    assert quiet["queues"] == [{"queue_id": 0, "min_offset": 0, "max_offset": 0, "messages": 0,
                                "first_store_time": None, "last_store_time": None}]
    assert main(["topics", "--store", store.uri, "--topic", "Prices"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["topic", "queue", "min", "max", "messages", "first", "stored", "(UTC)",
                                           "last", "stored", "(UTC)"]
    assert out.rstrip().endswith("1 topic, 2 queues, 10 messages") and "Quiet" not in out


def test_describe_shows_groups_lag_promoted_registrations_and_property_kinds(store, capsys):
    assert main(["describe", "--store", store.uri, "--topic", "Prices", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info == json.loads(json.dumps(store.describe("Prices")))  # the same plain data in Python
    assert [t["topic"] for t in info["topics"]] == ["Prices"]
    groups = {g["group"]: g for g in info["groups"]}
    assert set(groups) == {"GID_stored", "GID_offsets"}
    stored = groups["GID_stored"]
    assert stored["stored"] and stored["consumers"][0]["client_id"] == "c1"
    assert stored["consumers"][0]["subscriptions"][0]["expression"] == "TagA"
    # queue 0 committed 2, queue 1 none: lag counts from 0 there (consumerProgress's Diff)
    lag = {r["queue_id"]: (r["committed"], r["lag"]) for r in stored["offsets"]}
    assert lag == {0: (2, 3), 1: (None, 5)} and stored["lag"] == 8
    assert groups["GID_offsets"]["stored"] is False and groups["GID_offsets"]["lag"] == 0
    assert info["registered_subscriptions"]["Prices"]["GID_bits"]["expression"] == "amount > 100.0"
    assert info["promoted_properties"] == {}
    assert info["tables"]["commitlog"]["rows"] == 10
    props = {p["name"]: p for p in info["properties"]["properties"]}
    assert info["properties"]["sampled_messages"] == 10
    assert props["amount"]["kinds"] == {"int": 3, "double": 2, "boolean": 0, "nan": 3, "infinity": 2, "other": 0}
    assert props["flag"]["kinds"]["boolean"] == 5 and props["flag"]["kinds"]["other"] == 5
    assert main(["describe", "--store", store.uri]) == 0
    out = capsys.readouterr().out
    assert "GID_stored (CLUSTERING, CONSUME_FROM_LAST_OFFSET): lag 8" in out
    assert "registered subscriptions: Prices: GID_bits SQL92 'amount > 100.0'" in out
    assert "properties of" not in out and "settings: " in out


def test_describe_properties_table(store, capsys):
    assert main(["describe", "--store", store.uri, "--topic", "Prices", "--sample", "4"]) == 0
    out = capsys.readouterr().out
    assert "properties of Prices in its newest 4 messages:" in out
    header = out.split("properties of Prices in its newest 4 messages:\n", 1)[1].splitlines()[0].split()
    assert header == ["property", "messages", "int-like", "double-like", "boolean-like", "nan", "infinity",
                      "other", "values"]


def test_offsets_show_without_topic_names_the_topics(store, capsys):
    assert main(["offsets", "show", "--store", store.uri, "--group", "GID_stored"]) == 0
    out = capsys.readouterr().out
    assert "GID_stored: lag 8 over 2 queues" in out
    assert main(["offsets", "show", "--store", store.uri, "--group", "GID_nothing"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("group GID_nothing has no committed offsets in store ")
    assert "its topics: Prices, Quiet" in out and "groups with committed offsets: GID_offsets, GID_stored" in out


def test_lint_store_counts_nan_and_infinity(store, capsys):
    """Issue 19.4: 3 'NaN' and 2 infinities among the amounts; `amount > 100.0` delivers them."""
    assert main(["lint", "amount > 100.0", "--store", store.uri, "--topic", "Prices"]) == 1
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if "[nan-or-infinity-value]" in x]
    assert line.startswith("col 1 [nan-or-infinity-value]: `amount > 100.0` is TRUE on amount = ")
    assert all(part in line for part in ("'NaN' (3)", "'Infinity' (1)", "'1e999' (1)", ", 5 sampled messages in all: "))
    [fix] = [x for x in out.splitlines() if x.startswith("  fix: to leave them out write `amount NOT IN (")]
    assert fix.endswith(") AND amount > 100.0`") and all(v in fix for v in ("'NaN'", "'Infinity'", "'1e999'"))


@pytest.mark.parametrize("argv, code, says", [
    (["topics", "--store", "{store}", "--topic", "Nope"], 2, "topic 'Nope' does not exist"),
    (["describe", "--store", "{store}", "--topic", "Nope"], 2, "topic 'Nope' does not exist"),
    (["topics", "--store", "{missing}"], 1, "no rocketfilter store at"),
    (["describe", "--store", "{missing}", "--json"], 1, "no rocketfilter store at"),
    (["describe", "--store", "{store}", "--sample", "0"], 2, "sample must be at least 1"),
])
def test_bad_input_is_one_line(store, tmp_path, capsys, argv, code, says):
    argv = [a.format(store=store.uri, missing=str(tmp_path / "missing")) for a in argv]
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and says in err and "Traceback" not in err
    assert not (tmp_path / "missing").exists()


def test_a_fresh_process_answers_without_a_jvm(store):
    """``topics`` and ``describe`` in a new process: their answers, and no JVM gateway afterwards."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    script = ("import json, sys, io, contextlib\n"
              "from rocketfilter.cli import main\n"
              "out = io.StringIO()\n"
              "with contextlib.redirect_stdout(out):\n"
              "    codes = [main(['topics', '--store', sys.argv[1], '--json']),\n"
              "             main(['describe', '--store', sys.argv[1], '--topic', 'Prices', '--json'])]\n"
              "from pyspark import SparkContext\n"
              "print(json.dumps({'codes': codes, 'jvm': SparkContext._gateway is not None, 'out': out.getvalue()}))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYSPARK_GATEWAY_PORT")}
    env["PYTHONPATH"] = str(repo)
    done = subprocess.run([sys.executable, "-c", script, store.uri], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["codes"] == [0, 0] and result["jvm"] is False
    assert '"messages": 10' in result["out"] and '"sampled_messages": 10' in result["out"]
