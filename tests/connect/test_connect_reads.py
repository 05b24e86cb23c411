"""read_messages, replay_group, the jobs, promotion, subscription bits and import on a Spark
Connect session answer exactly as on the classic one (the store of tests/connect/conftest.py)."""
from __future__ import annotations

import json

import pytest

from rocketfilter.consumer import ConsumerGroup
from rocketfilter.jobs import groups, import_store, maintenance, replay as replay_job
from rocketfilter.groups.replay import replay_group
from rocketfilter.pull.read_messages import read_messages
from tests.connect.broker_files import TOPIC as IMPORTED, write_broker_store
from tests.connect.conftest import TOPIC, both, copy_store, open_store, rows
from tests.connect.modes import classic_mode, connect_mode

pytestmark = pytest.mark.connect

READS = [("TagA || BB", "TAG"), ("a > 1 AND n < 100", "SQL92")]


def test_read_messages_answers_as_on_the_classic_session(stores, connect_spark):
    for subscription, kind in READS:
        connect, classic = both(stores, lambda s: rows(read_messages(s, TOPIC, subscription, kind, start={1: 2})))
        assert connect == classic and connect, subscription


def test_the_groups_job_on_connect_consumes_what_replay_group_does_on_classic(stores, connect_spark, tmp_path,
                                                                           capsys):
    document = {"group": "GID_c", "consumers": [
        {"clientId": "A", "subscriptions": {TOPIC: "TagA || TagC"}},
        {"clientId": "B", "subscriptions": {TOPIC: {"expression": "a > 1", "type": "SQL92"}}}]}
    (tmp_path / "g.json").write_text(json.dumps(document))
    group = ConsumerGroup.from_file(str(tmp_path / "g.json"))
    with classic_mode():
        classic = replay_group(stores.classic, group, TOPIC, max_msg_nums=4).collect()
    assert classic
    # The job on Connect (a replay_group run there): its lines must match the classic replay.
    assert groups.main(["replay", "--store", stores.path, "--group-file", str(tmp_path / "g.json"),
                        "--topic", TOPIC, "--max-msg-nums", "4"], spark=connect_spark) == 0
    lines = capsys.readouterr().out.splitlines()
    per_queue = {}
    for r in classic:
        n, last = per_queue.get((r["client_id"], r["queue_id"]), (0, -1))
        per_queue[(r["client_id"], r["queue_id"])] = (n + 1, max(last, r["queue_offset"]))
    assert lines[:-1] == [f"{c} queue {q}: consumed {n}, the last at offset {last}"
                          for (c, q), (n, last) in sorted(per_queue.items())]
    consumers = len({r["client_id"] for r in classic})
    assert lines[-1] == f"GID_c on {TOPIC}: {len(classic)} message(s) consumed by {consumers} consumer(s)"


def test_the_replay_job_answers_as_on_the_classic_session(stores, connect_spark, capsys):
    """``rocketfilter replay --summary`` (pull_sequence's entries and pulls, then the summary)."""
    argv = ["--store", stores.path, "--topic", TOPIC, "--sql", "a > 1", "--group", "G", "--max-msg-nums", "4",
            "--summary"]

    def replay(store):
        assert replay_job.main(argv, spark=store.spark) == 0
        return capsys.readouterr().out
    connect, classic = both(stores, replay)
    assert connect == classic and f"{TOPIC}: delivered " in connect and "queue 1: delivered" in connect


def test_promote_and_backfill_jobs_on_connect(stores, connect_spark, tmp_path):
    """The promote and backfill jobs run on Connect; reads through the promoted column and the
    subscription bits then answer as the properties map does, on both sessions."""
    subscription, kind = READS[1]  # SQL92 over a and n
    with classic_mode():
        plain = rows(read_messages(stores.classic, TOPIC, subscription, kind, promoted=False, bits=False))
    pair = copy_store(stores, tmp_path)
    with connect_mode(True):
        pair.connect.register_subscription_bits("GID_bits", TOPIC, subscription, kind)
        assert maintenance.main(["backfill", "--store", pair.path, "--topic", TOPIC], spark=connect_spark) == 0
        assert maintenance.main(["promote", "--store", pair.path, "--properties", "n"], spark=connect_spark) == 0
    for options in ({}, {"bits": False}):  # through the bits; through promoted n and the map's a
        connect, classic = both(pair, lambda s: rows(read_messages(open_store(pair.path, s.spark), TOPIC,
                                                                   subscription, kind, **options)))
        assert connect == classic == plain, options


def test_the_import_job_on_connect(connect_spark, tmp_path, capsys):
    """``rocketfilter import`` of a small real-format broker store on Connect: every message and
    unit comes back."""
    source = write_broker_store(tmp_path / "broker", messages=12)
    target = str(tmp_path / "imported")
    assert import_store.main(["--store", target, "--source", str(source)], spark=connect_spark) == 0
    assert capsys.readouterr().out.startswith("imported 12 messages from 1 commit-log files, 12 consume-queue units")
    store = open_store(target, connect_spark, create=False)
    got = sorted((r["queue_id"], r["queue_offset"], r["tags"], r["body"], r["properties"]["a"])
                 for r in store.commitlog.read(connect_spark).collect())
    assert got == [(i % 2, i // 2, ("TagA", "TagB", "TagC")[i % 3], b"imported %d" % i, str(i % 4))
                   for i in sorted(range(12), key=lambda i: (i % 2, i // 2))]
    units = store.consumequeue.read(connect_spark).select("queue_id", "queue_offset").collect()
    assert sorted(tuple(u) for u in units) == sorted((i % 2, i // 2) for i in range(12))
    assert read_messages(store, IMPORTED, "TagB").count() == 4
