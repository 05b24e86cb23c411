"""Consumer groups in the store: save/load/list, and the Broker's heartbeats and departures landing
in the consumer_groups table so the stored group makes the same table the broker holds."""
from __future__ import annotations

import random
import warnings
from types import SimpleNamespace

import pytest

from rocketfilter.consumer import AllocateMessageQueueConsistentHash, ConsumerGroup, ConsumerGroupInfo
from rocketfilter.pull.broker import Broker
from rocketfilter.pull.client import PullConsumer
from rocketfilter.store import MessageStore
from rocketfilter.store import groups as G
from rocketfilter.tags import build_subscription


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("groups") / "store"), spark)
    s.create_topic("T", read_queue_nums=4, write_queue_nums=4)
    return s


def sample() -> ConsumerGroup:
    group = ConsumerGroup("GID_saved", allocate_strategy={"name": "CONSISTENT_HASH", "virtualNodeCnt": 3},
                          consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    group.add_consumer("A", {"T": "tagA || tagB", "U": "*"}, sub_version=5)
    group.add_consumer("B", {"T": {"expression": "a > 1", "type": "SQL92", "subVersion": 9}}, sub_version=7,
                       post_subscription_when_pull=True)
    group.add_consumer("C", {}, sub_version=8)
    group.heartbeat("A")
    group.remove_consumer("C")
    return group


def test_save_load_and_list_round_trip(store):
    group = sample()
    store.save_group(group)
    back = store.load_group("GID_saved")
    assert back.to_dict() == group.to_dict()
    assert back.allocate_strategy == group.allocate_strategy and back.departed == ["C"]
    assert {t: s.sub_string for t, s in back.effective_subscriptions.items()} == {"T": "tagA || tagB", "U": "*"}
    assert "GID_saved" in store.list_groups()
    rows = [r for r in store.read_small("consumer_groups").to_pylist() if r["group"] == "GID_saved"]
    assert [(r["client_id"], r["topic"], r["sub_version"], r["heartbeats"]) for r in rows] == [
        ("A", "T", 5, [0, 3]), ("A", "U", 5, [0, 3]), ("B", "T", 9, [1]), ("C", None, None, [2])]
    # Saving again replaces the group; other groups stay.
    smaller = ConsumerGroup("GID_saved")
    store.save_group(smaller)
    assert store.load_group("GID_saved").to_dict() == smaller.to_dict()


def test_load_and_save_errors(store):
    with pytest.raises(ValueError, match=r"no consumer group 'GID_nope' in store .*\(groups: .*\)"):
        store.load_group("GID_nope")
    with pytest.raises(ValueError, match="The specified group"):
        store.load_group("bad name")
    custom = ConsumerGroup("GID_custom", allocate_strategy=AllocateMessageQueueConsistentHash(
        3, custom_hash_function=lambda key: 0))
    with pytest.raises(ValueError, match="custom hash function cannot be saved"):
        store.save_group(custom)
    assert "GID_custom" not in store.list_groups()
    with pytest.raises(ValueError, match="save_group takes a ConsumerGroup, got dict"):
        store.save_group({"group": "G"})


def table_of(subscriptions: dict) -> dict:
    return {t: (s.sub_string, s.expression_type, s.sub_version) for t, s in subscriptions.items()}


def test_broker_heartbeats_land_in_the_store_seed_003(spark, store):
    broker = Broker(store)
    a, b = PullConsumer(broker, "GID_seed003", "A"), PullConsumer(broker, "GID_seed003", "B",
                                                                  post_subscription_when_pull=True)
    a.subscribe("T", "tagA")
    b.subscribe("T", "tagB")
    a.heartbeat()
    stored = store.load_group("GID_seed003")
    assert table_of(stored.effective_subscriptions) == table_of(broker.consumer_group_info("GID_seed003")
                                                                .subscription_table)
    assert stored.effective_subscriptions["T"].sub_string == "tagB"
    assert stored.consumer("B").post_subscription_when_pull and not stored.consumer("A").post_subscription_when_pull
    assert stored.heartbeats == ["B", "A"]       # A's earlier heartbeats change nothing: dropped
    assert not store.record_heartbeat("GID_seed003", "A", [a.subscriptions["T"]])   # a repeat writes nothing

    b.shutdown()                                 # B leaves; its tagB stays in the broker's table
    stored = store.load_group("GID_seed003")
    assert stored.consumer_ids() == ["A"] and stored.departed == ["B"]
    assert stored.effective_subscriptions["T"].sub_string == "tagB"
    a.shutdown()                                 # the last one: the broker forgets the group
    stored = store.load_group("GID_seed003")
    assert stored.consumer_ids() == [] and stored.effective_subscriptions == {}


def test_a_stored_group_keeps_its_strategy_through_heartbeats(store):
    store.save_group(ConsumerGroup("GID_circle", allocate_strategy="AVG_BY_CIRCLE"))
    broker = Broker(store)
    broker.register_consumer("GID_circle", "X", [("T", "*")], message_model="BROADCASTING")
    stored = store.load_group("GID_circle")
    assert (stored.allocate_strategy.get_name(), stored.message_model, stored.consumer_ids()) == (
        "AVG_BY_CIRCLE", "BROADCASTING", ["X"])


def run_history(seed: int, steps: int = 30, changing: bool = True):
    """Random heartbeats and departures of four consumers, recorded in rows in memory and applied
    to a ConsumerGroupInfo; yields (step, stored group, broker's info) after each.

    ``changing``: subscriptions change as they do through a Broker (each new one gets a higher
    subVersion from the clock). Otherwise each consumer keeps fixed subscriptions whose explicit
    subVersions often tie across consumers (a group file's case)."""
    rng = random.Random(seed)
    tables = SimpleNamespace(uri="memory")
    rows: list = []
    info = ConsumerGroupInfo("G")
    clients = ["c0", "c1", "c2", "c3"]
    clock = iter(range(10, 10_000))

    def fresh(version=None) -> dict:
        subs = {}
        for topic in rng.sample(["T", "U", "V"], rng.randint(0, 3)):
            subs[topic] = build_subscription(topic, rng.choice(["*", "a", "b || c"]))
            subs[topic].sub_version = next(clock) if version is None else version
        return subs

    own = {cid: fresh(None if changing else rng.randint(1, 3)) for cid in clients}
    for step in range(steps):
        cid = rng.choice(clients)
        if rng.random() < 0.15:
            rows = G._unregister_update(tables, rows, "G", cid)
            info.unregister_client(cid)
            if not info.clients:
                info = ConsumerGroupInfo("G")
        else:
            if changing and rng.random() < 0.4:
                kept = {t: s for t, s in own[cid].items() if rng.random() < 0.5}
                own[cid] = {**fresh(), **kept}
            subs = list(own[cid].values())
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                rows = G._heartbeat_update(tables, rows, "G", cid, subs, "CLUSTERING", "CONSUME_FROM_LAST_OFFSET",
                                           None)
            info.register(cid, subs, step)
        mine = [r for r in rows if r["group"] == "G"]
        yield step, G._group_of(G.rows_document(mine), tables) if mine else ConsumerGroup("G"), info


@pytest.mark.parametrize("changing", [True, False], ids=["changing", "fixed-with-ties"])
@pytest.mark.parametrize("seed", range(25))
def test_recorded_heartbeats_make_the_brokers_table(seed, changing):
    """The stored group's table is always the broker's, its consumers the broker's clients, and
    its heartbeat order stays short."""
    for step, stored, info in run_history(seed, changing=changing):
        assert table_of(stored.effective_subscriptions) == table_of(info.subscription_table), step
        assert sorted(stored.consumer_ids()) == sorted(info.clients), step
        assert len(stored.heartbeats) <= (4 if changing else 16), step


def test_a_history_latest_subscriptions_cannot_replay_warns():
    tables = SimpleNamespace(uri="memory")
    old, new = build_subscription("T", "a"), build_subscription("T", "b")
    old.sub_version, new.sub_version = 5, 3          # re-subscribed with a lower version
    rows = G._heartbeat_update(tables, [], "G", "c0", [old], "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", None)
    with pytest.warns(UserWarning, match=r"group 'G': the stored group cannot replay the broker's table for "
                                         r"topics \['T'\]"):
        G._heartbeat_update(tables, rows, "G", "c0", [new], "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", None)
