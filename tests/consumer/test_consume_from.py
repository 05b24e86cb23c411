"""``computePullFromWhereWithException`` on a store: every ConsumeFromWhere, retry topics, a
committed offset, and the broker's "0 while the first message is in memory" answer.

The shared ``timed_store``: queue CF/0 is young (min offset 0, all messages in memory); CF/1 and
%RETRY%GID/0 lost their first messages to retention (min offset 5). The same store opened with
1000 bytes of "physical memory" has CF/0's first message out of memory.
"""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.consumer.consume_from import (ConsumeFromWhere, compute_pull_from_where,
                                                compute_pull_from_where_for_topic, explain_pull_from_where,
                                                parse_consume_timestamp, read_offset_from_store)
from rocketfilter.consumer.group_info import CONSUME_FROM_WHERE
from rocketfilter.store import MessageStore
from tests.store.store_times import RECORD_SIZE, RETRY, T0

LAST_LIKE = ["CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
             "CONSUME_FROM_MIN_OFFSET", "CONSUME_FROM_MAX_OFFSET"]


@pytest.fixture(scope="module")
def store(timed_store):
    return timed_store


@pytest.fixture(scope="module")
def low_memory(store):
    """The same store, on a broker whose memory holds only the last 400 bytes of the commit log."""
    return MessageStore.open(store.uri, store.spark, MessageStoreConfig(
        mapped_file_size_commit_log=10 * RECORD_SIZE, total_physical_memory=1000), repair=False)


def test_the_queues(store):
    assert [store.get_min_offset_in_queue("CF", 0), store.get_max_offset_in_queue("CF", 0)] == [0, 10]
    assert [store.get_min_offset_in_queue("CF", 1), store.get_max_offset_in_queue("CF", 1)] == [5, 15]
    assert [store.get_min_offset_in_queue(RETRY, 0), store.get_max_offset_in_queue(RETRY, 0)] == [5, 15]


def test_the_enum_has_rocketmqs_names():
    assert [m.value for m in ConsumeFromWhere] == [m.name for m in ConsumeFromWhere]
    assert set(CONSUME_FROM_WHERE) == {m.value for m in ConsumeFromWhere}
    with pytest.raises(ValueError, match="consume_from_where must be one of CONSUME_FROM_LAST_OFFSET"):
        ConsumeFromWhere.of("consume_from_last_offset")


@pytest.mark.parametrize("where", [m.value for m in ConsumeFromWhere])
def test_a_committed_offset_wins_over_every_setting(store, where):
    assert compute_pull_from_where(store, "GID_COMMITTED", "CF", 1, where, T0) == 7
    start = explain_pull_from_where(store, "GID_COMMITTED", "CF", 0, where, T0)
    assert (start.offset, start.source) == (0, "committed")


@pytest.mark.parametrize("where", [m.value for m in ConsumeFromWhere])
def test_a_young_queue_starts_at_0_whatever_the_setting(store, where):
    # queryConsumerOffset: no offset, min offset 0, first message in memory -> 0
    start = explain_pull_from_where(store, "GID", "CF", 0, where, T0 + 5000)
    assert (start.offset, start.source) == (0, "first-message-in-memory")
    assert read_offset_from_store(store, "GID", "CF", 0) == 0


@pytest.mark.parametrize("where", LAST_LIKE)
def test_last_offset_and_its_deprecated_names(store, low_memory, where):
    assert compute_pull_from_where(store, "GID", "CF", 1, where) == 15
    assert compute_pull_from_where(low_memory, "GID", "CF", 0, where) == 10   # first message not in memory
    assert read_offset_from_store(low_memory, "GID", "CF", 0) == -1
    start = explain_pull_from_where(store, "GID", RETRY, 0, where)
    assert (start.offset, start.source) == (0, "retry-topic")


def test_first_offset(store, low_memory):
    start = explain_pull_from_where(store, "GID", "CF", 1, "CONSUME_FROM_FIRST_OFFSET")
    assert (start.offset, start.source) == (0, "first-offset")
    assert "OFFSET_TOO_SMALL and moves to 5" in str(start)
    assert compute_pull_from_where(low_memory, "GID", "CF", 0, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET) == 0
    assert compute_pull_from_where(store, "GID", RETRY, 0, "CONSUME_FROM_FIRST_OFFSET") == 0


@pytest.mark.parametrize("stamp", [T0 + 3000, "20240501100003", datetime(2024, 5, 1, 10, 0, 3, tzinfo=timezone.utc),
                                   datetime(2024, 5, 1, 10, 0, 3)])
def test_timestamp_in_every_spelling(store, low_memory, stamp):
    where = "CONSUME_FROM_TIMESTAMP"
    assert compute_pull_from_where(store, "GID", "CF", 1, where, stamp, time_zone="UTC") == 8
    assert compute_pull_from_where(low_memory, "GID", "CF", 0, where, stamp, time_zone="UTC") == 3
    start = explain_pull_from_where(store, "GID", RETRY, 0, where, stamp, time_zone="UTC")
    assert (start.offset, start.source) == (15, "retry-topic")      # a retry topic: its max offset


def test_timestamp_edges(store):
    where = "CONSUME_FROM_TIMESTAMP"
    assert compute_pull_from_where(store, "GID", "CF", 1, where, T0 + 3500) == 9     # between messages
    assert compute_pull_from_where(store, "GID", "CF", 1, where, T0 - 10 ** 6) == 5  # before the first
    assert compute_pull_from_where(store, "GID", "CF", 1, where, T0 + 10 ** 6) == 15  # after the last
    # the default consumeTimestamp is half an hour ago: after every message here
    assert compute_pull_from_where(store, "GID", "CF", 1, where) == 15
    with pytest.raises(ValueError, match="consumeTimestamp is invalid, the valid format is yyyyMMddHHmmss"):
        compute_pull_from_where(store, "GID", "CF", 1, where, "2024-05-01 10:00:03")


def test_for_a_whole_topic(store):
    starts = compute_pull_from_where_for_topic(store, "GID", "CF", "CONSUME_FROM_LAST_OFFSET")
    assert {q: s.offset for q, s in starts.items()} == {0: 0, 1: 15}
    starts = compute_pull_from_where_for_topic(store, "GID_COMMITTED", "CF", "CONSUME_FROM_TIMESTAMP", T0)
    assert {q: (s.offset, s.source) for q, s in starts.items()} == {0: (0, "committed"), 1: (7, "committed")}


def test_the_consume_timestamp_is_read_like_simpledateformat():
    utc = lambda text: parse_consume_timestamp(text, "UTC")  # noqa: E731
    assert utc("20240501100003") == T0 + 3000
    assert utc("20240501100003 trailing text") == T0 + 3000       # the rest is ignored
    assert utc("2024050110000") == T0                             # the last field takes any digits
    assert utc("20240501100000123") == T0 + 123_000               # ... and is lenient: 123 seconds
    assert utc("20240230000000") == utc("20240301000000")          # lenient days
    assert utc("20241301000000") == utc("20250101000000")          # lenient months
    assert utc("20240500000000") == utc("20240430000000")          # day 0: the month's last day before
    shanghai = parse_consume_timestamp("20240501180003", "Asia/Shanghai")
    assert shanghai == T0 + 3000
    for bad in ("2024-05-01", "202405011000", "", "x20240501100003"):
        with pytest.raises(ValueError, match="consumeTimestamp is invalid"):
            utc(bad)
