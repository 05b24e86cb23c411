"""rocketfilter.delta.table: delta-rs owns the log, Spark/pyarrow the parquet files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import TableFeatures
from deltalake.transaction import AddAction
from pyspark.sql import functions as F

from rocketfilter.delta.table import (ConcurrentCommitError, DeltaFeatureError, DeltaSchemaError,
                                      FileStats, Table, delta_spark_available)
from rocketfilter.delta.write import filesystem_path, string_upper_bound
from rocketfilter.store.schema import (COMMITLOG_SCHEMA, CONSUMER_OFFSETS_SCHEMA, STATS_COLUMNS,
                                       TOPICS_SCHEMA, arrow_schema)

REPO = Path(__file__).resolve().parents[2]
TOPIC_STATS = STATS_COLUMNS["topics"]


def _topics(names, perm=6):
    return pa.Table.from_pylist(
        [{"topic": n, "read_queue_nums": 4, "write_queue_nums": 4, "perm": perm,
          "topic_filter_type": "SINGLE_TAG", "updated_at": i} for i, n in enumerate(names)],
        schema=arrow_schema(TOPICS_SCHEMA))


def _open_topics(tmp_path, name="topics") -> Table:
    return Table.open(str(tmp_path / name), TOPICS_SCHEMA, stats_columns=TOPIC_STATS)


def _commitlog_df(spark, n, parts=4):
    """n CommitLog rows with maps, bodies and nulls, in ``parts`` offset-ordered partitions."""
    i = F.col("id")
    return (spark.range(0, n, 1, parts).select(
        (i * 100).alias("commitlog_offset"), F.lit(100).alias("store_size"),
        F.concat(F.lit("T"), (i % 3).cast("string")).alias("topic"),
        (i % 4).cast("int").alias("queue_id"), (i / 12).cast("long").alias("queue_offset"),
        F.when(i % 5 == 0, None).otherwise(F.concat(F.lit("Tag"), (i % 2).cast("string"))).alias("tags"),
        F.lit(None).cast("string").alias("keys"),
        F.create_map(F.lit("i"), i.cast("string")).alias("properties"),
        F.concat(F.lit("body-"), i.cast("string")).cast("binary").alias("body"),
        F.lit(7).alias("body_crc"), F.lit(0).alias("flag"), F.lit(0).alias("sys_flag"),
        i.alias("born_timestamp"), F.lit("h:1").alias("born_host"),
        (i + 1000).alias("store_timestamp"), F.lit("h:2").alias("store_host"),
        F.lit(0).alias("reconsume_times"), F.lit(0).cast("long").alias("prepared_transaction_offset"),
        F.concat(F.lit("id"), i.cast("string")).alias("msg_id")))


# ---- opening -------------------------------------------------------------------------------

def test_open_creates_a_plain_delta_table_and_reopens(tmp_path):
    t = _open_topics(tmp_path)
    assert t.version() == 0 and t.files() == []
    proto = deltalake.DeltaTable(t.uri).protocol()
    assert (proto.min_reader_version, proto.min_writer_version) == (1, 2)
    assert not proto.reader_features and not proto.writer_features
    assert Table.open(t.uri, TOPICS_SCHEMA, create=False).version() == 0
    with pytest.raises(FileNotFoundError, match="no Delta table"):
        Table.open(str(tmp_path / "absent"), TOPICS_SCHEMA, create=False)
    with pytest.raises(ValueError, match="nope"):
        Table.open(str(tmp_path / "x"), TOPICS_SCHEMA, stats_columns=["nope"])
    with pytest.raises(ValueError, match="cannot contain '%'"):
        Table.open(str(tmp_path / "a%20b"), TOPICS_SCHEMA)


def test_open_with_another_schema_names_the_differences(tmp_path):
    t = _open_topics(tmp_path)
    with pytest.raises(DeltaSchemaError, match=r"topics: schema mismatch: missing \['group', 'offset', 'queue_id'\]; unexpected"):
        Table.open(t.uri, CONSUMER_OFFSETS_SCHEMA)
    widened = TOPICS_SCHEMA.fromJson(json.loads(TOPICS_SCHEMA.json().replace('"integer"', '"long"')))
    with pytest.raises(DeltaSchemaError, match="perm: table has int not null, expected bigint"):
        Table.open(t.uri, widened)


@pytest.mark.parametrize("feature, message", [
    (TableFeatures.DeletionVectors, "deletion vectors"),
    (TableFeatures.ColumnMapping, "column mapping"),
])
def test_refuses_tables_a_parquet_scan_would_misread(tmp_path, feature, message):
    t = _open_topics(tmp_path)
    deltalake.DeltaTable(t.uri).alter.add_feature(feature, allow_protocol_versions_increase=True)
    with pytest.raises(DeltaFeatureError, match=message) as err:
        Table.open(t.uri, TOPICS_SCHEMA)
    assert t.uri in str(err.value)
    with pytest.raises(DeltaFeatureError):  # an open Table notices on refresh too
        t.refresh()


def test_refuses_name_column_mapping_at_reader_version_2(tmp_path):
    uri = str(tmp_path / "cm")
    deltalake.DeltaTable.create(uri, arrow_schema(TOPICS_SCHEMA),
                                configuration={"delta.columnMapping.mode": "name"})
    with pytest.raises(DeltaFeatureError, match="column mapping"):
        Table.open(uri, TOPICS_SCHEMA)


def test_refuses_to_write_past_constraints(tmp_path):
    t = _open_topics(tmp_path)
    deltalake.DeltaTable(t.uri).alter.add_constraint({"perm_ok": "perm > 0"})
    t.refresh()
    with pytest.raises(DeltaFeatureError, match="constraints"):
        t.commit(t.write_arrow(_topics(["a"])))


# ---- stats and pruning (no Spark) ------------------------------------------------------------

def test_string_upper_bound():
    assert string_upper_bound("a" * 32) == "a" * 32
    assert string_upper_bound("a" * 31 + "bc") == "a" * 31 + "c"
    assert string_upper_bound("ab" + "\U0010ffff" * 40) == "ac"
    assert string_upper_bound("\ud7ff" * 33) == "\ud7ff" * 31 + "\ue000"
    assert string_upper_bound("\U0010ffff" * 33) is None


def test_long_and_non_ascii_strings_prune_correctly(tmp_path):
    t = _open_topics(tmp_path)
    long_a, long_z = "ä" * 40 + "1", "z" * 31 + "\U0010ffff" * 5
    t.commit(t.write_arrow(_topics([long_a, "b"])))
    t.commit(t.write_arrow(_topics([long_z])))
    t.commit(t.write_arrow(_topics(["\U0010ffff" * 40])))  # no 32-char upper bound exists
    a, z, top = sorted(t.files(), key=lambda f: f.min["topic"])
    assert a.min["topic"] == "b" and a.max["topic"] == "ä" * 31 + "å"
    assert z.min["topic"] == long_z[:32] and z.max["topic"] == "z" * 30 + "{"
    assert top.max == {}  # left out rather than wrong
    for value, expect in [(long_a, {a}), ("b", {a}), (long_z, {a, z}), ("\U0010ffff" * 40, {top}),
                          ("a", set())]:
        assert set(t.files([("topic", "=", value)])) == expect, value


def test_files_prunes_on_min_max_and_keeps_files_without_stats(tmp_path):
    t = _open_topics(tmp_path)
    for names in (["a", "c"], ["d", "f"], ["g", "k"]):
        t.commit(t.write_arrow(_topics(names)))
    bare = t.write_arrow(_topics(["m"]))
    t.commit([AddAction(bare[0].path, bare[0].size, {}, bare[0].modification_time, True,
                        json.dumps({"numRecords": 1}))])
    count = lambda *where: len(t.files(list(where)))  # noqa: E731
    assert count() == 4
    assert count(("topic", "=", "b")) == 2          # [a,c] and the file without stats
    assert count(("topic", "=", "cc")) == 1
    assert count(("topic", "<", "d")) == 2 and count(("topic", "<=", "d")) == 3
    assert count(("topic", ">", "f")) == 2 and count(("topic", ">=", "f")) == 3
    assert count(("topic", "in", ["b", "h"])) == 3
    assert count(("topic", ">=", "d"), ("topic", "<", "g")) == 2
    no_stats = [f for f in t.files() if not f.min]
    assert len(no_stats) == 1 and no_stats[0].num_records == 1
    with pytest.raises(ValueError, match="no column 'nope'"):
        t.files([("nope", "=", 1)])
    with pytest.raises(ValueError, match="unsupported"):
        t.files([("topic", "like", "a%")])


def test_a_term_every_file_proves_needs_no_row_filter():
    """``unproven`` keeps the terms some row of the files may fail: integer terms on non-null
    columns whose min/max prove them for every file go (Table.read filters by the rest)."""
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    from rocketfilter.delta.stats import unproven

    schema = StructType([StructField("q", IntegerType(), False), StructField("o", LongType(), False),
                         StructField("n", LongType(), True)])
    a = FileStats("a", 1, 10, {"q": 1, "o": 100, "n": 5}, {"q": 1, "o": 199, "n": 9})
    b = FileStats("b", 1, 10, {"q": 2, "o": 150, "n": 5}, {"q": 3, "o": 300, "n": 9})
    bare = FileStats("c", 1, -1, {}, {})
    keep = lambda files, *where: unproven(schema, files, list(where))  # noqa: E731
    assert keep([a, b], ("o", ">=", 100), ("o", "<", 301), ("q", "in", [3, 1, 2])) == []
    assert keep([a, b], ("o", ">", 99), ("o", "<=", 300)) == []
    assert keep([a, b], ("o", ">=", 101)) == [("o", ">=", 101)]           # a starts at 100
    assert keep([a, b], ("o", "<", 300)) == [("o", "<", 300)]
    assert keep([a, b], ("q", "in", [1, 3])) == [("q", "in", [1, 3])]     # b may hold 2
    assert keep([a], ("q", "=", 1)) == [] and keep([a, b], ("q", "=", 1)) == [("q", "=", 1)]
    assert keep([a, b], ("n", ">=", 0)) == [("n", ">=", 0)]               # nullable: a null fails it
    assert keep([a, bare], ("o", ">=", 0)) == [("o", ">=", 0)]            # a file without stats
    assert keep([a], ("q", "=", "1")) == [("q", "=", "1")]                # not an int


# ---- commits --------------------------------------------------------------------------------

def test_expected_version_conflicts_with_any_later_commit(tmp_path):
    t = _open_topics(tmp_path)
    other = Table.open(t.uri, TOPICS_SCHEMA)  # a second writer, same snapshot (version 0)
    assert other.commit(other.write_arrow(_topics(["a"])), expected_version=0) == 1
    # t still holds version 0: delta-rs must refuse to write version 1 again (no retries).
    with pytest.raises(ConcurrentCommitError, match="expected version 0.*at version 1") as err:
        t.commit(t.write_arrow(_topics(["b"])), expected_version=0)
    assert (err.value.expected_version, err.value.actual_version) == (0, 1)
    with pytest.raises(ConcurrentCommitError):  # now known up front
        t.commit([], expected_version=0)
    assert t.commit(t.write_arrow(_topics(["b"])), expected_version=1) == 2
    assert sorted(deltalake.DeltaTable(t.uri).to_pyarrow_table()["topic"].to_pylist()) == ["a", "b"]


def test_plain_commits_retry_and_return_their_own_version(tmp_path):
    t, other = _open_topics(tmp_path), _open_topics(tmp_path)
    assert other.commit(other.write_arrow(_topics(["a"]))) == 1
    assert t.commit(t.write_arrow(_topics(["b"]))) == 2   # t was stale: delta-rs retried
    assert t.version() == 2


def test_removing_a_file_someone_else_removed_conflicts(tmp_path):
    t = _open_topics(tmp_path)
    t.commit(t.write_arrow(_topics(["a"])))
    t.commit(t.write_arrow(_topics(["b"])))
    other = Table.open(t.uri, TOPICS_SCHEMA)
    [a] = t.files([("topic", "=", "a")])
    other.remove([a])
    # delta-rs's own retry would let this remove land twice (and a compaction duplicate rows).
    with pytest.raises(ConcurrentCommitError, match="already removed"):
        t.commit(t.write_arrow(_topics(["a2"])), [a], operation="OPTIMIZE")
    [b] = t.files([("topic", "=", "b")])
    assert t.remove([b], custom_metadata={"why": "test"}) == t.version()
    assert t.files() == [] and t.latest_metadata("why") == "test"


def test_app_transaction_and_latest_metadata(tmp_path):
    t = _open_topics(tmp_path)
    assert t.transaction_version("loader") is None and t.latest_metadata("state") is None
    t.commit(t.write_arrow(_topics(["a"])), app_transaction=("loader", 7),
             custom_metadata={"state": {"next": 10, "queues": [1, 2]}})
    t.commit(t.write_arrow(_topics(["b"])), custom_metadata={"other": 1}, operation="MERGE")
    assert t.transaction_version("loader") == 7
    assert t.latest_metadata("state") == {"next": 10, "queues": [1, 2]}
    assert t.latest_metadata("state", max_commits=1) is None
    assert Table.open(t.uri, TOPICS_SCHEMA).transaction_version("loader") == 7
    info = deltalake.DeltaTable(t.uri).history(1)[0]
    assert info["rocketfilter.operation"] == "MERGE" and info["operation"] == "WRITE"


WRITER = textwrap.dedent("""
    import json, os, sys, time
    import pyarrow as pa
    from rocketfilter.delta.table import ConcurrentCommitError, Table
    from rocketfilter.store.schema import TOPICS_SCHEMA, arrow_schema
    uri, me, other, n, lockstep, sync = sys.argv[1:]
    n, lockstep = int(n), int(lockstep)
    t = Table.open(uri, TOPICS_SCHEMA, create=False)
    versions, conflicts = [], 0
    for i in range(n):
        rows = [{"topic": f"{me}-{i}", "read_queue_nums": 1, "write_queue_nums": 1, "perm": 6,
                 "topic_filter_type": "SINGLE_TAG", "updated_at": i}]
        adds = t.write_arrow(pa.Table.from_pylist(rows, schema=arrow_schema(TOPICS_SCHEMA)))
        version = t.refresh().version()
        if i < lockstep:  # both read the version before either commits: one of them must lose
            open(os.path.join(sync, f"{me}-{i}"), "w").close()
            # However long the other takes to arrive; the test writes "abort" if it died.
            while not os.path.exists(os.path.join(sync, f"{other}-{i}")):
                assert not os.path.exists(os.path.join(sync, "abort")), "the other writer failed"
                time.sleep(0.002)
        while True:
            try:
                versions.append(t.commit(adds, expected_version=version))
                break
            except ConcurrentCommitError:
                conflicts += 1
                version = t.refresh().version()
    print(json.dumps({"versions": versions, "conflicts": conflicts}))
""")


def test_two_processes_commit_with_expected_version_and_lose_nothing(tmp_path):
    t = _open_topics(tmp_path)
    n, lockstep, names = 16, 8, ("p", "q")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, t.uri, me, other, str(n), str(lockstep),
                               str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
             for me, other in (names, names[::-1])]
    while any(p.poll() is None for p in procs):  # no deadline: a loaded machine may be slow
        if any(p.returncode not in (None, 0) for p in procs):
            (tmp_path / "abort").touch()  # a writer died: the other must not wait for it
        time.sleep(0.05)
    results = []
    for p in procs:
        out, err = p.communicate()
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    versions = [v for r in results for v in r["versions"]]
    assert sorted(versions) == list(range(1, 2 * n + 1))       # every commit its own version
    topics = deltalake.DeltaTable(t.uri).to_pyarrow_table()["topic"].to_pylist()
    assert sorted(topics) == sorted(f"{name}-{i}" for name in names for i in range(n))
    # Each lockstep round has two commits based on the same snapshot: delta-rs refused one.
    assert sum(r["conflicts"] for r in results) >= lockstep, results
    print("conflicts per process:", [r["conflicts"] for r in results])


# ---- Spark reads and writes -----------------------------------------------------------------

def test_spark_write_commit_read_back(spark, tmp_path):
    # A space and non-ASCII in the path: Spark takes file URIs unencoded, pyarrow does not.
    t = Table.open(str(tmp_path / "a store ü" / "commitlog"), COMMITLOG_SCHEMA,
                   stats_columns=STATS_COLUMNS["commitlog"])
    df = _commitlog_df(spark, 400)
    adds = t.write(df, sort_by=["commitlog_offset"], max_rows_per_file=60, row_group_rows=16)
    assert len(adds) == 8  # 4 partitions x 100 rows, at most 60 rows per file
    assert all(a.path.startswith("part-") and "/" not in a.path for a in adds)
    assert t.commit(adds, expected_version=0) == 1
    expected = sorted(df.collect())
    assert sorted(t.read(spark).collect()) == expected
    # Plain Delta: delta-rs reads the same rows, and each file's parquet schema is the table's.
    assert deltalake.DeltaTable(t.uri).to_pyarrow_table().num_rows == 400
    for f in t.files():
        fs, local = filesystem_path(f.path)
        assert pq.read_schema(local, filesystem=fs).remove_metadata() == t.arrow_schema
        data = pq.read_table(local, filesystem=fs)
        assert f.num_records == data.num_rows
        assert pq.ParquetFile(local, filesystem=fs).metadata.row_group(0).num_rows <= 16
        for c in STATS_COLUMNS["commitlog"]:
            values = data[c].to_pylist()
            assert (f.min[c], f.max[c]) == (min(values), max(values)), c
    # Offsets were range-partitioned: an offset range keeps exactly the files covering it.
    assert len(t.files([("commitlog_offset", "<", 6000)])) == 1
    assert len(t.files([("commitlog_offset", ">=", 5900), ("commitlog_offset", "<=", 6000)])) == 2
    got = t.read(spark, [("topic", "=", "T1"), ("commitlog_offset", "<", 6000)])
    assert sorted(r.msg_id for r in got.collect()) == sorted(
        r.msg_id for r in expected if r.topic == "T1" and r.commitlog_offset < 6000)
    # A term every file's stats prove filters nothing, and no row filter is left for it.
    proven = t.read(spark, [("commitlog_offset", ">=", 0), ("topic", "=", "T1")])
    assert sorted(r.msg_id for r in proven.collect()) == sorted(r.msg_id for r in expected if r.topic == "T1")
    assert ">= 0" not in proven._jdf.queryExecution().optimizedPlan().toString()
    empty = t.read(spark, [("commitlog_offset", ">", 10**9)])
    assert empty.schema == t.read(spark).schema and empty.count() == 0


def test_write_checks_columns_and_not_null(spark, tmp_path):
    t = _open_topics(tmp_path)
    df = spark.createDataFrame([("a", 1)], "topic string, perm int")
    with pytest.raises(ValueError, match="missing"):
        t.write(df)
    nulls = spark.createDataFrame([(None, 1, 1, 6, "SINGLE_TAG", 0)],
                                  "topic string, read_queue_nums int, write_queue_nums int, "
                                  "perm int, topic_filter_type string, updated_at long")
    with pytest.raises(Exception, match="'topic' is NOT NULL"):
        t.write(nulls)
    assert [f for f in os.listdir(t.uri) if f.endswith(".parquet")] == []  # failed task cleaned up


def test_rewrite_compacts_and_keeps_rows(spark, tmp_path):
    t = Table.open(str(tmp_path / "commitlog"), COMMITLOG_SCHEMA,
                   stats_columns=STATS_COLUMNS["commitlog"])
    t.commit(t.write(_commitlog_df(spark, 300, parts=9)))
    before = t.files()
    assert len(before) == 9
    stale = Table.open(t.uri, COMMITLOG_SCHEMA)
    extra = [dict(r.asDict(), commitlog_offset=10**6 + i) for i, r in enumerate(t.read(spark).take(3))]
    t.commit(t.write_arrow(pa.Table.from_pylist(extra, schema=t.arrow_schema)))
    rows = sorted(t.read(spark).collect())
    parquet = lambda: sorted(p for p in os.listdir(t.uri) if p.endswith(".parquet"))  # noqa: E731
    on_disk = parquet()
    # Metadata describes the snapshot it was computed on: no rebasing over the extra commit.
    with pytest.raises(ConcurrentCommitError):
        stale.rewrite(spark, before, sort_by=["commitlog_offset"], max_rows_per_file=150,
                      custom_metadata={"state": 0})
    assert parquet() == on_disk  # its new files were deleted again
    version = stale.refresh().rewrite(spark, before, sort_by=["commitlog_offset"],
                                      max_rows_per_file=150, custom_metadata={"state": 1})
    after = sorted(t.refresh().files(), key=lambda f: f.min["commitlog_offset"])
    assert version == t.version() == 3 and len(after) == 3 and sorted(t.read(spark).collect()) == rows
    assert after[0].max["commitlog_offset"] < after[1].min["commitlog_offset"]  # clustered
    log = Path(t.uri, "_delta_log", f"{version:020d}.json").read_text().splitlines()
    actions = [json.loads(line) for line in log]
    assert sum("remove" in a for a in actions) == 9 and sum("add" in a for a in actions) == 2
    assert all(not a[k]["dataChange"] for a in actions for k in ("add", "remove") if k in a)
    assert t.latest_metadata("state") == 1


def test_commit_with_removes_rebases_over_appends(tmp_path):
    t = _open_topics(tmp_path)
    t.commit(t.write_arrow(_topics(["a", "b"])))
    stale = Table.open(t.uri, TOPICS_SCHEMA)
    t.commit(t.write_arrow(_topics(["c"])))
    [ab] = stale.files()
    assert stale.commit(stale.write_arrow(_topics(["a", "b"])), [ab], data_change=False) == 3
    assert sorted(deltalake.DeltaTable(t.uri).to_pyarrow_table()["topic"].to_pylist()) == ["a", "b", "c"]


def test_vacuum_deletes_removed_and_orphan_files(tmp_path):
    t = _open_topics(tmp_path)
    t.commit(t.write_arrow(_topics(["a"])))
    t.commit(t.write_arrow(_topics(["b"])))
    t.write_arrow(_topics(["orphan"]))                       # a failed writer's leftover
    [a] = t.files([("topic", "=", "a")])
    t.remove([a])
    assert t.vacuum() == []                                 # within the retention
    deleted = t.vacuum(0, enforce_retention_duration=False)
    assert len(deleted) == 2 and any(a.path.endswith(Path(d).name) for d in deleted)
    parquet = [f for f in os.listdir(t.uri) if f.endswith(".parquet")]
    assert [t.uri + "/" + p for p in parquet] == [f.path[len("file://"):] for f in t.files()]
    assert deltalake.DeltaTable(t.uri).to_pyarrow_table()["topic"].to_pylist() == ["b"]


def test_checkpoint(tmp_path):
    t = _open_topics(tmp_path)
    t.commit(t.write_arrow(_topics(["a"])))
    t.checkpoint()
    assert (Path(t.uri) / "_delta_log" / "_last_checkpoint").exists()
    assert [f.num_records for f in Table.open(t.uri, TOPICS_SCHEMA).files()] == [1]


def test_file_stats_are_hashable_by_path():
    f = FileStats("file:///x/part-1.parquet", 1, 1, {"topic": "a"}, {"topic": "b"})
    assert {f, FileStats(f.path, 1, 1, {"topic": "a"}, {"topic": "b"})} == {f}


def test_delta_spark_detection_is_false_here(spark):
    assert delta_spark_available(spark) is False
    assert delta_spark_available(object()) is False


def test_native_delta_read_matches(spark, tmp_path):
    if not delta_spark_available(spark):
        pytest.skip("Delta Lake's Spark connector is not on this session's classpath (it has no release for "
                    "pyspark 4.3; tests/delta_readers reads the store with it in a pyspark 4.2 venv)")
    t = _open_topics(tmp_path)
    t.commit(t.write_arrow(_topics(["a", "b"])))
    assert sorted(t.read(spark, native=True).collect()) == sorted(t.read(spark, native=False).collect())


def test_split_on_starts_a_new_file_per_key(spark, tmp_path):
    from rocketfilter.delta.table import Table
    from rocketfilter.store.schema import CONSUMEQUEUE, SCHEMAS, STATS_COLUMNS

    table = Table.open(str(tmp_path / "cq"), SCHEMAS[CONSUMEQUEUE], stats_columns=STATS_COLUMNS[CONSUMEQUEUE])
    df = spark.createDataFrame(
        [("T", q, o, q * 1000 + o, 10, 0, 0, None) for q in range(3) for o in range(50)],
        SCHEMAS[CONSUMEQUEUE]).coalesce(1)
    table.commit(table.write(df, sort_by=["topic", "queue_id", "queue_offset"],
                             split_on=["topic", "queue_id"], row_group_rows=16))
    files = table.refresh().files()
    assert sorted((f.min["queue_id"], f.max["queue_id"], f.num_records) for f in files) == \
        [(0, 0, 50), (1, 1, 50), (2, 2, 50)]
    where = [("queue_id", "=", 1), ("queue_offset", ">=", 10), ("queue_offset", "<", 20)]
    assert len(table.files(where)) == 1 and table.read(spark, where=where).count() == 10
