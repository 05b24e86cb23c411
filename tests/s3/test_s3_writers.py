"""Four writers put into one S3 store at once, and one of them is killed with SIGKILL while it
keeps putting (three writers are threads of this process, each with its own MessageStore, so each
commits on its own; the killed one is a process of its own): every put lands with unique contiguous offsets or fails with the retryable
ConcurrentCommitError, nothing is lost or duplicated, and the CommitLog and the ConsumeQueue
agree after the store is reopened. Commits on S3 rely on conditional writes (If-None-Match),
which moto honours (checked here too)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from rocketfilter.delta.object_store import ObjectStoreConfigError
from rocketfilter.store import MessageStore
from tests.s3.conftest import BUCKET
from tests.s3.writer import BATCH, TOPIC, put_loop

ROOT = Path(__file__).resolve().parents[2]
PUTS = 2   # two puts apiece still race four ways


def _writer(uri: str, writer: int, puts: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.s3.writer", uri, str(writer), str(puts)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                            env=dict(os.environ))


def test_moto_refuses_a_second_create_of_one_key(s3_endpoint):
    import boto3
    from botocore.exceptions import ClientError

    client = boto3.client("s3", endpoint_url=s3_endpoint)
    client.put_object(Bucket=BUCKET, Key="if-none-match", Body=b"1", IfNoneMatch="*")
    with pytest.raises(ClientError, match="PreconditionFailed"):
        client.put_object(Bucket=BUCKET, Key="if-none-match", Body=b"2", IfNoneMatch="*")


def test_unsafe_commit_settings_are_refused(spark, s3_uri, monkeypatch):
    with pytest.raises(ObjectStoreConfigError, match="two writers commit the same Delta version"):
        MessageStore.open(s3_uri, spark, storage_options={"AWS_S3_ALLOW_UNSAFE_RENAME": "true"})
    monkeypatch.setenv("AWS_S3_ALLOW_UNSAFE_RENAME", "true")
    with pytest.raises(ObjectStoreConfigError, match="AWS_S3_ALLOW_UNSAFE_RENAME=true"):
        MessageStore.open(s3_uri, spark)


def test_four_writers_at_once_and_one_killed_mid_put(spark, s3_uri):
    store = MessageStore.open(s3_uri, spark)
    store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
    outputs = {w: [] for w in range(4)}
    killed = _writer(s3_uri, 3, -1)
    threads = []
    try:
        assert json.loads(killed.stdout.readline() or "{}") == {"ready": 3}, "writer 3 did not start"
        for w in range(3):   # they race writer 3's puts and one another's
            mine = MessageStore.open(s3_uri, spark, create=False)
            threads.append(threading.Thread(target=put_loop, args=(mine, w, PUTS, outputs[w].append)))
            threads[-1].start()
        while not any("landed" in line for line in outputs[3]):   # its first put landed
            line = killed.stdout.readline()
            assert line, "writer 3 exited before its first put"
            outputs[3].append(json.loads(line))
        for thread in threads:
            thread.join()
        os.kill(killed.pid, signal.SIGKILL)   # it puts in a loop: almost surely mid-put
        out, _ = killed.communicate()
        outputs[3] += [json.loads(line) for line in out.splitlines()]
    finally:
        if killed.poll() is None:
            killed.kill()
            killed.wait()
        for thread in threads:
            thread.join()

    acknowledged, in_flight = {}, set()
    for w, lines in outputs.items():
        puts = [line for line in lines if "put" in line]
        for line in puts:
            keys = [f"w{w}-p{line['put']}-m{i}" for i in range(BATCH)]
            if "landed" in line:
                acknowledged.update(zip(keys, map(tuple, line["landed"])))
            else:  # only a lost race may fail, and it says so
                assert line["error"] == "ConcurrentCommitError", line
        if w == 3:
            after = max((line["put"] for line in puts), default=-1) + 1
            in_flight = {f"w3-p{after}-m{i}" for i in range(BATCH)}
    assert sum(1 for w in range(3) for line in outputs[w] if "landed" in line) >= 1

    reopened = MessageStore.open(s3_uri, spark)     # repairs a ConsumeQueue the kill left behind
    cl = [r.asDict() for r in reopened.table("commitlog").read(spark).select(
        "keys", "queue_id", "queue_offset", "commitlog_offset", "store_size").collect()]
    keys = [r["keys"] for r in cl]
    assert len(keys) == len(set(keys)), "a message was stored twice"
    found = {r["keys"]: (r["queue_id"], r["queue_offset"]) for r in cl}
    assert {k: found.get(k) for k in acknowledged} == acknowledged, "an acknowledged put was lost"
    extra = set(found) - set(acknowledged)
    assert extra in (set(), in_flight), "a put landed in part, or a message came from nowhere"
    by_queue = defaultdict(list)
    for r in cl:
        by_queue[r["queue_id"]].append(r["queue_offset"])
    assert all(sorted(v) == list(range(len(v))) for v in by_queue.values())
    ordered = sorted(cl, key=lambda r: r["commitlog_offset"])
    assert ordered[0]["commitlog_offset"] == 0
    assert all(a["commitlog_offset"] + a["store_size"] == b["commitlog_offset"] for a, b in zip(ordered, ordered[1:]))
    cq = sorted(tuple(r) for r in reopened.table("consumequeue").read(spark).select(
        "queue_id", "queue_offset", "commitlog_offset", "size").collect())
    assert cq == sorted((r["queue_id"], r["queue_offset"], r["commitlog_offset"], r["store_size"]) for r in cl)

    more = reopened.put_messages([{"topic": TOPIC, "keys": "after", "body": "x"}])  # still writable
    assert more[0]["commitlog_offset"] == ordered[-1]["commitlog_offset"] + ordered[-1]["store_size"]
