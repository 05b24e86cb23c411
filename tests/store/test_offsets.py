"""Committed offsets: RocketMQ never keeps a negative one, and the API refuses what the command
line refuses, with the same words."""
from __future__ import annotations

import pytest

from rocketfilter.checks import check_offset
from rocketfilter.config import InvalidNameError, MessageStoreConfig
from rocketfilter.store import MessageStore


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    return MessageStore.open(str(tmp_path_factory.mktemp("offsets") / "s"), spark,
                             MessageStoreConfig(consume_queue_rows_per_file=1000))


@pytest.mark.parametrize("offset", [-5, -1, 2**63, True, 1.5, "3"])
def test_a_bad_offset_is_refused_and_nothing_is_stored(store, offset):
    with pytest.raises(ValueError, match="must be an integer >= 0") as info:
        store.commit_consumer_offset("G", "T", 0, offset)
    with pytest.raises(ValueError) as same:
        check_offset(offset, "committed offset of 'T' queue 0 for group 'G'")
    assert str(info.value) == str(same.value)
    assert store.query_consumer_offset("G", "T", 0) == -1


def test_bad_names_and_queues_are_refused(store):
    with pytest.raises(InvalidNameError, match="group"):
        store.commit_consumer_offset("bad group!", "T", 0, 1)
    with pytest.raises(InvalidNameError, match="topic"):
        store.commit_consumer_offset("G", "../T", 0, 1)
    with pytest.raises(ValueError, match="queue_id must be an integer from 0"):
        store.commit_consumer_offset("G", "T", -1, 1)
    with pytest.raises(ValueError, match="must be an integer >= 0"):  # one bad tuple, nothing stored
        store.commit_consumer_offsets([("G", "T", 1, 4), ("G", "T", 2, -2)])
    assert store.query_consumer_offset("G", "T", 1) == -1


def test_a_good_offset_round_trips(store):
    store.commit_consumer_offset("G", "T", 3, 0)
    store.commit_consumer_offset("G", "T", 3, 12)
    assert store.query_consumer_offset("G", "T", 3) == 12


# --- resetOffsetByTime, on the shared timed_store (CF/0 stored at T0+1000*i; CF/1 expired 0-4) -----

def test_reset_by_time_commits_the_lower_offset_of_every_read_queue(timed_store):
    from tests.store.store_times import T0

    store = timed_store
    assert store.reset_offset_by_time("GID_RESET", "CF", T0 + 3000) == {0: 3, 1: 8}
    assert [store.query_consumer_offset("GID_RESET", "CF", q) for q in (0, 1)] == [3, 8]
    # forward as well as back: the server-side reset commits whatever the time gives
    assert store.reset_offset_by_time("GID_RESET", "CF", T0 + 8500) == {0: 9, 1: 14}
    assert store.reset_offset_by_time("GID_RESET", "CF", T0 - 10 ** 6) == {0: 0, 1: 5}
    assert store.reset_offset_by_time("GID_RESET", "CF", T0 + 10 ** 6) == {0: 10, 1: 15}
    assert store.reset_offset_by_time("GID_RESET", "CF", -1) == {0: 10, 1: 15}   # negative: max offsets
    assert [store.query_consumer_offset("GID_RESET", "CF", q) for q in (0, 1)] == [10, 15]


def test_reset_by_time_refuses_an_unknown_topic_and_bad_input(timed_store):
    with pytest.raises(ValueError, match="Topic NoSuchTopic does not exist"):
        timed_store.reset_offset_by_time("GID_RESET", "NoSuchTopic", 0)
    with pytest.raises(ValueError, match="timestamp_ms must be an integer"):
        timed_store.reset_offset_by_time("GID_RESET", "CF", "yesterday")
    with pytest.raises(InvalidNameError, match="group"):
        timed_store.reset_offset_by_time("bad group!", "CF", 0)
