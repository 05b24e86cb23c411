"""``rocketfilter replay`` in-process on the suite's session, through spark_jobs/replay.py (the
thin spark-submit wrapper over rocketfilter/jobs/replay.py): per-queue summaries of a TAG and an
SQL92 replay of a 20-message store, the message listing, the parquet output, the progress line,
the selector's lint warnings, and one-line errors without a traceback."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from rocketfilter.jobs import common

TOPIC = "OrderEvents"


def _load_job():
    spec = importlib.util.spec_from_file_location(
        "replay_job", Path(__file__).resolve().parents[1] / "spark_jobs" / "replay.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    return job


job = _load_job()


@pytest.fixture(scope="module")
def store_uri(spark, tmp_path_factory) -> str:
    """20 messages over 4 queues (round robin: message i lands in queue i % 4 at offset i // 4).
    Tags cycle TagA/TagB/TagC, except message 19, tagged BB (the tag code of "Aa"). Message 9
    (TagA, queue 1 offset 2) has no keys."""
    from rocketfilter.store import MessageStore

    uri = str(tmp_path_factory.mktemp("replay") / "store")
    store = MessageStore.open(uri, spark)
    store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
    store.put_messages([
        {"topic": TOPIC, "tags": "BB" if i == 19 else ["TagA", "TagB", "TagC"][i % 3],
         "keys": None if i == 9 else f"order-{i}",
         "properties": {"region": ["eu", "us"][i % 2], "amount": str(10 * i)}, "body": f"order {i}"}
        for i in range(20)])
    return uri


def _run(capsys, *argv):
    code = job.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _queue_lines(out: str) -> dict:
    """queue id -> (delivered, pulls, next_begin_offset) from the summary lines."""
    found = re.findall(r"^queue (\d+): delivered (\d+), pulls (\d+), next_begin_offset (\d+)", out, re.M)
    return {int(q): (int(d), int(p), int(n)) for q, d, p, n in found}


def test_tag_replay_listing_summary_output_and_progress(spark, store_uri, tmp_path, capsys, monkeypatch):
    # TagA: messages 0, 3, 6, 9, 12, 15, 18. BB (message 19, queue 3 offset 4) passes the broker's
    # tag-code check for "Aa" and is dropped by the client's exact check.
    monkeypatch.setattr(common, "PROGRESS_OPTIONS", {"delay": 0})  # show it however fast the run
    output = str(tmp_path / "out")
    code, out, err = _run(capsys, "--store", store_uri, "--topic", TOPIC, "--tags", "TagA || Aa",
                          "--max-msg-nums", "2", "--output", output)
    assert code == 0, err
    assert _queue_lines(out) == {0: (2, 2, 5), 1: (1, 1, 5), 2: (2, 1, 5), 3: (2, 2, 5)}
    assert "queue 3: delivered 2, pulls 2, next_begin_offset 5 (1 dropped by the client's exact tag check)" in out
    assert f"{TOPIC}: delivered 7 messages in 6 pulls from 4 queues (TAG 'TagA || Aa')" in out
    # The listing: a header, then one row per message with timestamps, and an empty cell for no keys.
    assert re.search(r"^queue +offset +msg_id +tags +keys +born +stored$", out, re.M)
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}"
    assert re.search(rf"^0 +0 +\w{{32}} +TagA +order-0 +{stamp} +{stamp}$", out, re.M)
    assert re.search(rf"^1 +2 +\w{{32}} +TagA +{stamp} +{stamp}$", out, re.M)  # message 9: no keys
    # The progress summary (stderr is no terminal here): the topic's 20 messages walked.
    assert re.fullmatch(r"replay: 20 messages in \d+:\d\d \([\d.,]+ messages/s\)\n", err), err
    written = spark.read.parquet(output)
    assert sorted(r["keys"] or "" for r in written.collect()) == sorted(
        ["", *(f"order-{i}" for i in (0, 3, 6, 12, 15, 18))])
    assert {"pull_number", "next_begin_offset", "tags", "properties", "body", "msg_id"} <= set(written.columns)
    assert dict(written.dtypes)["born_time"] == "timestamp" and dict(written.dtypes)["store_time"] == "timestamp"
    same = written.selectExpr("bool_and(unix_millis(born_time) = born_timestamp AND "
                              "unix_millis(store_time) = store_timestamp)").first()[0]
    assert same is True


def test_sql92_replay_summary_with_lint_warnings(store_uri, capsys):
    # eu (even i) and amount >= 100: messages 10, 12, 14, 16, 18 -> queues 2, 0, 2, 0, 2. The trailing
    # "extra" is ignored, as RocketMQ ignores it: the result is the same, with a warning.
    code, out, err = _run(capsys, "--store", store_uri, "--topic", TOPIC, "--sql",
                          "region = 'eu' AND amount >= 100 extra", "--group", "GID_eu", "--summary")
    assert code == 0, err
    assert _queue_lines(out) == {0: (2, 1, 5), 1: (0, 1, 5), 2: (3, 1, 5), 3: (0, 1, 5)}
    assert "msg_id" not in out  # --summary: no message lines
    assert f"{TOPIC}: delivered 5 messages in 4 pulls" in out
    warnings = [line for line in err.splitlines() if ": warning: " in line]
    assert len(warnings) == 1 and warnings[0].startswith("replay.py: warning: selector col 33: ")
    assert warnings[0].endswith("[ignored-trailing-input]")


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("replay.py: error: "), err
    return lines[0]


def test_unknown_topic_is_one_line(store_uri, capsys):
    code, out, err = _run(capsys, "--store", store_uri, "--topic", "NoSuchTopic")
    assert code == 2 and out == ""
    assert f"topic 'NoSuchTopic' does not exist in store {store_uri} (topics: {TOPIC})" in _one_error_line(err)


def test_bad_selector_is_one_line(store_uri, capsys):
    code, out, err = _run(capsys, "--store", store_uri, "--topic", TOPIC, "--sql", "amount >")
    assert code == 2 and out == ""
    assert "SelectorSyntaxError" in _one_error_line(err)


def test_strict_refuses_ignored_text_the_lint_names_unknown_properties(store_uri, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("Spark started")
    monkeypatch.setattr(common, "start_spark", refuse)
    code, out, err = _run(capsys, "--store", store_uri, "--topic", TOPIC, "--sql", "region = 'eu' AN amount > 5",
                          "--strict")
    assert code == 2 and "Encountered 'AN' after a complete selector" in _one_error_line(err)
    # Not strict: the warnings (from the sampled properties too) come first, then the work would.
    code, out, err = _run(capsys, "--store", store_uri, "--topic", TOPIC, "--sql", "regoin = 'eu'")
    assert code == 1 and "Spark started" in err
    assert "replay.py: warning: selector col 1: `regoin` is not among the known properties" in err
    assert "did you mean `region`? [unknown-property]" in err


def test_missing_store_is_one_line_and_not_created(tmp_path, capsys):
    code, out, err = _run(capsys, "--store", str(tmp_path / "none"), "--topic", TOPIC)
    assert code == 1 and "no rocketfilter store" in _one_error_line(err)
    assert not (tmp_path / "none").exists()


def test_starting_and_ending_offsets_and_timestamp(store_uri, capsys):
    # Queue 0 from offset 2 (messages 8, 12, 16), queue 1 ends before offset 1 (message 1 only:
    # pulls are whole, so one message per pull); the other queues run from earliest to latest.
    code, out, err = _run(capsys, "--store", store_uri, "--topic", TOPIC, "--summary", "--max-msg-nums", "1",
                          "--starting-offsets", '{"OrderEvents": {"0": 2}}',
                          "--ending-offsets", '{"OrderEvents": {"1": 1, "3": -1}}')
    assert code == 0, err
    assert {q: d for q, (d, _, _) in _queue_lines(out).items()} == {0: 3, 1: 1, 2: 5, 3: 5}
    # Every message was stored after 1970 and before the year 3000: earliest and nothing.
    code, out, err = _run(capsys, "--store", store_uri, "--topic", TOPIC, "--summary",
                          "--starting-timestamp", "0")
    assert code == 0 and f"{TOPIC}: delivered 20 messages" in out, err
    code, out, err = _run(capsys, "--store", store_uri, "--topic", TOPIC, "--summary",
                          "--starting-timestamp", "3000-01-01T00:00:00Z")
    assert code == 0 and f"{TOPIC}: delivered 0 messages" in out, err


@pytest.mark.parametrize("argv, says", [
    (["--starting-offsets", '{"OrderEvents": {"0": -3}}'], "offset -3 is neither"),
    (["--starting-timestamp", "latest"], "expected a time"),
    (["--ending-offsets", "{not json"], "not valid JSON"),
    (["--starting-offsets", "earliest", "--starting-timestamp", "0"], "not allowed with argument"),
])
def test_bad_offset_specs_are_one_line_before_spark(store_uri, capsys, monkeypatch, argv, says):
    monkeypatch.setattr(common, "start_spark", lambda *a, **k: pytest.fail("Spark started before the checks"))
    code, out, err = _run(capsys, "--store", store_uri, "--topic", TOPIC, *argv)
    assert code == 2 and says in err and "Traceback" not in err, err
