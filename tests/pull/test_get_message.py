"""get_message on a real Delta store agrees with the plain model of §12 (tests/pull/model.py),
reads only the ConsumeQueue files that overlap its window, and answers MESSAGE_WAS_REMOVING /
OFFSET_TOO_SMALL around expired messages."""
from __future__ import annotations

import dataclasses

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.pull.filter import ExpressionMessageFilter
from rocketfilter.pull.get_message import pull_limits
from rocketfilter.pull.result import GetMessageStatus
from rocketfilter.selector import parse
from rocketfilter.store import MessageStore
from rocketfilter.tags import build_subscription, is_matched_by_consume_queue, tags_code
from tests.pull import model

TOPIC = "GetMsg"
N = 1000
# Small CQ "files" (250 entries) and a small in-memory threshold, so pulls meet both limits.
CONFIG = dict(consume_queue_rows_per_file=300, consume_queue_row_group_rows=64,
              mapped_file_size_consume_queue=250 * 20, total_physical_memory=200_000)


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("getmsg") / "store"), spark,
                          MessageStoreConfig(**CONFIG))
    s.create_topic(TOPIC, read_queue_nums=1, write_queue_nums=1)
    messages = [{"topic": TOPIC, "tags": ("TagA", "TagB", "TagC", "Aa", "BB")[i % 5 if i % 7 else 2],
                 "properties": {"n": str(i)}, "body": "x" * (i % 13 * 40)} for i in range(N)]
    for start in range(0, N, 400):  # three puts: three commit-log files
        s.put_messages(messages[start:start + 400])
    return s


def _model_queue(store, cq_match, cl_match, removed_below=-1):
    rows = store.commitlog.read(store.spark).orderBy("queue_offset").collect()
    entries = {r["queue_offset"]: model.Entry(r["queue_offset"], r["commitlog_offset"], r["store_size"],
                                              cq_match(r), cl_match(r), r["commitlog_offset"] < removed_below)
               for r in rows}
    return entries, rows


def _check(store, message_filter, cq_match, cl_match, offsets, max_nums):
    entries, rows = _model_queue(store, cq_match, cl_match)
    cfg = model.Config(**dataclasses.asdict(pull_limits(store.config)))
    max_py = store.commitlog_state().next_commitlog_offset
    queue = model.Queue(entries, store.get_min_offset_in_queue(TOPIC, 0),
                        store.get_max_offset_in_queue(TOPIC, 0))
    for offset in offsets:
        for max_msg_nums in max_nums:
            got = store.get_message("g", TOPIC, 0, offset, max_msg_nums, message_filter)
            want = model.get_message(queue, offset, max_msg_nums, max_py, cfg)
            assert (got.status, got.next_begin_offset, got.message_queue_offsets,
                    got.buffer_total_size, got.filter_message_count) == \
                (want.status, want.next_begin_offset, want.found, want.buffer_total, want.filtered), \
                (offset, max_msg_nums)
            assert [m["queue_offset"] for m in got.messages] == want.found
            assert all(m["body"] is not None for m in got.messages)


TAG_SUBSCRIPTION = "TagA || BB"
SQL_SUBSCRIPTION = "n > 500 AND n < 620"


@pytest.fixture(params=["one job", "no footer statistics", "no body budget", "pyarrow"])
def read_path(request, monkeypatch):
    """get_message's ways to read (rocketfilter.pull.scan with Spark, and
    rocketfilter.pull.arrow_window without): they must answer alike."""
    from rocketfilter.pull import scan

    engine = "arrow" if request.param == "pyarrow" else "spark"
    monkeypatch.setattr(request.getfixturevalue("store"), "pull_engine", engine, raising=False)
    if request.param == "no footer statistics":
        monkeypatch.setattr(scan.footers, "bounds", lambda *a: None)
    elif request.param == "no body budget":
        monkeypatch.setattr(scan, "BODY_BUDGET_BYTES", 0)
    return request.param


@pytest.fixture(scope="module")
def backfilled(store):
    """The two subscriptions registered for exact subscription bits, history backfilled."""
    store.register_subscription_bits("gtag", TOPIC, TAG_SUBSCRIPTION, "TAG", 1)
    store.register_subscription_bits("gsql", TOPIC, SQL_SUBSCRIPTION, "SQL92", 1)
    store.backfill()
    return store


@pytest.fixture(params=["no bits", "bits"])
def bits_way(request, monkeypatch):
    """Pulls with and without the exact subscription bits: they must answer alike, and with
    bits on, the bits must really be what decides."""
    from rocketfilter.pull import bits

    if request.param == "no bits":
        monkeypatch.setattr(bits, "usable", lambda *a: None)
        yield request.param
        return
    request.getfixturevalue("backfilled")
    used = []
    real = bits.usable
    monkeypatch.setattr(bits, "usable", lambda *a: used.append(real(*a)) or used[-1])
    yield request.param
    assert used and all(slot is not None for slot in used), used


def test_tag_pulls_agree_with_the_model(store, read_path, bits_way):
    sub = build_subscription(TOPIC, TAG_SUBSCRIPTION)
    codes = lambda r: is_matched_by_consume_queue(sub, tags_code(r["tags"]))  # noqa: E731
    _check(store, ExpressionMessageFilter(sub), codes, lambda r: True,
           offsets=[0, 1, 240, 249, 250, 700, 999, 1000, 1005], max_nums=[1, 32, 64])


def test_sql92_pulls_agree_with_the_model(store, read_path, bits_way):
    expression = SQL_SUBSCRIPTION
    sub = build_subscription(TOPIC, expression, "SQL92")
    data = store.filter_manager.build(TOPIC, "g", expression, "SQL92", 1)
    selector = parse(expression)
    _check(store, ExpressionMessageFilter(sub, data), lambda r: True,
           lambda r: selector.matches(r["properties"]), offsets=[0, 450, 500, 610], max_nums=[32])


def test_a_pull_is_one_spark_job_unless_a_found_body_is_missing(store, monkeypatch):
    monkeypatch.setattr(store, "pull_engine", "spark", raising=False)
    plain = store.get_message("g", TOPIC, 0, 0, 32, ExpressionMessageFilter(build_subscription(TOPIC, "TagA || TagC")))
    assert plain.message_count > 0 and plain.spark_jobs == 1
    # "Aa" shares "BB"'s hash: the broker delivers it, but the first read only brings the bodies
    # the client keeps, so the collision's body takes a second read.
    collided = store.get_message("g", TOPIC, 0, 0, 32, ExpressionMessageFilter(build_subscription(TOPIC, "BB")))
    tags = [m["tags"] for m in collided.messages]
    assert "Aa" in tags and collided.spark_jobs == 2
    assert all(m["body"] is not None for m in collided.messages)


def test_a_window_reads_only_the_files_that_overlap_it(store):
    files = store.consumequeue.refresh().files()
    assert len(files) >= 3
    where = [("topic", "=", TOPIC), ("queue_id", "=", 0),
             ("queue_offset", ">=", 310), ("queue_offset", "<", 310 + 800)]
    assert len(store.consumequeue.files(where)) < len(files)


def test_expired_messages(spark, tmp_path):
    # Commit-log "files" of 1000 bytes: the first put's five messages (~100 bytes each) and the
    # start of the second share file 0.
    s = MessageStore.open(str(tmp_path / "s"), spark,
                          MessageStoreConfig(mapped_file_size_commit_log=1000, **CONFIG))
    s.create_topic(TOPIC, read_queue_nums=1, write_queue_nums=1)
    put = s.put_messages([{"topic": TOPIC, "body": "b" * 100} for _ in range(20)])
    first_live = next(i for i, r in enumerate(put) if r["commitlog_offset"] >= 1000)
    report = s.expire(before_commitlog_offset=1500, clean_consume_queue=False)
    assert report.min_commitlog_offset == 1000
    removing = s.get_message("g", TOPIC, 0, 0)
    # skipUntilPhy jumps to the next file, where the first live message is found.
    assert removing.status is GetMessageStatus.FOUND
    assert removing.message_queue_offsets[0] == first_live
    s.create_topic("Other", read_queue_nums=1, write_queue_nums=1)
    # Over two files more, so every TOPIC message lies before the file being written.
    other = s.put_messages([{"topic": "Other", "body": "c" * 100} for _ in range(10)])
    writing = s.commitlog_state().next_commitlog_offset // 1000 * 1000
    assert max(r["commitlog_offset"] for r in put) < writing - 1000 < other[-1]["commitlog_offset"]
    s.expire(before_commitlog_offset=writing, clean_consume_queue=False)
    gone = s.get_message("g", TOPIC, 0, 0)
    assert (gone.status, gone.next_begin_offset) == (GetMessageStatus.MESSAGE_WAS_REMOVING, 20)
    s.expire(before_commitlog_offset=writing)  # now the queue's min offset moves too
    too_small = s.get_message("g", TOPIC, 0, 0)
    assert (too_small.status, too_small.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, 20)


@pytest.mark.parametrize("expression_type", ["TAG", "SQL92"])
def test_pull_sequence_matches_successive_get_message_calls(store, bits_way, expression_type):
    from rocketfilter.pull.sequence import pull_sequence

    if expression_type == "TAG":
        message_filter = ExpressionMessageFilter(build_subscription(TOPIC, TAG_SUBSCRIPTION))
    else:
        data = store.filter_manager.build(TOPIC, "g", SQL_SUBSCRIPTION, "SQL92", 1)
        message_filter = ExpressionMessageFilter(build_subscription(TOPIC, SQL_SUBSCRIPTION, "SQL92"), data)
    rows = pull_sequence(store, TOPIC, message_filter, max_msg_nums=16,
                         start_offsets={0: 200}, end_offsets={0: 600}).collect()
    by_pull: dict = {}
    for r in rows:
        by_pull.setdefault(r["pull_number"], []).append(r)
    offset, pulls = 200, []
    while offset < 600:
        got = store.get_message("g", TOPIC, 0, offset, 16, message_filter)
        pulls.append(got)
        if got.next_begin_offset == offset:
            break
        offset = got.next_begin_offset
    delivered = [(i, q) for i, got in enumerate(pulls) for q in got.message_queue_offsets]
    assert delivered  # pull numbers count every pull, those that found nothing too
    assert sorted((r["pull_number"], r["queue_offset"]) for r in rows) == delivered
    for number, entries in by_pull.items():
        assert {e["next_begin_offset"] for e in entries} == {pulls[number].next_begin_offset}
