"""A queue that never received a message answers NO_MESSAGE_IN_QUEUE (SEMANTICS §12.2): the
broker's findOrCreateConsumeQueue creates it, so getMessage never sees a missing queue."""
from __future__ import annotations

import dataclasses

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.pull.broker import Broker, PullMessageRequestHeader, ResponseCode
from rocketfilter.pull.get_message import pull_limits
from rocketfilter.pull.sequence import pull_sequence
from rocketfilter.store import MessageStore
from tests.pull import model


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("empty") / "s"), spark,
                          MessageStoreConfig(consume_queue_rows_per_file=1000))
    s.create_topic("T", read_queue_nums=4, write_queue_nums=4)
    s.put_messages([{"topic": "T", "queue_id": 0, "tags": "a", "body": b"only"}])
    return s


@pytest.mark.parametrize("topic,queue_id,offset", [("T", 1, 0), ("T", 3, 5), ("NoSuchTopic", 0, 0)])
def test_an_empty_or_unknown_queue_answers_no_message_in_queue(store, topic, queue_id, offset):
    got = store.get_message("G", topic, queue_id, offset, 32, None)
    want = model.get_message(model.find_or_create_consume_queue(None), offset, 32,
                             store.commitlog_state().next_commitlog_offset,
                             model.Config(**dataclasses.asdict(pull_limits(store.config))))
    assert got.status == want.status == "NO_MESSAGE_IN_QUEUE"
    assert (got.next_begin_offset, got.min_offset, got.max_offset) == (want.next_begin_offset, 0, 0) == (0, 0, 0)
    assert got.messages == []


@pytest.mark.parametrize("offset,code", [(0, ResponseCode.PULL_NOT_FOUND), (4, ResponseCode.PULL_OFFSET_MOVED)])
def test_the_broker_maps_it_like_rocketmq(store, offset, code):
    broker = Broker(store)
    broker.register_consumer("G", "c1", [("T", "*")])
    response = broker.pull_message(PullMessageRequestHeader("G", "T", 2, offset))
    assert (response.code, response.remark, response.next_begin_offset) == (int(code), "NO_MESSAGE_IN_QUEUE", 0)


def test_pull_sequence_answers_one_pull_per_empty_queue(store):
    pulls = {r["queue_id"]: r for r in pull_sequence(store, "T", output="pulls").collect()}
    assert sorted(pulls) == [0, 1, 2, 3]
    assert pulls[0]["pull_status"] == "FOUND"
    assert {pulls[q]["pull_status"] for q in (1, 2, 3)} == {"NO_MESSAGE_IN_QUEUE"}
    assert [r["queue_id"] for r in pull_sequence(store, "T").collect()] == [0]


def test_max_msg_nums_below_one_is_refused(store):
    for call in (lambda: store.get_message("G", "T", 0, 0, 0), lambda: pull_sequence(store, "T", max_msg_nums=0)):
        with pytest.raises(ValueError, match="max_msg_nums must be an integer from 1"):
            call()
