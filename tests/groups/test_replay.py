"""replay_group and diagnose_group: seed 003 exactly as issue 11 states it, and random groups
(2-6 consumers, TAG and SQL92, every strategy, both message models, post_subscription_when_pull
both ways, flapping topics, consumers that left) against a plain sequential model
(tests/pull/group_model.py). One small store per module; each random test runs all its groups
in one Spark job."""
from __future__ import annotations

import dataclasses
import random
import warnings
from functools import reduce

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rocketfilter.config import BrokerConfig, MessageStoreConfig
from rocketfilter import ConsumerGroup, diagnose_group, replay_group
from rocketfilter.pull.get_message import pull_limits
from rocketfilter.store import MessageStore
from tests.pull import group_model, model

SEED = "SUBSCRIBE_TEST"
MIXED, OTHER = "Mixed", "Other"
BROKER = "room1@broker-a"
TAGS = ["tagA", "tagB", "tagC", "Aa", "BB", None]
TAG_EXPRESSIONS = ["*", "tagA", "tagA || tagB", "Aa", "BB || tagC", "tagC", "tagB"]
SQL_EXPRESSIONS = ["a > 4", "a BETWEEN 2 AND 6", "region = 'eu'", "a > 3 AND region = 'us'", "b IS NULL"]


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("group_replay") / "store"), spark,
                          MessageStoreConfig(consume_queue_rows_per_file=40),
                          broker_config=BrokerConfig(broker_name=BROKER))
    s.create_topic(SEED, read_queue_nums=4, write_queue_nums=4)
    s.create_topic(MIXED, read_queue_nums=5, write_queue_nums=5)
    s.create_topic(OTHER, read_queue_nums=2, write_queue_nums=2)
    rng = random.Random(11)
    seed = [{"topic": SEED, "tags": "tagA" if i < 4 else "tagB", "body": f"m{i}"} for i in range(8)]
    mixed = []
    for i in range(70):
        props = {"a": str(rng.randint(0, 9)), "region": rng.choice(["eu", "us"])}
        if i % 7 == 0:
            props["b"] = "x"
        mixed.append({"topic": MIXED, "tags": rng.choice(TAGS), "properties": props, "body": "x" * rng.randint(1, 300)})
    other = [{"topic": OTHER, "tags": rng.choice(TAGS), "body": f"o{i}"} for i in range(6)]
    s.put_messages(seed + mixed + other)
    return s


@pytest.fixture(scope="module")
def messages(store):
    """topic -> the CommitLog rows as dicts, for the model."""
    rows = (store.commitlog.read(store.spark)
            .select("topic", "queue_id", "queue_offset", "commitlog_offset", "store_size", "tags", "properties")
            .collect())
    out: dict = {}
    for r in rows:
        d = r.asDict()
        d["properties"] = dict(d["properties"] or {})
        out.setdefault(d["topic"], []).append(d)
    return out


def seed_group() -> ConsumerGroup:
    group = ConsumerGroup("GID_seed003")
    group.add_consumer("A", {SEED: "tagA"})
    group.add_consumer("B", {SEED: "tagB"})
    return group


# -- seed 003, exactly -------------------------------------------------------------------------
def test_seed_003_replay_and_diagnosis(store):
    group = seed_group()
    consumed = replay_group(store, group, SEED).collect()
    assert sorted((r["client_id"], r["queue_id"], r["queue_offset"], r["tags"]) for r in consumed) == [
        ("B", 2, 1, "tagB"), ("B", 3, 1, "tagB")]                 # A consumes nothing
    assert {r["pull_number"] for r in consumed} == {0} and {r["next_begin_offset"] for r in consumed} == {2}

    d = diagnose_group(store, group, SEED)
    assert d.consistent is False
    assert d.effective_subscriptions[SEED].sub_string == "tagB"
    assert {cid: [q.queue_id for q in qs] for cid, qs in d.assignments.items()} == {"A": [0, 1], "B": [2, 3]}
    lost = sorted((r["queue_id"], r["queue_offset"], r["tags"], r["reason"], r["client_id"]) for r in d.lost.collect())
    assert lost == [
        (0, 0, "tagA", "filtered_by_group_subscription", "A"), (0, 1, "tagB", "dropped_by_client_recheck", "A"),
        (1, 0, "tagA", "filtered_by_group_subscription", "A"), (1, 1, "tagB", "dropped_by_client_recheck", "A"),
        (2, 0, "tagA", "filtered_by_group_subscription", "B"), (3, 0, "tagA", "filtered_by_group_subscription", "B")]
    assert d.lost_counts() == {"filtered_by_group_subscription": 4, "dropped_by_client_recheck": 2}
    assert d.consumed_counts() == {"A": 0, "B": 2}
    # Each count's example is its first message, with the msg_id the lost rows carry.
    msg_id = {(r["queue_id"], r["queue_offset"]): r["msg_id"] for r in d.lost.collect()}
    examples = {k: ex for k, (_, ex) in d.counts()["lost"].items()}
    assert examples == {(SEED, "filtered_by_group_subscription", "A"): (0, 0, msg_id[(0, 0)]),
                        (SEED, "dropped_by_client_recheck", "A"): (0, 1, msg_id[(0, 1)]),
                        (SEED, "filtered_by_group_subscription", "B"): (2, 0, msg_id[(2, 0)])}
    assert d.counts()["message"][(SEED, None, None)] == (8, (0, 0, msg_id[(0, 0)]))
    assert (d.flapping_topics, d.consumers_without_queues, d.unconsumed_queues, d.refusals) == ({}, {}, {}, {})
    text = str(d)
    for line in ("Consumer group GID_seed003: CLUSTERING, AVG, 2 consumer(s)", "Subscriptions: INCONSISTENT",
                 "lost: 6 message(s):", "pulls with the group's table 'tagB', consumes 0",
                 "pulls with the group's table 'tagB', consumes 2"):
        assert line in text, text
    assert "dropped_by_client_recheck       2  by A" in text and "B's" in text


def test_seed_003_from_the_store_by_name_after_broker_heartbeats(store):
    from rocketfilter.pull.broker import Broker
    from rocketfilter.pull.client import PullConsumer

    broker = Broker(store)
    PullConsumer(broker, "GID_seed003_live", "A").subscribe(SEED, "tagA")
    PullConsumer(broker, "GID_seed003_live", "B").subscribe(SEED, "tagB")
    d = diagnose_group(store, "GID_seed003_live")       # every topic its consumers subscribe
    assert d.topics == [SEED] and d.lost_counts() == {"filtered_by_group_subscription": 4,
                                                      "dropped_by_client_recheck": 2}
    assert replay_group(store, "GID_seed003_live", SEED).count() == 2


def test_replay_and_diagnosis_are_lazy_and_replay_is_one_action(spark, store):
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("group-replay-lazy", "group-replay-lazy")
    try:
        df = replay_group(store, seed_group(), SEED)
        d = diagnose_group(store, seed_group(), SEED)
        assert tracker.getJobIdsForGroup("group-replay-lazy") == []
        assert len(df.collect()) == 2 and d is not None
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)


def test_commit_stores_where_each_queue_resumes(store):
    replay_group(store, seed_group(), SEED, commit=True)
    assert [store.query_consumer_offset("GID_seed003", SEED, q) for q in range(4)] == [2, 2, 2, 2]
    broadcast = ConsumerGroup("GID_b", message_model="BROADCASTING")
    broadcast.add_consumer("A", {SEED: "*"})
    with pytest.raises(ValueError, match="BROADCASTING: its consumers keep their offsets locally"):
        replay_group(store, broadcast, SEED, commit=True)


def test_start_and_end_per_queue(store):
    rows = replay_group(store, seed_group(), SEED, start={2: 1, 3: 1}).collect()
    assert sorted((r["queue_id"], r["queue_offset"], r["pull_number"]) for r in rows) == [(2, 1, 0), (3, 1, 0)]
    # Pulls are whole, as pull_sequence's: queue 3's first pull (from 0) is made and reaches offset 1.
    rows = replay_group(store, seed_group(), SEED, start={2: 2}, end={3: 1}).collect()
    assert sorted((r["queue_id"], r["queue_offset"]) for r in rows) == [(3, 1)]
    for kwargs, message in (({"start": {9: 0}}, r"start: 9 is not a queue of topic 'SUBSCRIBE_TEST'"),
                            ({"start": {0: -1}}, "start offset of queue 0 must be an integer >= 0"),
                            ({"start": {0: 2}, "end": {0: 1}}, "queue 0 of 'SUBSCRIBE_TEST': start 2 is after end 1"),
                            ({"end": [1]}, "end must map queue ids to offsets")):
        with pytest.raises(ValueError, match=message):
            replay_group(store, seed_group(), SEED, **kwargs)
    with pytest.raises(ValueError, match=r"topic 'Nope' does not exist"):
        replay_group(store, seed_group(), "Nope")
    # Start and end as Spark users give them (offsets_spec): JSON with -2 earliest, names, times.
    rows = replay_group(store, seed_group(), SEED, start='{"SUBSCRIBE_TEST": {"2": 1, "3": 1}}').collect()
    assert sorted((r["queue_id"], r["queue_offset"]) for r in rows) == [(2, 1), (3, 1)]
    everything = replay_group(store, seed_group(), SEED).count()
    assert everything == 2   # B's tagB messages of queues 2 and 3
    assert replay_group(store, seed_group(), SEED, start="latest").count() == 0
    assert replay_group(store, seed_group(), SEED, start="earliest", end="latest").count() == everything
    assert replay_group(store, seed_group(), SEED, start=0).count() == everything   # epoch ms 0
    assert replay_group(store, seed_group(), SEED, start="3000-01-01T00:00:00Z").count() == 0
    with pytest.raises(ValueError, match="start: expected 'earliest', 'latest', a time"):
        replay_group(store, seed_group(), SEED, start="yesterday")
    with pytest.raises(ValueError, match="no consumer group 'GID_unknown'"):
        replay_group(store, "GID_unknown", SEED)


def test_a_flapped_out_topic_refuses_pulls_and_loses_everything(store):
    group = ConsumerGroup("GID_flap")
    group.add_consumer("A", {SEED: "*", OTHER: "*"})
    group.add_consumer("B", {OTHER: "*"})                 # B's heartbeat drops SEED from the table
    with pytest.warns(UserWarning, match=r"refuses 'A''s pulls of 'SUBSCRIBE_TEST' \(SUBSCRIPTION_NOT_EXIST"):
        assert replay_group(store, group, SEED).count() == 0
    d = diagnose_group(store, group)
    assert d.topics == [OTHER, SEED] and not d.consistent
    assert d.flapping_topics == {SEED: ["B"]} and d.refusals[SEED]["A"].startswith("SUBSCRIPTION_NOT_EXIST")
    by_reason = {}
    for r in d.lost.where(F.col("topic") == SEED).collect():
        by_reason.setdefault((r["reason"], r["client_id"]), []).append(r["queue_id"])
    # AVG over [A, B]: A takes queues 0-1 (refused), B's share 2-3 is never pulled.
    assert {k: sorted(set(v)) for k, v in by_reason.items()} == {("pull_refused", "A"): [0, 1],
                                                                  ("queue_not_consumed", "B"): [2, 3]}
    assert "SUBSCRIBE_TEST flaps in and out of the group's table: B" in str(d)


def test_sql92_is_refused_when_the_broker_does_not_filter_by_properties(spark, store):
    off = MessageStore.open(store.uri, spark, broker_config=BrokerConfig(broker_name=BROKER,
                                                                         enable_property_filter=False))
    group = ConsumerGroup("GID_sql_off")
    group.add_consumer("A", {MIXED: ("a > 4", "SQL92")})
    refused = "SYSTEM_ERROR: The broker does not support consumer to filter message by SQL92"
    with pytest.warns(UserWarning, match=refused):
        assert replay_group(off, group, MIXED).count() == 0


def test_a_broker_registered_sql92_group_uses_its_filter_data(store, messages):
    from rocketfilter.pull.broker import Broker
    from rocketfilter.pull.client import PullConsumer
    from rocketfilter.groups.plan import plan_group_pulls

    broker = Broker(store)
    PullConsumer(broker, "GID_sql_live", "A").subscribe(MIXED, "a > 4", "SQL92")
    PullConsumer(broker, "GID_sql_live", "B", post_subscription_when_pull=True).subscribe(MIXED, "region = 'eu'",
                                                                                        "SQL92")
    group = store.load_group("GID_sql_live")
    plan = plan_group_pulls(store, group, MIXED)
    registered = store.filter_manager.get(MIXED, "GID_sql_live")
    by_client = {c.client_id: plan.filters[c.filter_index] for c in plan.consumers.values()}
    # A pulls with the group's table: B's later selector, with the data B's heartbeat registered;
    # B sends its own with each pull: compiled for the pull, without bloom data.
    assert by_client["A"].consumer_filter_data is registered and registered.expression == "region = 'eu'"
    assert by_client["B"].consumer_filter_data is not registered
    rows = replay_group(store, "GID_sql_live", MIXED, max_msg_nums=3).collect()
    got = {(r["client_id"], r["queue_id"], r["queue_offset"], r["pull_number"], r["next_begin_offset"]) for r in rows}
    assert got == model_of(store, messages, group).consumed and got


# -- random groups against the model -----------------------------------------------------------
def random_strategy(rng: random.Random, cids):
    name = rng.choice(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY"])
    if name == "CONSISTENT_HASH":
        return {"name": name, "virtualNodeCnt": rng.randint(1, 12)}
    if name == "CONFIG":
        return {"name": name, "messageQueueList": [{"topic": MIXED, "brokerName": BROKER, "queueId": q}
                                                   for q in sorted(rng.sample(range(5), rng.randint(1, 4)))]}
    if name == "MACHINE_ROOM":
        return {"name": name, "consumerIdcs": rng.choice([["room1"], ["room2"], ["room1", "room2"]])}
    if name == "MACHINE_ROOM_NEARBY":
        return {"name": name, "inner": rng.choice(["AVG", "AVG_BY_CIRCLE"]), "brokerRooms": {BROKER: "hz"},
                "consumerRooms": {cid: rng.choice(["hz", "sh"]) for cid in cids}}
    return name


def random_group(seed: int) -> ConsumerGroup:
    rng = random.Random(seed)
    cids = [f"10.0.0.{i}@{rng.choice(['app', 'App', 'x'])}" for i in rng.sample(range(1, 40), rng.randint(2, 6))]
    group = ConsumerGroup(f"GID_rand{seed}", message_model=rng.choice(["CLUSTERING"] * 3 + ["BROADCASTING"]),
                          allocate_strategy=random_strategy(rng, cids))
    for cid in cids:
        subs = {}
        if rng.random() < 0.85:
            if rng.random() < 0.45:
                expression = rng.choice(SQL_EXPRESSIONS + (["a >"] if rng.random() < 0.2 else []))
                subs[MIXED] = (expression, "SQL92")
            else:
                subs[MIXED] = rng.choice(TAG_EXPRESSIONS)
        if rng.random() < 0.3:
            subs[OTHER] = "*"
        group.add_consumer(cid, subs, sub_version=rng.choice([None, rng.randint(1, 4)]),
                           post_subscription_when_pull=rng.random() < 0.3)
    for _ in range(rng.randint(0, 3)):
        group.heartbeat(rng.choice(cids))
    if rng.random() < 0.2:
        group.remove_consumer(rng.choice(cids))
    return group


def model_of(store, messages, group, start=None, max_msg_nums=3):
    state = store.consumequeue_state().queues[MIXED]
    starts = {q: (start or {}).get(q, lo) for q, (lo, hi) in state.items()}
    ends = {q: hi for q, (lo, hi) in state.items()}
    cfg = model.Config(**dataclasses.asdict(pull_limits(store.config)))
    return group_model.replay(group, MIXED, messages[MIXED], BROKER, 5, max_msg_nums,
                              store.commitlog_state().next_commitlog_offset, cfg, starts, ends)


CASES = list(range(14))


def test_random_groups_replay_as_the_model(store, messages):
    frames, expected = [], {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # refused consumers warn; the model checks them
        for seed in CASES:
            group = random_group(seed)
            start = {q: seed % 3 for q in range(5)} if seed % 4 == 0 else None
            frames.append(replay_group(store, group, MIXED, start=start, max_msg_nums=3)
                          .withColumn("case", F.lit(seed)))
            expected[seed] = model_of(store, messages, group, start).consumed
    got = {seed: set() for seed in CASES}
    for r in reduce(DataFrame.unionByName, frames).collect():
        got[r["case"]].add((r["client_id"], r["queue_id"], r["queue_offset"], r["pull_number"],
                            r["next_begin_offset"]))
    for seed in CASES:
        assert got[seed] == expected[seed], (seed, random_group(seed).to_dict())
    assert sum(len(v) for v in got.values()) > 100        # the cases do deliver


def test_random_groups_lose_what_the_model_loses(store, messages):
    frames, expected, counts = [], {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in CASES:
            group = random_group(seed)
            d = diagnose_group(store, group, MIXED, max_msg_nums=3)
            frames.append(d.lost.withColumn("case", F.lit(seed)))
            expected[seed] = model_of(store, messages, group).lost
            assert d.refusals.get(MIXED, {}) .keys() == model_of(store, messages, group).refused.keys()
    got = {seed: set() for seed in CASES}
    for r in reduce(DataFrame.unionByName, frames).collect():
        got[r["case"]].add((r["queue_id"], r["queue_offset"], r["reason"], r["client_id"]))
    for seed in CASES:
        assert got[seed] == expected[seed], (seed, random_group(seed).to_dict())
    reasons = {reason for rows in got.values() for _, _, reason, _ in rows}
    assert {"dropped_by_client_recheck", "filtered_by_group_subscription", "filtered_by_own_subscription",
            "pull_refused", "queue_not_consumed"} <= reasons       # the cases cover every reason but skips


def test_kept_only_deliveries_keep_the_same_rows(store):
    """replay_group's ``kept_only`` (the CommitLog read only where some consumer keeps the tag,
    joined inner) keeps exactly the rows the full deliveries keep, every column included."""
    from rocketfilter.groups.plan import plan_group_pulls
    from rocketfilter.groups.replay import REPLAY_COLUMNS, group_deliveries, kept_tags

    frames, narrowed = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in CASES:
            plan = plan_group_pulls(store, random_group(seed), MIXED, None, None)
            narrowed += kept_tags(plan) is not None
            for kept_only in (False, True):
                rows = group_deliveries(store, plan, 3, kept_only=kept_only)
                if rows is not None:
                    frames.append(rows.where("kept").select(*REPLAY_COLUMNS)
                                  .withColumns({"case": F.lit(seed), "kept_only": F.lit(kept_only)}))
    got = {False: {}, True: {}}
    for r in reduce(DataFrame.unionByName, frames).collect():
        d = r.asDict()
        got[d.pop("kept_only")].setdefault(d.pop("case"), []).append(tuple(d.values()))
    assert {c: sorted(v) for c, v in got[True].items()} == {c: sorted(v) for c, v in got[False].items()}
    assert narrowed >= 3 and sum(map(len, got[True].values())) > 100    # the narrowed path runs, and delivers


def test_the_join_with_the_commitlog_takes_join_partitions(store, monkeypatch):
    """The tag path joins the deliveries with the CommitLog in ``join_partitions`` tasks when that
    is more than ``spark.sql.shuffle.partitions`` (Spark raises a smaller count to it)."""
    import re

    from rocketfilter.groups import replay
    from rocketfilter.groups.plan import plan_group_pulls

    monkeypatch.setattr(replay, "JOIN_ENTRIES_PER_TASK", 1)
    plan = plan_group_pulls(store, seed_group(), SEED, None, None)
    parts = replay.join_partitions(store.spark, plan)
    assert parts > int(store.spark.conf.get("spark.sql.shuffle.partitions"))
    rows = replay.group_deliveries(store, plan, kept_only=True)
    plan_text = rows._jdf.queryExecution().executedPlan().toString()
    assert set(re.findall(r"hashpartitioning\(commitlog_offset#\d+L, (\d+)\)", plan_text)) == {str(parts)}
    monkeypatch.undo()
    assert rows.where("kept").count() == replay_group(store, seed_group(), SEED).count() > 0
