"""Issue 22.4: Delta Lake's own readers agree with rocketfilter about a store's CommitLog and
ConsumeQueue. deltalake (delta-rs), Polars and Delta Lake's Spark connector read the same rows
with the same schema as rocketfilter's own reads, and time travel to the version before a later
put and a ``promote`` shows the store as it was then (its rows, and its schema without the
promoted column). The Spark connector runs in its own environment (:mod:`.delta_spark_env`):
no ``io.delta`` release loads on pyspark 4.3."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from rocketfilter.store import MessageStore

from . import delta_spark_env

TABLES = ("commitlog", "consumequeue")
KEYS = {"commitlog": ("commitlog_offset",), "consumequeue": ("topic", "queue_id", "queue_offset")}


def batch(lo, hi):
    return [{"topic": ["OrderEvents", "Logs"][i % 2], "tags": ["paid", "created", None][i % 3],
             "keys": f"k{i}", "properties": {"amount": str(i * 10), "region": ["eu", "us"][i % 2]},
             "body": f"message {i}".encode()} for i in range(lo, hi)]


@pytest.fixture(scope="module")
def history(spark, tmp_path_factory):
    """A store with two puts and a ``promote``; ``before`` is each table's version after the
    first put, ``first`` what that put returned."""
    uri = str(tmp_path_factory.mktemp("delta_readers") / "store")
    store = MessageStore.open(uri, spark)
    store.create_topic("OrderEvents", read_queue_nums=2, write_queue_nums=2)
    store.create_topic("Logs", read_queue_nums=1, write_queue_nums=1)
    first = store.put_messages(batch(0, 30))
    before = {name: DeltaTable(f"{uri}/{name}").version() for name in TABLES}
    store.put_messages(batch(30, 50))
    store.promote(["amount"])
    assert all(DeltaTable(f"{uri}/{name}").version() > before[name] for name in TABLES)
    return {"uri": uri, "before": before, "first": first}


def plain(value):
    """A value as every reader's ``to_pylist`` agrees: maps (pairs from Arrow, key/value structs
    from Polars) as dicts, recursively."""
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {k: plain(v) for k, v in value}
        if value and all(isinstance(v, dict) and set(v) == {"key", "value"} for v in value):
            return {v["key"]: plain(v["value"]) for v in value}
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def rows(table, name):
    """``table`` (pyarrow) as plain dicts in key order."""
    return sorted((plain(r) for r in table.to_pylist()), key=lambda r: tuple(r[k] for k in KEYS[name]))


def fields(schema_json):
    """(name, type, nullable) of each field, recursively without field metadata (where
    rocketfilter marks promoted columns, and Delta writers add their own)."""
    def strip(kind):
        if isinstance(kind, dict):
            return {k: ([strip(f) for f in v] if k == "fields" else strip(v))
                    for k, v in kind.items() if k != "metadata"}
        return kind
    return [(f["name"], strip(f["type"]), f["nullable"]) for f in schema_json["fields"]]


def own(spark, uri, name):
    """rocketfilter's own read of a table: its rows (Spark over the files the log lists) and the
    schema it declares."""
    table = MessageStore.open(uri, spark, repair=False).tables[name]
    return rows(table.read(spark, native=False).toArrow(), name), json.loads(table.schema.json())


@pytest.mark.parametrize("name", TABLES)
def test_deltalake_and_polars_read_what_rocketfilter_reads(spark, history, name):
    import polars as pl

    location = f"{history['uri']}/{name}"
    expected, schema = own(spark, history["uri"], name)
    assert len(expected) == (50 if name == "commitlog" else 50)
    dt = DeltaTable(location)
    assert rows(dt.to_pyarrow_table(), name) == expected
    assert rows(pl.read_delta(location).to_arrow(), name) == expected
    assert fields(json.loads(dt.schema().to_json())) == fields(schema)
    if name == "commitlog":
        assert "prop_amount" in [f["name"] for f in schema["fields"]]


@pytest.mark.parametrize("name", TABLES)
def test_time_travel_shows_the_store_as_it_was(history, name):
    import polars as pl

    location, version = f"{history['uri']}/{name}", history["before"][name]
    first = {(m["topic"], m["queue_id"], m["queue_offset"]) for m in history["first"]}
    old = DeltaTable(location, version=version)
    old_rows = rows(old.to_pyarrow_table(), name)
    assert {(r["topic"], r["queue_id"], r["queue_offset"]) for r in old_rows} == first
    assert rows(pl.read_delta(location, version=version).to_arrow(), name) == old_rows
    names = [f["name"] for f in json.loads(old.schema().to_json())["fields"]]
    assert "prop_amount" not in names       # promoted after this version
    if name == "commitlog":
        assert {r["body"] for r in old_rows} == {f"message {i}".encode() for i in range(30)}


DOCS = Path(__file__).resolve().parents[2] / "docs" / "storage.md"


def docs_sql(store_uri: str) -> list:
    """The statements of docs/storage.md's SQL block for Delta readers, on ``store_uri``; the
    time travel ones (a version and a time of the example store) are tested on their own."""
    text = DOCS.read_text(encoding="utf-8").split("## Reading the store with Delta Lake's own readers", 1)[1]
    block = text.split("```sql\n", 1)[1].split("```", 1)[0]
    code = "\n".join(line for line in block.splitlines() if not line.lstrip().startswith("--"))
    statements = [s.strip() for s in code.split(";") if s.strip()]
    return [s.replace("s3://bucket/rf", store_uri) for s in statements if " AS OF " not in s]


@pytest.mark.delta_spark
def test_delta_lake_spark_connector_reads_what_rocketfilter_reads(spark, history, tmp_path):
    uri = history["uri"]
    request = {"package": delta_spark_env.DELTA_PACKAGE, "out": str(tmp_path), "docs_sql": docs_sql(uri),
               "tables": {name: {"location": f"{uri}/{name}", "version": history["before"][name]}
                          for name in TABLES}}
    done = subprocess.run([delta_spark_env.python(), str(Path(__file__).with_name("delta_spark_reader.py")),
                           json.dumps(request)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-6000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["spark"].startswith(delta_spark_env.PYSPARK[:3])
    for name in TABLES:
        read = result["tables"][name]
        expected, schema = own(spark, uri, name)
        assert rows(pq.read_table(tmp_path / name / "latest"), name) == expected
        assert fields(read["schema"]) == fields(schema)
        assert read["sql_count"] == len(expected)
        version = history["before"][name]
        old = rows(DeltaTable(f"{uri}/{name}", version=version).to_pyarrow_table(), name)
        assert rows(pq.read_table(tmp_path / name / f"v{version}"), name) == old
        assert read["sql_old_count"] == len(old) == 30
        assert "prop_amount" not in [f["name"] for f in read["old_schema"]["fields"]]
        assert read["history"] == list(range(DeltaTable(f"{uri}/{name}").version() + 1))
    assert result["per_topic"] == {"OrderEvents": 25, "Logs": 25}
    # docs/storage.md's statements: 5 that register, then paid orders (i % 6 == 0), amounts over
    # 100 (even i from 12), the lag of the 2 queues of OrderEvents, and the history
    history_rows = DeltaTable(f"{uri}/commitlog").version() + 1
    assert result["docs_sql"] == [[0, None]] * 5 + [[9, None], [1, 19], [2, None], [history_rows, None]]
