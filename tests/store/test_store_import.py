"""import_store into Delta tables: the sample broker store comes back exactly from the tables."""
from __future__ import annotations

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.store import MessageStore
from rocketfilter.store.import_job import StoreNotEmptyError
from tests.store.test_records import expected_fields


@pytest.fixture(scope="module")
def store(spark, sample, tmp_path_factory):
    # Also promotes each topic's two most frequent user properties (test_import_promotes...).
    target = MessageStore.open(str(tmp_path_factory.mktemp("imported") / "store"), spark,
                               MessageStoreConfig(consume_queue_rows_per_file=1000, promote_top_properties=2))
    report = target.import_store(str(sample))
    assert (report.messages, report.cq_units, report.damaged_count) == (2997, 2997, 0)
    return target


def test_every_message_is_in_the_commitlog_table(store, manifest):
    rows = {r["commitlog_offset"]: r.asDict() for r in store.commitlog.read(store.spark).collect()}
    assert len(rows) == len(manifest["message"]) == 2997
    wrong = [f"{m['commitLogOffset']} {k}" for m in manifest["message"]
             for k, v in expected_fields(m).items()
             if k in rows[m["commitLogOffset"]] and rows[m["commitLogOffset"]][k] != v]
    assert not wrong, wrong[:20]


def test_every_unit_is_in_the_consumequeue_table_and_the_marks_follow(store, manifest):
    rows = {(r["topic"], r["queue_id"], r["queue_offset"]): r
            for r in store.consumequeue.read(store.spark).collect()}
    assert len(rows) == len(manifest["cq_entry"]) == 2997
    for e in manifest["cq_entry"]:
        r = rows[(e["topic"], e["queueId"], e["queueOffset"])]
        assert (r["commitlog_offset"], r["size"], r["tags_code"]) == \
            (e["commitLogOffset"], e["size"], e["tagsCode"])
    for (topic, queue_id), n in _units_per_queue(manifest).items():
        assert store.get_max_offset_in_queue(topic, queue_id) == n
    assert store.dispatch().entries == 0
    assert set(store.topics()) == {"OrderEvents", "TopicTest", "iot_sensor-metrics"}
    # A put after the import continues the broker's offsets.
    last = max(m["commitLogOffset"] + m["storeSize"] for m in manifest["message"])
    put = store.put_messages([{"topic": "TopicTest", "queue_id": 0, "body": b"after"}])
    assert put[0]["commitlog_offset"] == last
    assert put[0]["queue_offset"] == _units_per_queue(manifest)[("TopicTest", 0)]


def test_import_into_a_store_with_messages_is_refused(store, sample):
    with pytest.raises(StoreNotEmptyError, match="already holds messages"):
        store.import_store(str(sample))


def _units_per_queue(manifest) -> dict:
    counts: dict = {}
    for e in manifest["cq_entry"]:
        key = (e["topic"], e["queueId"])
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_import_promotes_each_topics_most_frequent_user_properties(store):
    from collections import Counter

    from rocketfilter.store.promoted import SYSTEM_PROPERTIES

    rows = store.commitlog.read(store.spark).collect()
    counts: dict = {}
    for r in rows:
        counts.setdefault(r["topic"], Counter()).update(k for k in (r["properties"] or {})
                                                        if k not in SYSTEM_PROPERTIES)
    want = {k for c in counts.values() for k, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:2]}
    promoted = store.promoted_properties()
    assert set(promoted) == want and want
    for r in rows:
        for name, column in promoted.items():
            assert r[column]["value"] == (r["properties"] or {}).get(name)


def test_commitlog_files_hold_disjoint_offset_ranges(store):
    """Written straight from the parse tasks (no range shuffle): each file is one run of the
    broker's files, so the files' offset ranges do not overlap and pulls prune by them."""
    ranges = sorted((f.min["commitlog_offset"], f.max["commitlog_offset"]) for f in store.commitlog.files())
    assert len(ranges) >= 1 and all(f.num_records > 0 for f in store.commitlog.files())
    assert all(hi < next_lo for (_, hi), (next_lo, _) in zip(ranges, ranges[1:])), ranges
