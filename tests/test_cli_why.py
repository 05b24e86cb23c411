"""``rocketfilter why``: bad input ends in one line before Spark starts (in this process, with
Spark forbidden; one subprocess for the entry point), and traces of seed 003's messages by
position, msg id and key (in this process, on the suite's session)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketfilter.cli import main
from rocketfilter.jobs.why import NOT_FOUND_EXIT
from rocketfilter.message import offset_msg_id
from rocketfilter.store import MessageStore

REPO = Path(__file__).resolve().parents[1]
TOPIC = "SUBSCRIBE_TEST"
GROUP = {"group": "GID_seed003", "consumers": [{"clientId": "A", "subscriptions": {TOPIC: "tagA"}, "subVersion": 1},
                                               {"clientId": "B", "subscriptions": {TOPIC: "tagB"}, "subVersion": 2}]}


@pytest.fixture(scope="module")
def seeded(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_why")
    store = MessageStore.open(str(root / "store"), spark)
    store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
    put = store.put_messages([{"topic": TOPIC, "tags": "tagA" if i < 4 else "tagB", "keys": f"order-{i}",
                               "body": f"m{i}"} for i in range(8)])
    group_file = root / "g.json"
    group_file.write_text(json.dumps(GROUP), encoding="utf-8")
    return store, group_file, put


def test_bad_input_is_one_line_before_spark(seeded, tmp_path, capsys, monkeypatch):
    store, group_file, _ = seeded
    from rocketfilter.jobs import common

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was asked for before the arguments were checked")

    monkeypatch.setattr(common, "start_spark", no_spark)
    base = ["why", "--store", store.uri, "--group-file", str(group_file)]
    cases = [
        (["why", "--store", store.uri, "--msg-id", "X"], 2, "one of the arguments --group-file --group is required"),
        (base, 2, "give exactly one of --msg-id ID, --key K, or --topic T --queue Q --offset O"),
        (base + ["--msg-id", "X", "--key", "k"], 2, "(got --msg-id, --key)"),
        (base + ["--topic", TOPIC, "--queue", "0"], 2, "needs --topic, --queue and --offset together"),
        (base + ["--topic", TOPIC, "--queue", "0", "--offset", "-1"], 2, "offset must be an integer >= 0, got -1"),
        (base + ["--topic", "a/b", "--queue", "0", "--offset", "0"], 2, "The specified topic"),
        (base + ["--topic", "Nope", "--queue", "0", "--offset", "0"], 2, "topic 'Nope' does not exist in store"),
        (base + ["--msg-id", "X", "--client-id", "Z"], 2, "--client-id 'Z' is not a consumer of group 'GID_seed003'"),
        (base + ["--key", "k", "--max-msg-nums", "0"], 2, "max_msg_nums must be an integer from 1"),
        (base + ["--msg-id", "NOTANID"], 2, "--msg-id 'NOTANID' is not a message id"),
        (base + ["--msg-id", "7F00000100002A9F00000000000002"], 2, "is not a message id"),
        (["why", "--store", str(tmp_path / "nowhere"), "--group-file", str(group_file), "--key", "k"], 1,
         "StoreNotFoundError: no rocketfilter store at"),
    ]
    for args, code, fragment in cases:
        try:
            got = main(args)
        except SystemExit as done:   # argparse's own errors
            got = done.code
        err = capsys.readouterr().err
        assert got == code, (args, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("rocketfilter") and fragment in lines[0], (args, err)
        assert "Traceback" not in err


def test_the_entry_point_exits_2_in_one_line(seeded):
    store, group_file, _ = seeded
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "rocketfilter.cli", "why", "--store", store.uri, "--group-file",
                           str(group_file), "--topic", TOPIC], cwd=REPO, env=env, capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "give exactly one of --msg-id ID, --key K, or --topic T --queue Q --offset O" in lines[0]


def test_runs_as_a_program_of_its_own(seeded, spark, capsys):
    from rocketfilter.jobs.why import main as why

    store, group_file, _ = seeded
    assert why(["--store", store.uri, "--group-file", str(group_file), "--topic", TOPIC, "--queue", "3",
                "--offset", "0"], spark=spark) == 0
    assert "consumer B: FILTERED_BY_TAG_CODE" in capsys.readouterr().out


def test_traces_by_position_msg_id_and_key(seeded, capsys):
    store, group_file, put = seeded
    base = ["why", "--store", store.uri, "--group-file", str(group_file)]
    assert main(base + ["--topic", TOPIC, "--queue", "0", "--offset", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{TOPIC} queue 0 offset 1 for group GID_seed003, consumer A: DROPPED_BY_CLIENT_RECHECK")
    assert "[STOP] client_recheck" in out
    tag_b = next(r for r in put if r["queue_id"] == 2 and r["queue_offset"] == 1)
    assert main(base + ["--msg-id", tag_b["msg_id"]]) == 0
    assert ": PENDING (" in capsys.readouterr().out
    assert main(base + ["--key", "order-0", "--topic", TOPIC, "--client-id", "A"]) == 0
    assert "consumer A: FILTERED_BY_TAG_CODE" in capsys.readouterr().out
    # NOT_FOUND has its own exit code (issue 19.3): by position, and by a well-formed id not there.
    assert main(base + ["--topic", TOPIC, "--queue", "0", "--offset", "9"]) == NOT_FOUND_EXIT == 4
    assert ": NOT_FOUND (" in capsys.readouterr().out
    absent = offset_msg_id("127.0.0.1:10911", None, 987654321)
    assert main(base + ["--msg-id", absent]) == NOT_FOUND_EXIT
    assert ": NOT_FOUND (" in capsys.readouterr().out
