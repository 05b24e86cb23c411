"""``rocketfilter groups diagnose|replay``: bad input ends in one line before Spark starts (in a
subprocess), and both commands on a seed-003 store (in this process, on the suite's session)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketfilter.cli import main
from rocketfilter.store import MessageStore

REPO = Path(__file__).resolve().parents[1]
TOPIC = "SUBSCRIBE_TEST"
GROUP = {"group": "GID_seed003", "consumers": [{"clientId": "A", "subscriptions": {TOPIC: "tagA"}, "subVersion": 1},
                                               {"clientId": "B", "subscriptions": {TOPIC: "tagB"}, "subVersion": 2}]}


@pytest.fixture(scope="module")
def seeded(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_groups")
    store = MessageStore.open(str(root / "store"), spark)
    store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
    store.put_messages([{"topic": TOPIC, "tags": "tagA" if i < 4 else "tagB", "body": f"m{i}"} for i in range(8)])
    group_file = root / "g.json"
    group_file.write_text(json.dumps(GROUP), encoding="utf-8")
    return store, group_file, root


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "rocketfilter.cli", "groups", *args], cwd=REPO, env=env,
                          capture_output=True, text=True)  # no timeout: a loaded machine may be slow


def test_bad_input_is_one_line_before_spark(seeded, tmp_path):
    store, group_file, _ = seeded
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"group": "G", "consumers": [{"clientId": "A", "subscription": {}}]}))
    cases = [
        (["diagnose", "--store", store.uri], 2, "one of the arguments --group-file --group is required"),
        (["replay", "--store", store.uri, "--group-file", str(bad), "--topic", TOPIC], 2,
         "unknown key 'subscription' (did you mean 'subscriptions'?)"),
        (["replay", "--store", store.uri, "--group", "G", "--topic", "a/b"], 2, "The specified topic"),
        (["diagnose", "--store", str(tmp_path / "nowhere"), "--group-file", str(group_file)], 1,
         "StoreNotFoundError: no rocketfilter store at"),
    ]
    for args, code, fragment in cases:
        done = _run(*args)
        assert "Traceback" not in done.stderr, done.stderr
        lines = done.stderr.strip().splitlines()
        assert done.returncode == code and len(lines) == 1 and fragment in lines[0], (args, done.stderr)
        assert lines[0].startswith("rocketfilter: error: ") or lines[0].startswith("rocketfilter groups")


def test_diagnose_prints_the_report(seeded, capsys):
    store, group_file, _ = seeded
    assert main(["groups", "diagnose", "--store", store.uri, "--group-file", str(group_file), "--topic", TOPIC]) == 0
    out = capsys.readouterr().out
    for line in ("Subscriptions: INCONSISTENT", "lost: 6 message(s):", "dropped_by_client_recheck       2  by A"):
        assert line in out, out


def test_replay_writes_commits_and_reads_a_stored_group(seeded, capsys, spark):
    store, group_file, root = seeded
    output = root / "replayed"
    assert main(["groups", "replay", "--store", store.uri, "--group-file", str(group_file), "--topic", TOPIC,
                 "--output", str(output), "--commit"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["B queue 2: consumed 1, the last at offset 1", "B queue 3: consumed 1, the last at offset 1",
                   f"GID_seed003 on {TOPIC}: 2 message(s) consumed by 1 consumer(s); written to {output}; "
                   "offsets committed"]
    assert sorted(r["queue_id"] for r in spark.read.parquet(str(output)).collect()) == [2, 3]
    assert [store.query_consumer_offset("GID_seed003", TOPIC, q) for q in range(4)] == [2, 2, 2, 2]
    # The same group by name, once it is in the store; an unknown name is bad input.
    from rocketfilter.consumer import ConsumerGroup

    store.save_group(ConsumerGroup.from_dict(GROUP))
    assert main(["groups", "replay", "--store", store.uri, "--group", "GID_seed003", "--topic", TOPIC]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"GID_seed003 on {TOPIC}: 2 message(s) consumed by 1 consumer(s)"
    assert main(["groups", "replay", "--store", store.uri, "--group", "GID_other", "--topic", TOPIC]) == 2
    assert "no consumer group 'GID_other'" in capsys.readouterr().err
