"""A store on S3 (a moto server, set up only through the AWS environment variables) answers
every operation as the same store on local disk does.

One pair of stores is built once, by the same steps (an import of the sample broker store, a
topic put through ``put_messages``, a saved group, promote, subscription bits and backfill,
committed offsets); each test runs one operation on both and compares. Store times of the put
messages differ between the two stores (they are the put's clock), so those comparisons leave
``store_timestamp`` and ``born_timestamp`` out; the imported messages keep the broker's times.
"""
from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

import rocketfilter
from rocketfilter.consumer.group import ConsumerGroup
from rocketfilter.pull.sequence import pull_sequence
from rocketfilter.store import MessageStore
from tests.conftest import ORDERS, orders_messages
from tests.s3.conftest import BUCKET
from tests.s3.moto import aws_env

ARCHIVE = Path(__file__).parent.parent / "data" / "rocketmq_store_sample.tar.xz"
TIMES = ("store_timestamp", "born_timestamp")
IMPORTED = "OrderEvents"


@pytest.fixture(scope="module")
def broker_dir(tmp_path_factory) -> str:
    target = tmp_path_factory.mktemp("broker")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(target, filter="data")
    return str(target)


def _group() -> ConsumerGroup:
    group = ConsumerGroup("GID_s3")
    group.add_consumer("A", {ORDERS: "TagA", IMPORTED: "*"}, sub_version=1)
    group.add_consumer("B", {ORDERS: "TagA || TagB", IMPORTED: "*"}, sub_version=2)
    return group


def _build(uri: str, spark, broker_dir: str) -> MessageStore:
    store = MessageStore.open(uri, spark)
    store.import_store(broker_dir)
    store.create_topic(ORDERS, read_queue_nums=3, write_queue_nums=3)
    store.put_messages(orders_messages())
    store.save_group(_group())
    store.promote(["amount"])
    store.register_subscription_bits("GID_big", ORDERS, "amount > 100", "SQL92", sub_version=1)
    store.backfill()
    store.commit_consumer_offsets([("GID_s3", ORDERS, q, 1) for q in range(3)])
    return store


@pytest.fixture(scope="module")
def pair(spark, s3_endpoint, broker_dir, tmp_path_factory):
    """(the store on S3, the same store on local disk)."""
    s3 = _build(f"s3://{BUCKET}/pair", spark, broker_dir)
    local = _build(str(tmp_path_factory.mktemp("local") / "store"), spark, broker_dir)
    return s3, local


def _canon(value):
    """A value that compares and sorts the same whatever order a map's entries came in."""
    if isinstance(value, dict):
        return tuple(sorted((k, _canon(v)) for k, v in value.items()))
    if isinstance(value, (tuple, list)):
        return tuple(_canon(v) for v in value)
    if isinstance(value, float) and value != value:
        return "NaN"  # a promoted as_double of "NaN": equal on both sides, but nan != nan
    return value


def rows(df, drop=TIMES) -> list:
    keep = [c for c in df.columns if c not in drop]
    return sorted((_canon(tuple(r)) for r in df.select(*keep).collect()), key=repr)


def both(pair, op):
    s3, local = pair
    return op(s3), op(local)


def test_the_store_lives_in_the_bucket(pair, s3_endpoint):
    import boto3

    s3, _ = pair
    assert s3.uri == f"s3://{BUCKET}/pair"
    listed = boto3.client("s3", endpoint_url=s3_endpoint).list_objects_v2(Bucket=BUCKET, Prefix="pair/commitlog/")
    keys = [o["Key"] for o in listed.get("Contents", [])]
    assert any(k.startswith("pair/commitlog/_delta_log/") for k in keys)
    assert any(k.endswith(".parquet") for k in keys)
    assert all(f.path.startswith(f"s3a://{BUCKET}/pair/commitlog/") for f in s3.commitlog.files())


def test_tables_topics_and_offsets_agree(pair):
    s3, local = pair
    for name in ("commitlog", "consumequeue", "consumer_offsets", "topics"):
        got, want = rows(s3.table(name).read(s3.spark), TIMES + ("updated_at",)), \
            rows(local.table(name).read(local.spark), TIMES + ("updated_at",))
        assert got == want, name
    imported = lambda s: rows(s.commitlog.read(s.spark, [("topic", "=", IMPORTED)]), ())  # noqa: E731
    assert imported(s3) == imported(local) and len(imported(s3)) == 701
    assert s3.topics() == local.topics()
    assert s3.promoted_properties() == local.promoted_properties() == {"amount": "prop_amount"}
    assert s3.query_consumer_offset("GID_s3", ORDERS, 2) == 1
    assert s3.load_group("GID_s3").to_dict() == local.load_group("GID_s3").to_dict()


def test_get_message_and_pull_sequence(pair):
    def pulls(store):
        found = store.get_message("GID_s3", ORDERS, 1, 0, 2)
        return (str(found.status), found.message_queue_offsets, found.next_begin_offset,
                rows(pull_sequence(store, IMPORTED, max_msg_nums=7), ()))
    got, want = both(pair, pulls)
    assert got == want and got[1]


def test_read_messages_tag_sql_and_bits(pair):
    def reads(store):
        return [rows(rocketfilter.read_messages(store, ORDERS, "TagA")),
                rows(rocketfilter.read_messages(store, ORDERS, "amount > 100", "SQL92")),
                rows(rocketfilter.read_messages(store, ORDERS, "amount > 100", "SQL92", promoted=False)),
                rows(rocketfilter.read_consume_queue(store, ORDERS, "amount > 100", "SQL92")),
                rows(rocketfilter.read_messages(store, IMPORTED, "*"), ())]
    got, want = both(pair, reads)
    assert got == want
    assert len(got[0]) == 6 and got[1] == got[2] and got[1] and len(got[4]) == 701


def test_replay_diagnose_and_explain(pair):
    def groups(store):
        replay = rows(rocketfilter.replay_group(store, "GID_s3", ORDERS))
        diagnosis = str(rocketfilter.diagnose_group(store, "GID_s3")).replace(store.uri, "<store>")
        trace = rocketfilter.explain_message(store, "GID_s3", topic=ORDERS, queue_id=1, queue_offset=1)
        # The trace shows the message's store time, which is each store's own put time.
        text = re.sub(r"stored [^,]*,", "stored <time>,", str(trace).replace(store.uri, "<store>"))
        return replay, diagnosis, str(trace.verdict), text
    got, want = both(pair, groups)
    assert got == want and got[0]


def test_offsets_by_time(pair):
    s3, local = pair
    times = sorted(r.store_timestamp for r in local.commitlog.read(local.spark, [("topic", "=", IMPORTED)])
                   .select("store_timestamp").collect())
    probes = [times[0] - 1, times[len(times) // 2], times[-1], times[-1] + 1]

    def lookups(store):
        return [store.get_offset_in_queue_by_time(IMPORTED, q, t, b) for q in range(4) for t in probes
                for b in ("LOWER", "UPPER")]
    got, want = both(pair, lookups)
    assert got == want


def test_rocketmq_source_batch_and_a_restarted_stream(pair, spark, tmp_path):
    def batch(store):
        return rows(rocketfilter.read(spark, store.uri, ORDERS, "TagA || TagB"))

    got, want = both(pair, batch)
    assert got == want and len(got) == 12

    def stream(store, name):
        out, checkpoint = str(tmp_path / name / "out"), str(tmp_path / name / "checkpoint")

        def run():
            (rocketfilter.read_stream(spark, store.uri, ORDERS, "TagA", startingOffsets="earliest",
                                      maxOffsetsPerTrigger=4)
             .writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start().awaitTermination())
        run()
        first = spark.read.parquet(out).count()
        store.put_messages([dict(m, keys=f"later-{i}") for i, m in enumerate(orders_messages())])
        run()
        return first, rows(spark.read.parquet(out))
    (first, got), want = stream(pair[0], "s3"), stream(pair[1], "local")
    assert got == want[1] and first == want[0] == 6 and len(got) == 12


def test_rocketmq_sink(spark, s3_uri, s3_endpoint):
    # Its put runs in a Spark process of its own (docs/source.md), here one that starts with
    # hadoop-aws from the AWS environment alone.
    store = MessageStore.open(s3_uri, spark)
    store.create_topic(ORDERS, read_queue_nums=3, write_queue_nums=3)
    df = spark.createDataFrame([("TagZ", f"sunk-{i}", bytearray(b"z%d" % i)) for i in range(5)],
                               "tags string, keys string, body binary")
    # Its planning runs in a Python process of the JVM's, which started before this module set
    # the AWS variables: the options are given as a user would for another endpoint.
    options = {f"storage.{k}": v for k, v in aws_env(s3_endpoint).items()}
    df.write.format("rocketmq").mode("append").option("store", s3_uri).option("topic", ORDERS) \
        .options(**options).save()
    got = rocketfilter.read_messages(store, ORDERS, "TagZ").select("keys", "body", "queue_id", "queue_offset")
    got = sorted(tuple(r) for r in got.collect())
    assert [(k, bytes(b)) for k, b, _, _ in got] == [(f"sunk-{i}", b"z%d" % i) for i in range(5)]
    assert sorted((q, o) for _, _, q, o in got) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]


def test_zz_retention_expire_and_vacuum(pair):
    # Last in the module: it removes the oldest messages from both stores, in commit-log "files"
    # of 1 MB (the imported messages span six of them).
    def expire(store):
        store.config.mapped_file_size_commit_log = 1 << 20
        store.expire(before_commitlog_offset=3 << 20)
        return (rows(store.table("commitlog").read(store.spark)),
                [store.get_min_offset_in_queue(IMPORTED, q) for q in range(4)])
    got, want = both(pair, expire)
    assert got == want and got[1] != [0, 0, 0, 0]
