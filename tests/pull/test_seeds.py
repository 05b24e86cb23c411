"""The seed scenarios, end to end: a real Delta store, the Broker and PullConsumers."""
from __future__ import annotations

import pytest

from rocketfilter.config import BrokerConfig, MessageStoreConfig
from rocketfilter.pull.broker import Broker
from rocketfilter.pull.client import PullConsumer, PullStatus
from rocketfilter.store import MessageStore

SELECTOR = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL) AND (isGender = TRUE)"


@pytest.fixture(scope="module")
def seeded(spark, tmp_path_factory):
    store = MessageStore.open(str(tmp_path_factory.mktemp("seeds") / "store"), spark,
                              MessageStoreConfig(consume_queue_rows_per_file=1000))
    store.create_topic("Seed002", read_queue_nums=1, write_queue_nums=1)
    store.create_topic("Seed003", read_queue_nums=4, write_queue_nums=4)
    store.create_topic("Seed004", read_queue_nums=1, write_queue_nums=1)
    seed002 = []
    for i in range(10):
        props = {"age": str(i), "isGender": "TRUE" if i % 2 else "false"}
        if i != 7:
            props["name"] = f"name{i}"
        seed002.append({"topic": "Seed002", "tags": ("TAG_A", "TAG_B", "TAG_C")[i % 3],
                        "properties": props, "body": f"m{i}"})
    seed003 = [{"topic": "Seed003", "tags": "tagA" if i % 2 == 0 else "tagB", "body": f"m{i}"}
               for i in range(8)]
    seed004 = [{"topic": "Seed004", "tags": t, "body": t} for t in ("Aa", "BB", "Aa", "C")]
    store.put_messages(seed002 + seed003 + seed004)
    return store, Broker(store, BrokerConfig(enable_property_filter=True))


def _bodies(result):
    return [bytes(m["body"]).decode() for m in result.msg_found_list]


def test_seed_002_tags_and_sql92(seeded):
    store, broker = seeded
    tags = PullConsumer(broker, "G002tag", "c1")
    tags.subscribe("Seed002", "TAG_A || TAG_C")
    queue = tags.fetch_subscribe_message_queues("Seed002")[0]
    got = tags.pull(queue, 0)
    assert got.pull_status is PullStatus.FOUND
    assert _bodies(got) == ["m0", "m2", "m3", "m5", "m6", "m8", "m9"]
    assert got.next_begin_offset == 10

    sql = PullConsumer(broker, "G002sql", "c1")
    sql.subscribe("Seed002", SELECTOR, "SQL92")
    got = sql.pull(queue, 0)
    # age 6..9 with a name and isGender TRUE (Boolean.valueOf ignores case): 9 only
    # (7 has no name, 6 and 8 are false).
    assert got.pull_status is PullStatus.FOUND and _bodies(got) == ["m9"]
    funnel = got.response.result.funnel
    assert (funnel.scanned, funnel.commitlog_read, funnel.passed_sql92, funnel.found) == (10, 10, 1, 1)


def test_seed_003_later_registration_wins_and_allocation(seeded):
    store, broker = seeded
    a = PullConsumer(broker, "G003", "clientA")
    b = PullConsumer(broker, "G003", "clientB")
    a.subscribe("Seed003", "tagA")
    b.subscribe("Seed003", "tagB")  # the group's subscription is now tagB
    ids = ["clientA", "clientB"]
    assert [q.queue_id for q in a.allocate("Seed003", ids)] == [0, 1]
    assert [q.queue_id for q in b.allocate("Seed003", ids)] == [2, 3]
    got_a = [m for q in a.allocate("Seed003", ids) for m in a.pull(q, 0).msg_found_list]
    got_b = [m for q in b.allocate("Seed003", ids) for m in b.pull(q, 0).msg_found_list]
    assert got_a == []  # the broker sends tagB messages of queue 1; A's re-check drops them
    assert [(m["queue_id"], m["tags"]) for m in got_b] == [(3, "tagB"), (3, "tagB")]


def test_seed_004_hash_collisions_pass_the_broker_not_the_client(seeded):
    store, broker = seeded
    consumer = PullConsumer(broker, "G004", "c1")
    consumer.subscribe("Seed004", "Aa")
    queue = consumer.fetch_subscribe_message_queues("Seed004")[0]
    got = consumer.pull(queue, 0)
    broker_sent = got.response.messages
    assert [m["tags"] for m in broker_sent] == ["Aa", "BB", "Aa"]  # "Aa".hashCode() == "BB".hashCode()
    assert _bodies(got) == ["Aa", "Aa"]
    funnel = got.response.result.funnel
    assert (funnel.scanned, funnel.passed_tag_code, funnel.found) == (4, 3, 3)
    assert got.next_begin_offset == 4
