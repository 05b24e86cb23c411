"""scan_store on the real-format sample store: every manifest message and unit comes back from the
DataFrames; damage stops validation, or is counted and left out with skip_damaged."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from rocketfilter.store.importer import scan_store
from rocketfilter.broker_files.records import StoreFormatError
from rocketfilter.store.schema import COMMITLOG_SCHEMA, CONSUMEQUEUE_SCHEMA
from tests.store.test_records import expected_fields


@pytest.fixture(scope="module")
def imported(spark, sample):
    store = scan_store(spark, str(sample))
    yield store
    store.unpersist()


def test_report_counts_everything(imported):
    report = imported.validate()
    assert (report.commitlog_files, report.consumequeue_files) == (97, 52)
    assert (report.messages, report.blanks, report.cq_units, report.cq_units_checked) == (2997, 95, 2997, 2997)
    assert (report.damaged_count, report.damaged, report.records_without_unit) == (0, [], 0)
    assert report.commitlog_end == 6225920 + 38521 and report.commitlog_bytes == 97 * 65536
    assert imported.topics == [("OrderEvents", 4), ("TopicTest", 4), ("iot_sensor-metrics", 4)]
    assert imported.validate() is report  # computed once


def test_dataframes_have_the_store_schemas(imported):
    assert imported.commitlog.schema == COMMITLOG_SCHEMA
    assert imported.consumequeue.schema == CONSUMEQUEUE_SCHEMA


def test_every_manifest_message_comes_back(imported, manifest):
    rows = {r["commitlog_offset"]: r.asDict() for r in imported.commitlog.collect()}
    assert len(rows) == len(manifest["message"]) == 2997
    wrong = []
    for m in manifest["message"]:
        row = rows[m["commitLogOffset"]]
        for key, value in expected_fields(m).items():
            if key in row and row[key] != value:
                wrong.append(f"{m['commitLogOffset']} {key}: {row[key]!r} != {value!r}")
    assert not wrong, wrong[:20]


def test_every_manifest_unit_comes_back(imported, manifest):
    stored_at = {m["commitLogOffset"]: m["storeTimestamp"] for m in manifest["message"]}
    rows = {(r["topic"], r["queue_id"], r["queue_offset"]): r for r in imported.consumequeue.collect()}
    assert len(rows) == len(manifest["cq_entry"]) == 2997
    for e in manifest["cq_entry"]:
        r = rows[(e["topic"], e["queueId"], e["queueOffset"])]
        assert (r["commitlog_offset"], r["size"], r["tags_code"]) == (e["commitLogOffset"], e["size"], e["tagsCode"])
        assert r["store_timestamp"] == stored_at[e["commitLogOffset"]] and r["filter_bitmap"] is None


@pytest.fixture(scope="module")
def damaged(sample, manifest, tmp_path_factory):
    """A copy with one body byte flipped (CRC) and one unit pointing past the commit log."""
    root = tmp_path_factory.mktemp("damaged") / "store"
    shutil.copytree(sample, root, ignore=shutil.ignore_patterns("manifest.jsonl", "README.md"))
    victim = next(m for m in manifest["message"]
                  if m["file"].endswith("0131072") and m["filePosition"] > 0 and m["body_b64"])
    path = root / victim["file"]
    data = bytearray(path.read_bytes())
    data[victim["filePosition"] + victim["storeSize"] - victim["propertiesLength"] - 2
         - len(victim["topic"].encode()) - 2] ^= 0x01  # the last stored body byte
    path.write_bytes(bytes(data))
    unit = next(e for e in manifest["cq_entry"] if e["commitLogOffset"] != victim["commitLogOffset"])
    cq = root / unit["file"]
    data = bytearray(cq.read_bytes())
    struct.pack_into(">q", data, unit["filePosition"], 1 << 40)
    cq.write_bytes(bytes(data))
    return root, victim, unit


def test_validate_raises_on_the_first_damage(spark, damaged):
    root, victim, _ = damaged
    with pytest.raises(StoreFormatError) as info:
        scan_store(spark, str(root), persist=False).validate()
    err = info.value
    assert (err.file, err.byte_offset) == (victim["file"], victim["filePosition"])
    assert "CRC mismatch" in err.reason and victim["file"] in str(err)


def test_skip_damaged_counts_and_excludes(spark, damaged):
    root, victim, unit = damaged
    store = scan_store(spark, str(root), skip_damaged=True)
    try:
        report = store.validate()
        assert report.damaged_count == 3 and report.messages == 2996 and report.cq_units == 2995
        assert report.records_without_unit == 1  # the record the redirected unit pointed to
        where = {(d.file, d.byte_offset): d.reason for d in report.damaged}
        assert "CRC mismatch" in where[(victim["file"], victim["filePosition"])]
        assert "past the end of the commit log" in where[(unit["file"], unit["filePosition"])]
        assert "no record starts" in where[(victim["cq_file"], victim["cq_filePosition"])]
        offsets = {r[0] for r in store.commitlog.select("commitlog_offset").collect()}
        assert len(offsets) == 2996 and victim["commitLogOffset"] not in offsets
        units = store.consumequeue.select("commitlog_offset").collect()
        assert len(units) == 2995 and (1 << 40) not in {r[0] for r in units}
    finally:
        store.unpersist()


def test_a_directory_without_commitlog_is_not_found(spark, tmp_path):
    with pytest.raises(FileNotFoundError, match="no commitlog directory"):
        scan_store(spark, str(tmp_path))


def test_import_job_prints_one_line_for_a_missing_source(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "import_store_job", Path(__file__).parents[2] / "spark_jobs" / "import_store.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    code = job.main(["--store", str(tmp_path / "rf"), "--source", str(tmp_path / "missing")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "FileNotFoundError" in err and "Traceback" not in err
    assert not (tmp_path / "rf").exists()  # the target store was not created


def test_import_into_a_store_with_messages_is_refused_before_spark(orders_store, tmp_path, capsys, monkeypatch):
    from rocketfilter.cli import main
    from rocketfilter.jobs import common

    def refuse(*args, **kwargs):
        raise AssertionError("Spark started")
    monkeypatch.setattr(common, "start_spark", refuse)
    (tmp_path / "broker" / "commitlog").mkdir(parents=True)
    assert main(["import", "--store", orders_store, "--source", str(tmp_path / "broker")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rocketfilter import: error: StoreNotEmptyError: store ") and err.count("\n") == 1


def _copy(sample, tmp_path_factory, name):
    root = tmp_path_factory.mktemp(name) / "store"
    shutil.copytree(sample, root, ignore=shutil.ignore_patterns("manifest.jsonl", "README.md"))
    return root


def _set_queue_id(root, message, queue_id):
    """Overwrite a record's QUEUEID (bytes 12..15, big-endian)."""
    path = root / message["file"]
    data = bytearray(path.read_bytes())
    struct.pack_into(">I", data, message["filePosition"] + 12, queue_id & 0xFFFFFFFF)
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def corrupt_queue_ids(sample, manifest, tmp_path_factory):
    """One record with its QUEUEID's high byte set to 0xFF (out of range), one whose QUEUEID
    names another valid queue than the unit that points at it."""
    root = _copy(sample, tmp_path_factory, "queueid")
    by_queue = {}
    for m in manifest["message"]:
        by_queue.setdefault((m["topic"], m["queueId"]), m)
    high = by_queue[("TopicTest", 3)]
    _set_queue_id(root, high, 3 | (0xFF << 24))
    other = by_queue[("OrderEvents", 1)]
    _set_queue_id(root, other, 2)
    return root, high, other


def test_a_corrupt_queue_id_stops_the_import_at_the_record(spark, corrupt_queue_ids):
    root, high, other = corrupt_queue_ids
    with pytest.raises(StoreFormatError) as info:
        scan_store(spark, str(root), persist=False).validate()
    first = min((high, other), key=lambda m: (m["file"], m["filePosition"]))
    assert (info.value.file, info.value.byte_offset) == (first["file"], first["filePosition"])


def test_skip_damaged_never_imports_a_record_with_a_corrupt_queue_id(spark, corrupt_queue_ids, tmp_path):
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store import MessageStore

    root, high, other = corrupt_queue_ids
    store = MessageStore.open(str(tmp_path / "rf"), spark, MessageStoreConfig(consume_queue_rows_per_file=1000))
    report = store.import_store(str(root), skip_damaged=True)
    where = {(d.file, d.byte_offset): d.reason for d in report.damaged}
    assert "QUEUEID -16777213 is out of range" in where[(high["file"], high["filePosition"])]
    assert "disagrees with the unit" in where[(other["file"], other["filePosition"])]
    assert "belongs to TopicTest/-16777213" in where[(high["cq_file"], high["cq_filePosition"])]
    assert "belongs to OrderEvents/2" in where[(other["cq_file"], other["cq_filePosition"])]
    assert report.damaged_count == 4 and report.messages == 2995 and report.cq_units == 2995
    cl = store.commitlog.read(spark)
    assert cl.count() == store.consumequeue.read(spark).count() == 2995
    assert {r[0] for r in cl.select("commitlog_offset").collect()}.isdisjoint(
        {high["commitLogOffset"], other["commitLogOffset"]})
    assert sorted(store.commitlog_state().queues["TopicTest"]) == [0, 1, 2, 3]
    assert sorted(store.consumequeue_state().queues["TopicTest"]) == [0, 1, 2, 3]


@pytest.fixture(scope="module")
def linked(sample, tmp_path_factory):
    """A symlinked queue directory and a symlink loop under consumequeue/."""
    root = _copy(sample, tmp_path_factory, "links")
    topic_dir = root / "consumequeue" / "TopicTest"
    (topic_dir / "9").symlink_to(topic_dir / "0", target_is_directory=True)
    (topic_dir / "loop").symlink_to(topic_dir, target_is_directory=True)
    return root


def test_symlinks_under_consumequeue_are_damage(spark, linked):
    with pytest.raises(StoreFormatError, match="symbolic link") as info:
        scan_store(spark, str(linked), persist=False).validate()
    assert info.value.file == "consumequeue/TopicTest/9"
    store = scan_store(spark, str(linked), skip_damaged=True, persist=False)
    report = store.validate()
    assert {d.file for d in report.damaged} == {"consumequeue/TopicTest/9", "consumequeue/TopicTest/loop"}
    assert (report.damaged_count, report.messages, report.cq_units) == (2, 2997, 2997)
    assert ("TopicTest", 4) in store.topics


def test_a_misnamed_queue_directory_is_damage_too(spark, sample, tmp_path_factory):
    root = _copy(sample, tmp_path_factory, "misnamed")
    shutil.copytree(root / "consumequeue" / "TopicTest" / "0", root / "consumequeue" / "TopicTest" / "x")
    with pytest.raises(StoreFormatError, match="not a consumequeue/<topic>/<queueId>"):
        scan_store(spark, str(root), persist=False).validate()


def _cached_compressed(spark, df) -> bool:
    """Whether Spark's cache of ``df`` compresses its columns (the setting its plan was made with)."""
    found = spark._jsparkSession.sharedState().cacheManager().lookupCachedData(df._jdf)
    assert found.isDefined(), "not cached"
    return found.get().cachedRepresentation().cacheBuilder().cachedPlan().conf().useCompression()


def test_the_parse_is_cached_uncompressed_and_the_session_left_as_it_was(spark, sample):
    key = "spark.sql.inMemoryColumnarStorage.compressed"
    for before in (None, "true"):
        if before is not None:
            spark.conf.set(key, before)
        store = scan_store(spark, str(sample))
        try:
            assert spark.conf.get(key, None) == before   # set only while the parse was persisted
            assert not _cached_compressed(spark, store._parsed)
            assert not _cached_compressed(spark, store._units)
            assert store.validate().messages > 0
        finally:
            store.unpersist()
            spark.conf.unset(key)
