"""MessageStore: topics, put_messages, dispatch and repair, offsets, retention, maintenance."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from rocketfilter.config import BrokerConfig, InvalidNameError, MessageStoreConfig
from rocketfilter.message import normalize_properties
from rocketfilter.store import MessageStore
from rocketfilter.store.put import PutMessageError
from rocketfilter.tags import tags_code

CONFIG = dict(consume_queue_rows_per_file=1000, consume_queue_row_group_rows=64)


@pytest.fixture
def store(spark, tmp_path):
    s = MessageStore.open(str(tmp_path / "store"), spark, MessageStoreConfig(**CONFIG))
    s.create_topic("T", read_queue_nums=4, write_queue_nums=4)
    return s


def _messages(n, topic="T", **extra):
    return [{"topic": topic, "tags": f"Tag{i % 3}", "keys": [f"k{i}", "x"],
             "properties": {"i": str(i), "empty": ""}, "body": f"body-{i}".encode(), **extra}
            for i in range(n)]


def test_put_assigns_round_robin_queues_and_contiguous_offsets(store):
    put = store.put_messages(_messages(10))
    assert [r["queue_id"] for r in put] == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert [r["queue_offset"] for r in put] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    rows = store.commitlog.read(store.spark).orderBy("commitlog_offset").collect()
    assert rows[0]["commitlog_offset"] == 0
    for a, b in zip(rows, rows[1:]):
        assert b["commitlog_offset"] == a["commitlog_offset"] + a["store_size"]
    first = rows[0]
    assert first["properties"] == {"i": "0", "TAGS": "Tag0", "KEYS": "k0 x", "WAIT": "true",
                                   "CLUSTER": "DefaultCluster"}
    assert first["tags"] == "Tag0" and first["keys"] == "k0 x"
    # The record holds the producer's wire string, "empty" entry included; the broker's parse
    # of it then drops that entry.
    sent = {**first["properties"], "empty": ""}
    props_len = len("".join(f"{k}\u0001{v}\u0002" for k, v in sent.items()).encode())
    assert first["store_size"] == 91 + len(b"body-0") + len("T") + props_len
    assert first["msg_id"] == "7F00000100002A9F" + "0" * 16
    # A second put continues the round robin and every queue's offsets.
    again = store.put_messages(_messages(3))
    assert [(r["queue_id"], r["queue_offset"]) for r in again] == [(2, 2), (3, 2), (0, 3)]
    assert again[0]["commitlog_offset"] == rows[-1]["commitlog_offset"] + rows[-1]["store_size"]


def test_explicit_queue_and_properties_normalised(store):
    put = store.put_messages([{"topic": "T", "queue_id": 3, "body": "x",
                               "properties": {"n": "a\u0002b\u0001c", "gone": ""}}])
    assert put[0]["queue_id"] == 3 and put[0]["queue_offset"] == 0
    row = store.commitlog.read(store.spark).first()
    expected = normalize_properties({"n": "a\u0002b\u0001c", "WAIT": "true", "CLUSTER": "DefaultCluster"})
    assert row["properties"] == expected


def test_put_dataframe_over_many_partitions(store, spark):
    df = (spark.range(0, 2000, numPartitions=4)
          .select(F.when(F.col("id") % 2 == 0, "T").otherwise("U").alias("topic"),
                  F.concat(F.lit("t"), (F.col("id") % 5).cast("string")).alias("tags"),
                  F.col("id").cast("string").cast("binary").alias("body")))
    store.create_topic("U", read_queue_nums=3, write_queue_nums=3)
    store.put_messages(df).count()
    cl = store.commitlog.read(spark)
    assert cl.count() == 2000
    assert cl.select("commitlog_offset").distinct().count() == 2000
    per_queue = (cl.groupBy("topic", "queue_id")
                 .agg(F.count("*").alias("n"), F.min("queue_offset").alias("lo"),
                      F.max("queue_offset").alias("hi"),
                      F.countDistinct("queue_offset").alias("d")).collect())
    assert {(r["topic"], r["queue_id"]) for r in per_queue} == \
        {("T", q) for q in range(4)} | {("U", q) for q in range(3)}
    for r in per_queue:
        assert r["lo"] == 0 and r["hi"] == r["n"] - 1 and r["d"] == r["n"]
    ends = cl.select(F.max(F.col("commitlog_offset") + F.col("store_size")).alias("end"),
                     F.sum("store_size").alias("total")).first()
    assert ends["end"] == ends["total"]  # no gap anywhere in the physical offsets


def test_dispatch_builds_the_consume_queue_and_is_idempotent(store):
    store.put_messages(_messages(7))
    cq = store.consumequeue.read(store.spark).orderBy("commitlog_offset").collect()
    cl = store.commitlog.read(store.spark).orderBy("commitlog_offset").collect()
    assert [(r["topic"], r["queue_id"], r["queue_offset"], r["commitlog_offset"], r["size"])
            for r in cq] == [(r["topic"], r["queue_id"], r["queue_offset"], r["commitlog_offset"],
                              r["store_size"]) for r in cl]
    assert [r["tags_code"] for r in cq] == [tags_code(r["tags"]) for r in cl]
    assert all(r["filter_bitmap"] is None for r in cq)
    assert store.dispatch().entries == 0
    assert store.get_max_offset_in_queue("T", 0) == 2 and store.get_min_offset_in_queue("T", 0) == 0


def test_open_repairs_a_lagging_consume_queue(spark, tmp_path):
    config = MessageStoreConfig(dispatch_on_put=False, **CONFIG)
    crashed = MessageStore.open(str(tmp_path / "s"), spark, config)
    crashed.put_messages(_messages(5))
    assert crashed.consumequeue.read(spark).count() == 0  # the "crash": no dispatch ran
    reopened = MessageStore.open(str(tmp_path / "s"), spark, MessageStoreConfig(**CONFIG))
    assert reopened.consumequeue.read(spark).count() == 5
    assert reopened.dispatch().entries == 0


def test_bad_input_is_refused_with_a_clear_error(store, spark, tmp_path):
    with pytest.raises(PutMessageError, match="queue_id 9"):
        store.put_messages([{"topic": "T", "queue_id": 9, "body": b"x"}])
    with pytest.raises(PutMessageError, match="unknown field"):
        store.put_messages([{"topic": "T", "bdy": b"x"}])
    with pytest.raises(InvalidNameError):
        store.create_topic("../escape")
    strict = MessageStore.open(str(tmp_path / "strict"), spark, MessageStoreConfig(**CONFIG),
                               broker_config=BrokerConfig(auto_create_topic_enable=False))
    with pytest.raises(PutMessageError, match="does not exist"):
        strict.put_messages([{"topic": "Nope", "body": b"x"}])
    assert strict.commitlog.read(spark).count() == 0


def test_topics_and_consumer_offsets(store):
    store.create_topic("T", read_queue_nums=8, write_queue_nums=2, perm=4)
    config = store.topic_config("T")
    assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (8, 2, 4)
    assert store.topic_config("missing") is None
    assert store.query_consumer_offset("g", "T", 0) == -1
    store.commit_consumer_offset("g", "T", 0, 5)
    store.commit_consumer_offset("g", "T", 0, 7)
    store.commit_consumer_offsets([("g", "T", 1, 3), ("h", "T", 0, 1)])
    assert store.query_consumer_offset("g", "T", 0) == 7
    assert store.query_consumer_offset("g", "T", 1) == 3
    assert store.query_consumer_offset("h", "T", 0) == 1


def test_expire_removes_whole_commitlog_files(spark, tmp_path):
    s = MessageStore.open(str(tmp_path / "s"), spark,
                          MessageStoreConfig(mapped_file_size_commit_log=1000, **CONFIG))
    s.create_topic("T", read_queue_nums=4, write_queue_nums=4)
    put = s.put_messages([{"topic": "T", "body": "b" * 100} for _ in range(24)])
    report = s.expire(before_commitlog_offset=1999, clean_consume_queue=False)
    assert report.min_commitlog_offset == 1000  # only file 0 lies wholly before offset 1999
    kept = [r["commitlog_offset"] for r in s.commitlog.read(spark).collect()]
    assert sorted(kept) == [r["commitlog_offset"] for r in put if r["commitlog_offset"] >= 1000]
    assert s.get_min_offset_in_queue("T", 0) == 0  # not cleaned yet
    from rocketfilter.store.retention import clean_consumequeue
    clean_consumequeue(s, report.min_commitlog_offset)
    first_live = {}
    for r in put:
        if r["commitlog_offset"] >= 1000:
            first_live.setdefault(r["queue_id"], r["queue_offset"])
    assert [s.get_min_offset_in_queue("T", q) for q in range(4)] == [first_live[q] for q in range(4)]
    assert [s.get_max_offset_in_queue("T", q) for q in range(4)] == [6, 6, 6, 6]
    assert s.expire(before_timestamp=0).commitlog_files_removed == 0
    assert s.put_messages([{"topic": "T", "body": "x"}])[0]["queue_offset"] == 6


def test_compact_and_vacuum_keep_every_row_and_the_marks(store):
    for _ in range(4):
        store.put_messages(_messages(5))
    before = (len(store.commitlog.refresh().files()), len(store.consumequeue.refresh().files()))
    result = store.compact()
    # The CommitLog merges into one file; the ConsumeQueue into one file per queue.
    assert result["commitlog"] == (before[0], 1) and result["consumequeue"] == (before[1], 4)
    assert store.commitlog.read(store.spark).count() == 20
    assert store.consumequeue.read(store.spark).count() == 20
    put = store.put_messages(_messages(1))
    assert put[0]["queue_offset"] == 5  # 20 round-robin messages gave every queue 0..4
    deleted = store.vacuum(0, enforce_retention_duration=False)
    assert len(deleted) >= before[0] + before[1]
    assert store.commitlog.read(store.spark).count() == 21


_PRODUCER = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store import MessageStore
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").getOrCreate())
    store = MessageStore.open(sys.argv[1], spark, MessageStoreConfig(dispatch_on_put=False),
                              repair=False)
    print("ready", flush=True)
    sys.stdin.readline()   # the test's own process puts from here on too
    for batch in range(3):
        store.put_messages([{"topic": "T", "body": f"{sys.argv[2]}-{batch}-{i}".encode()}
                            for i in range(10)])
""")


def _producer_process(store, tmp_path):
    """A producer in its own process (its own JVM), started and ready to put."""
    script = tmp_path / "producer.py"
    script.write_text(_PRODUCER)
    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
    err = open(tmp_path / "producer.err", "w+")   # a file: a full pipe would block the start
    proc = subprocess.Popen([sys.executable, str(script), store.uri, "p1"], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    if proc.stdout.readline().strip() != "ready":   # no timeout: a loaded machine may take long (issue 10.6)
        proc.wait()
        raise AssertionError((tmp_path / "producer.err").read_text()[-3000:])
    return proc


def test_concurrent_producer_processes_get_unique_contiguous_offsets(store, tmp_path):
    """Two processes put at once: a producer process and this one (one JVM start, not two)."""
    proc = _producer_process(store, tmp_path)
    mine = MessageStore.open(store.uri, store.spark, MessageStoreConfig(dispatch_on_put=False), repair=False)
    proc.stdin.write("go\n")
    proc.stdin.close()
    for batch in range(3):
        mine.put_messages([{"topic": "T", "body": f"p0-{batch}-{i}".encode()} for i in range(10)])
    proc.stdout.read()
    assert proc.wait() == 0, (tmp_path / "producer.err").read_text()[-3000:]
    store.dispatch()
    cl = store.commitlog.read(store.spark)
    assert cl.count() == 60
    assert cl.select("commitlog_offset").distinct().count() == 60
    totals = cl.select(F.max(F.col("commitlog_offset") + F.col("store_size")).alias("end"),
                       F.sum("store_size").alias("total")).first()
    assert totals["end"] == totals["total"]
    for r in cl.groupBy("queue_id").agg(F.count("*").alias("n"), F.max("queue_offset").alias("hi"),
                                        F.countDistinct("queue_offset").alias("d")).collect():
        assert r["hi"] == r["n"] - 1 == r["d"] - 1
    assert store.consumequeue.read(store.spark).count() == 60
