"""The client side of a pull: response code -> PullStatus, the exact-tag re-check (SEMANTICS §2.4),
and PullConsumer end to end over the in-memory store test double."""
from __future__ import annotations

import pytest

from rocketfilter.consumer import AllocateMessageQueueAveragelyByCircle
from rocketfilter.pull.broker import Broker, PullMessageResponse, ResponseCode
from rocketfilter.pull.client import (MessageQueue, MQBrokerError, PullConsumer, PullResult, PullStatus,
                                      process_pull_result)
from rocketfilter.tags import build_subscription

from .test_broker import FakeStore


def response(code, messages=(), **kw) -> PullMessageResponse:
    return PullMessageResponse(code=int(code), remark="r", next_begin_offset=kw.get("next", 3), min_offset=0,
                               max_offset=9, suggest_which_broker_id=0, messages=list(messages))


@pytest.mark.parametrize("code, status", [
    (ResponseCode.SUCCESS, PullStatus.FOUND), (ResponseCode.PULL_NOT_FOUND, PullStatus.NO_NEW_MSG),
    (ResponseCode.PULL_RETRY_IMMEDIATELY, PullStatus.NO_MATCHED_MSG),
    (ResponseCode.PULL_OFFSET_MOVED, PullStatus.OFFSET_ILLEGAL),
])
def test_code_to_status(code, status):
    result = process_pull_result(response(code), build_subscription("T", "*"))
    assert isinstance(result, PullResult)
    assert (result.pull_status, result.next_begin_offset, result.min_offset, result.max_offset) == (status, 3, 0, 9)


@pytest.mark.parametrize("code", [1, 16, 17, 24, 25, 26, 27, 28, 29, 999])
def test_other_codes_raise(code):
    with pytest.raises(MQBrokerError, match=f"CODE: {code}") as info:
        process_pull_result(response(code), build_subscription("T", "*"))
    assert info.value.code == code and info.value.remark == "r"


def msg(tags, **props):
    return {"tags": tags, "properties": dict(props, **({"TAGS": tags} if tags is not None else {}))}


def test_tag_recheck_drops_hash_collisions():
    """"Aa" and "BB" share hash 2112: the broker passes both, the client keeps the subscribed one."""
    found = [msg("Aa"), msg("BB"), msg(None), msg("Aa||BB")]
    result = process_pull_result(response(0, found), build_subscription("T", "Aa"))
    assert [m["tags"] for m in result.msg_found_list] == ["Aa"]
    assert result.pull_status is PullStatus.FOUND
    # Everything re-checked away: still FOUND, nothing delivered, and the offset moves on.
    result = process_pull_result(response(0, [msg("BB")], next=7), build_subscription("T", "Aa"))
    assert (result.pull_status, result.msg_found_list, result.next_begin_offset) == (PullStatus.FOUND, [], 7)


def test_no_recheck_without_tags():
    found = [msg("Aa"), msg(None), msg("x")]
    for sub in (build_subscription("T", "*"), build_subscription("T", "a > 1", "SQL92"),
                build_subscription("T", "   ")):
        assert len(process_pull_result(response(0, found), sub).msg_found_list) == 3


def test_found_messages_get_min_and_max_offsets_and_stay_unchanged():
    original = {"properties": {"TAGS": "A"}}                  # no "tags" key: TAGS is read instead
    result = process_pull_result(response(0, [original]), build_subscription("T", "A"))
    assert result.msg_found_list[0]["properties"] == {"TAGS": "A", "MIN_OFFSET": "0", "MAX_OFFSET": "9"}
    assert original == {"properties": {"TAGS": "A"}}
    as_pairs = {"properties": [("TAGS", "A"), ("k", "v")]}        # how Arrow hands over a map column
    result = process_pull_result(response(0, [as_pairs]), build_subscription("T", "A"))
    assert result.msg_found_list[0]["properties"] == {"TAGS": "A", "k": "v", "MIN_OFFSET": "0", "MAX_OFFSET": "9"}


def test_message_queue_order():
    queues = [MessageQueue("T", "b", 0), MessageQueue("T", "a", 1), MessageQueue("S", "z", 9), MessageQueue("T", "a", 0)]
    assert [(q.topic, q.broker_name, q.queue_id) for q in sorted(queues)] == [
        ("S", "z", 9), ("T", "a", 0), ("T", "a", 1), ("T", "b", 0)]


# -- PullConsumer -------------------------------------------------------------------------------
def setup_store():
    store = FakeStore()
    store.create_topic("T", queues=8)
    return store, Broker(store, clock=store.clock)


def test_consumer_end_to_end():
    store, broker = setup_store()
    consumer = PullConsumer(broker, "G", client_id="c1")
    consumer.subscribe("T", "Aa || TagB")
    for tag in ("Aa", "BB", "TagB", "TagC"):
        store.put("T", 0, tag)
    queues = consumer.fetch_subscribe_message_queues("T")
    assert [q.queue_id for q in queues] == list(range(8)) and queues[0].broker_name == "broker-a"
    queue = queues[0]
    assert consumer.committed(queue) == -1 and consumer.committed(queue, default=0) == 0
    result = consumer.pull(queue, 0, 32)
    assert result.pull_status is PullStatus.FOUND and [m["tags"] for m in result.msg_found_list] == ["Aa", "TagB"]
    assert result.next_begin_offset == 4
    consumer.commit(queue, result.next_begin_offset)
    assert consumer.committed(queue) == 4 and store.offsets[("G", "T", 0)] == 4
    assert consumer.pull(queue, 4).pull_status is PullStatus.NO_NEW_MSG
    assert consumer.pull(queue, 9).pull_status is PullStatus.OFFSET_ILLEGAL
    consumer.pull(queue, 4, commit_offset=3)
    assert consumer.committed(queue) == 3
    assert consumer.pull(queues[1], 0).pull_status is PullStatus.NO_NEW_MSG       # empty queue, offset 0


def test_consumer_sql92_and_resubscribe():
    store, broker = setup_store()
    consumer = PullConsumer(broker, "G", client_id="c1")
    consumer.subscribe("T", "a > 1", "SQL92")
    for a in ("0", "5", "7"):
        store.put("T", 2, a=a)
    q = MessageQueue("T", "broker-a", 2)
    assert [m["properties"]["a"] for m in consumer.pull(q, 0).msg_found_list] == ["5", "7"]
    consumer.subscribe("T", "a < 1", "SQL92")
    assert [m["properties"]["a"] for m in consumer.pull(q, 0).msg_found_list] == ["0"]
    consumer.subscribe("T", "a >", "SQL92")                 # does not compile: the broker says so
    with pytest.raises(MQBrokerError) as info:
        consumer.pull(q, 0)
    assert info.value.code == ResponseCode.FILTER_DATA_NOT_EXIST


def test_consumer_posting_its_subscription():
    store, broker = setup_store()
    consumer = PullConsumer(broker, "G", client_id="c1", post_subscription_when_pull=True)
    consumer.subscribe("T", "a >", "SQL92")                 # the quirk: no filter data, everything matches
    store.put("T", 0, a="0")
    assert len(consumer.pull(MessageQueue("T", "broker-a", 0), 0).msg_found_list) == 1


def test_allocate_across_the_group():
    store, broker = setup_store()
    consumers = [PullConsumer(broker, "G", client_id=f"c{i}") for i in (2, 0, 1)]
    for c in consumers:
        c.subscribe("T", "*")
    assert broker.consumer_ids("G") == ["c2", "c0", "c1"]
    got = {c.client_id: [q.queue_id for q in c.allocate("T")] for c in consumers}
    assert got == {"c0": [0, 1, 2], "c1": [3, 4, 5], "c2": [6, 7]}
    assert [q.queue_id for q in consumers[0].allocate("T", ["x", "c2"])] == [0, 1, 2, 3]  # sorted: c2 first
    assert consumers[0].allocate("T", ["a", "b"]) == []                # not in the list
    consumers[0].shutdown()
    assert broker.consumer_ids("G") == ["c0", "c1"]
    with pytest.raises(MQBrokerError):
        consumers[1].fetch_subscribe_message_queues("Nope")


def test_allocate_with_another_strategy():
    store, broker = setup_store()
    consumers = [PullConsumer(broker, "G", client_id=f"c{i}") for i in range(3)]
    for c in consumers:
        c.subscribe("T", "*")
    assert [q.queue_id for q in consumers[1].allocate("T", strategy="AVG_BY_CIRCLE")] == [1, 4, 7]
    by_circle = AllocateMessageQueueAveragelyByCircle()
    assert [q.queue_id for q in consumers[1].allocate("T", strategy=by_circle)] == [1, 4, 7]
    hashing = {"name": "CONSISTENT_HASH", "virtualNodeCnt": 10}
    hashed = {c.client_id: c.allocate("T", strategy=hashing) for c in consumers}
    assert sorted(q.queue_id for qs in hashed.values() for q in qs) == list(range(8))
    with pytest.raises(ValueError, match="unknown allocation strategy"):
        consumers[0].allocate("T", strategy="RANDOM")


def test_consumer_errors_are_clear():
    store, broker = setup_store()
    consumer = PullConsumer(broker, "G", client_id="c1")
    with pytest.raises(ValueError, match="not subscribed"):
        consumer.pull(MessageQueue("T", "broker-a", 0), 0)
    with pytest.raises(ValueError, match="split"):
        consumer.subscribe("T", "||")
    with pytest.raises(ValueError, match="group"):
        PullConsumer(broker, "no spaces")
    assert "@" in PullConsumer(broker, "G").client_id


def test_subscribe_warns_each_lint_finding_of_a_selector():
    import warnings

    from rocketfilter.selector import SelectorWarning

    store, broker = setup_store()
    consumer = PullConsumer(broker, "G", client_id="c1")
    with pytest.warns(SelectorWarning) as caught:
        consumer.subscribe("T", "region LIKE 'eu%'", "SQL92")
    assert [w.message.code for w in caught] == ["bare-property", "ignored-trailing-input"]
    assert caught[0].filename == __file__  # attributed to the caller of subscribe
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to say: no warning at all
        consumer.subscribe("T", "region = 'eu'", "SQL92")
        consumer.subscribe("T", "TagA || TagB")
        consumer.subscribe("T", "a >", "SQL92")  # does not compile: the broker's to refuse, as before
