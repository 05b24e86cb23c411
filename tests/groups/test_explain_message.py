"""explain_message: every trace agrees with diagnose_group's per-message outcomes and
replay_group's deliveries on random groups (tests/groups/test_replay.py's generator), one test per
verdict, the lookups, bad input and the text. One small store for the module: a topic whose
first commit-log file has expired, SQL92 bitmaps for one registered group, seed 003's topic."""
from __future__ import annotations

import random
import warnings

from functools import reduce

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rocketfilter import explain_message
from rocketfilter.config import BrokerConfig, MessageStoreConfig
from rocketfilter.consumer import ConsumerGroup
from rocketfilter.groups.outcomes import message_outcomes
from rocketfilter.groups.plan import plan_group_pulls
from rocketfilter.groups.replay import group_deliveries
from rocketfilter.groups.message_trace import Verdict
from rocketfilter.store import MessageStore
from tests.groups.test_replay import BROKER, MIXED, SEED, TAGS, random_group

OLD, FILL, BITS = "Old", "Fill", "Bits"
FILE = 1000       # commit-log "file" size: Old's messages fill the first file, which expires
V = Verdict
# diagnose_group's reason -> the verdicts a trace may give for it (message_trace's table)
VERDICTS = {"dropped_by_client_recheck": {V.DROPPED_BY_CLIENT_RECHECK},
            "filtered_by_group_subscription": {V.FILTERED_BY_TAG_CODE, V.FILTERED_BY_BITMAP, V.FILTERED_BY_SQL92},
            "filtered_by_own_subscription": {V.FILTERED_BY_TAG_CODE, V.FILTERED_BY_BITMAP, V.FILTERED_BY_SQL92},
            "skipped_by_broker": {V.EXPIRED}, "pull_refused": {V.NOT_SUBSCRIBED, V.FILTERED_BY_SQL92},
            "queue_not_consumed": {V.NOT_SUBSCRIBED, V.NO_CONSUMER}}


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("explain") / "store"), spark,
                          MessageStoreConfig(mapped_file_size_commit_log=FILE),
                          broker_config=BrokerConfig(broker_name=BROKER, enable_calc_filter_bit_map=True))
    for topic, queues in ((OLD, 1), (FILL, 1), (SEED, 4), (MIXED, 5), (BITS, 1)):
        s.create_topic(topic, read_queue_nums=queues, write_queue_nums=queues)
    s.filter_manager.register(BITS, "GID_bits", "a > 1", "SQL92", 1)   # before its messages: they get bitmaps
    rng = random.Random(5)
    mixed = []
    for i in range(10):
        props = {"a": str(rng.randint(0, 9)), "region": rng.choice(["eu", "us"])}
        if i % 7 == 0:
            props["b"] = "x"
        mixed.append({"topic": MIXED, "tags": rng.choice(TAGS), "properties": props})
    put = s.put_messages([{"topic": OLD, "tags": "tagA", "body": "o" * 100} for _ in range(3)]
                         + [{"topic": FILL, "body": "f" * 100} for _ in range(8)]   # past the first file
                         + [{"topic": SEED, "tags": "tagA" if i < 4 else "tagB", "keys": f"k{i} dup", "body": f"m{i}"}
                            for i in range(8)] + mixed
                         + [{"topic": BITS, "properties": {"a": str(i % 4)}, "body": "b"} for i in range(8)])
    old = [r for r in put if r["topic"] == OLD]
    assert old[-1]["commitlog_offset"] < FILE < min(r["commitlog_offset"] for r in put if r["topic"] == SEED)
    s.expire(before_commitlog_offset=FILE)
    s.old_msg_id = old[0]["msg_id"]
    return s


def seed_group(name="GID_seed003") -> ConsumerGroup:
    group = ConsumerGroup(name)
    group.add_consumer("A", {SEED: "tagA"})
    group.add_consumer("B", {SEED: "tagB"})
    return group


def at(store, group, queue_id, queue_offset, topic=SEED, **kwargs):
    return explain_message(store, group, topic=topic, queue_id=queue_id, queue_offset=queue_offset, **kwargs)


# -- agreement with diagnose_group and replay_group on random groups ---------------------------
AGREEMENT_CASES = [1, 2, 8, 9]   # BROADCASTING, CONSISTENT_HASH, AVG_BY_CIRCLE, MACHINE_ROOM


def _expected(store, groups):
    """Per case: (queue, offset) -> every owner's (rank, reason, client_id) as diagnose_group
    computes it, and (client, queue, offset) -> (pull_number, next_begin_offset) as replay_group
    delivers and keeps it; two Spark jobs for all cases."""
    outcomes, deliveries = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case, group in groups.items():
            plan = plan_group_pulls(store, group, MIXED)
            outcomes.append(message_outcomes(store, plan, 2).withColumn("case", F.lit(case)))
            rows = group_deliveries(store, plan, 2)
            if rows is not None:
                deliveries.append(rows.where("kept").withColumn("case", F.lit(case)))
    owners = {case: {} for case in groups}
    for r in reduce(DataFrame.unionByName, outcomes).collect():
        owners[r["case"]][(r["queue_id"], r["queue_offset"])] = [(o["rank"], o["reason"], o["client_id"])
                                                                 for o in r["owners"]]
    replayed = {case: {} for case in groups}
    for r in reduce(DataFrame.unionByName, deliveries).collect():
        replayed[r["case"]][(r["client_id"], r["queue_id"], r["queue_offset"])] = (r["pull_number"],
                                                                                 r["next_begin_offset"])
    return owners, replayed


def test_every_trace_agrees_with_the_diagnosis_and_the_replay(store):
    groups = {seed: random_group(seed) for seed in AGREEMENT_CASES}
    owners, replayed = _expected(store, groups)
    seen_verdicts = set()
    for seed, group in groups.items():
        broadcasting = group.message_model == "BROADCASTING"
        committed = {} if seed % 2 or broadcasting else {0: 2, 2: 1}   # queue 0 all consumed, queue 2 half
        store.commit_consumer_offsets([(group.group, MIXED, q, o) for q, o in committed.items()])
        subscribers = [cid for cid in group.consumer_ids() if MIXED in group.consumer(cid).subscriptions]
        assert owners[seed], seed
        for (q, offset), found in sorted(owners[seed].items()):
            for client in (subscribers[:1] if broadcasting else [None]):
                trace = at(store, group, q, offset, topic=MIXED, client_id=client, max_msg_nums=2)
                mine = [o for o in found if o[2] == client] if client else found
                rank, reason, cid = min(mine, default=(6, "queue_not_consumed", None), key=lambda o: (o[0], o[2] or ""))
                context = (seed, q, offset, client, str(trace))
                assert (trace.reason, trace.client_id) == (None if rank == 0 else reason, cid), context
                seen_verdicts.add(trace.verdict)
                if rank == 0:
                    assert trace.verdict == (V.CONSUMED if committed.get(q, -1) > offset else V.PENDING), context
                    pull = trace.step("pull").seen
                    if q not in committed:   # pulled from the queue's min offset, as the replay
                        assert (pull["pull_number"], pull["next_begin_offset"]) == replayed[seed][(cid, q, offset)], \
                            context
                    else:
                        assert (cid, q, offset) in replayed[seed], context
                else:
                    assert trace.verdict in VERDICTS[reason], context
                    assert (cid, q, offset) not in replayed[seed], context
    assert {V.CONSUMED, V.PENDING, V.DROPPED_BY_CLIENT_RECHECK, V.FILTERED_BY_TAG_CODE, V.FILTERED_BY_SQL92,
            V.NOT_SUBSCRIBED} <= seen_verdicts, seen_verdicts


# -- one test per verdict ---------------------------------------------------------------------
def test_consumed_and_pending(store):
    group = seed_group("GID_seed003_commit")
    pending = at(store, group, 2, 1)
    assert (pending.verdict, pending.client_id, pending.reason) == (V.PENDING, "B", None)
    assert [s.name for s in pending.steps] == ["message", "owner", "subscription", "tag_code", "pull",
                                               "client_recheck", "committed_offset"]
    assert pending.step("pull").seen["pull_number"] == 0 and pending.step("pull").seen["pull_status"] == "FOUND"
    store.commit_consumer_offset(group.group, SEED, 2, 2)
    consumed = at(store, group, 2, 1)
    assert consumed.verdict == V.CONSUMED and "committed offset of queue 2 is 2 > 1: consumed" in str(consumed)
    # From the committed offset: queue 2's next pull starts at 1 and carries offset 1 first.
    store.commit_consumer_offset(group.group, SEED, 2, 1)
    again = at(store, group, 2, 1)
    assert again.verdict == V.PENDING and again.step("pull").seen["pull_offset"] == 1


def test_filtered_by_tag_code_and_dropped_by_client_recheck(store):
    filtered = at(store, seed_group(), 0, 0)
    assert (filtered.verdict, filtered.client_id, filtered.reason) == (
        V.FILTERED_BY_TAG_CODE, "A", "filtered_by_group_subscription")
    code = filtered.step("tag_code")
    assert code.passed is False and code.seen["tags_code"] == 3552231 and code.seen["subscription_codes"] == [3552232]
    dropped = at(store, seed_group(), 0, 1)
    assert (dropped.verdict, dropped.client_id) == (V.DROPPED_BY_CLIENT_RECHECK, "A")
    text = str(dropped)
    for part in ("SUBSCRIBE_TEST queue 0 offset 1 for group GID_seed003, consumer A: DROPPED_BY_CLIENT_RECHECK",
                 "AVG over 2 consumer(s) gives queue 0 of SUBSCRIBE_TEST to A",
                 "the group's table holds 'tagB' (TAG) for SUBSCRIBE_TEST; A subscribes 'tagA' (TAG)",
                 "pull #0 from offset 0", "it carries this message",
                 "[STOP] client_recheck: the client keeps only tags ['tagA'] of its own subscription: "
                 "'tagB' is not one"):
        assert part in text, text
    assert dropped.deciding_step.name == "client_recheck"


def test_filtered_by_sql92_names_the_deciding_condition(store):
    group = ConsumerGroup("GID_sql")
    group.add_consumer("C", {MIXED: ("a > 4 AND region = 'eu'", "SQL92")})
    rows = store.commitlog.read(store.spark, where=[("topic", "=", MIXED)]).collect()
    low = next(r for r in rows if int(r["properties"]["a"]) <= 4)
    trace = at(store, group, low["queue_id"], low["queue_offset"], topic=MIXED)
    assert (trace.verdict, trace.reason) == (V.FILTERED_BY_SQL92, "filtered_by_group_subscription")
    sql = trace.step("sql92")
    assert sql.seen["result"] is False
    assert sql.seen["deciding"] == [{"condition": "(a > 4)", "operator": ">", "result": False,
                                     "properties": {"a": low["properties"]["a"]}, "error": None}]
    assert f"(a > 4) is FALSE with a = '{low['properties']['a']}'" in str(trace)
    broken = ConsumerGroup("GID_sql_broken")
    broken.add_consumer("C", {MIXED: ("a >", "SQL92")})   # no filter data: every pull is refused
    refused = at(store, broken, low["queue_id"], low["queue_offset"], topic=MIXED)
    assert (refused.verdict, refused.reason) == (V.FILTERED_BY_SQL92, "pull_refused")
    assert "FILTER_DATA_NOT_EXIST" in refused.deciding_step.text


def test_filtered_by_bitmap(store):
    group = ConsumerGroup("GID_bits")
    group.add_consumer("C", {BITS: ("a > 1", "SQL92")}, sub_version=1)
    verdicts = {o: at(store, group, 0, o, topic=BITS).verdict for o in range(4)}   # a = 0, 1, 2, 3
    assert verdicts[2] == verdicts[3] == V.PENDING
    assert V.FILTERED_BY_BITMAP in (verdicts[0], verdicts[1]), verdicts   # a bloom filter may pass one
    bitmap = at(store, group, 0, 0, topic=BITS).step("bitmap")
    assert bitmap is not None and bitmap.seen["bit_pos"]


def test_not_subscribed_and_no_consumer(store):
    flap = ConsumerGroup("GID_flap")
    flap.add_consumer("A", {SEED: "*", MIXED: "*"})
    flap.add_consumer("B", {MIXED: "*"})            # B's heartbeat drops SEED from the table
    refused = at(store, flap, 0, 0)
    assert (refused.verdict, refused.client_id, refused.reason) == (V.NOT_SUBSCRIBED, "A", "pull_refused")
    assert "SUBSCRIPTION_NOT_EXIST" in str(refused)
    orphan = at(store, flap, 3, 0)                  # AVG gives B queues 2-3, which it never pulls
    assert (orphan.verdict, orphan.client_id, orphan.reason) == (V.NOT_SUBSCRIBED, "B", "queue_not_consumed")
    config = ConsumerGroup("GID_config", allocate_strategy={"name": "CONFIG", "messageQueueList": [
        {"topic": SEED, "brokerName": BROKER, "queueId": 0}]})
    config.add_consumer("A", {SEED: "*"})
    nobody = at(store, config, 1, 0)
    assert (nobody.verdict, nobody.client_id, nobody.reason) == (V.NO_CONSUMER, None, "queue_not_consumed")
    assert at(store, config, 0, 0).verdict == V.PENDING


def test_broadcasting_traces_a_consumer_that_wants_the_message_and_loses_it(store):
    group = ConsumerGroup("GID_broadcast", message_model="BROADCASTING")
    group.add_consumer("A", {SEED: "tagA"})
    group.add_consumer("B", {SEED: "tagB"})          # the table holds tagB for both
    lost = at(store, group, 0, 0)                     # tagA: A wants it, its pulls filter it out
    assert (lost.verdict, lost.client_id) == (V.FILTERED_BY_TAG_CODE, "A")
    assert "BROADCASTING: every subscriber pulls every queue: A, B" in str(lost)
    got = at(store, group, 0, 1)                      # tagB: B consumes it, nobody that wants it loses it
    assert (got.verdict, got.client_id) == (V.PENDING, "B")
    assert at(store, group, 0, 1, client_id="A").verdict == V.DROPPED_BY_CLIENT_RECHECK


def test_expired_and_not_found(store):
    group = seed_group()
    for trace in (at(store, group, 0, 1, topic=OLD), explain_message(store, group, msg_id=store.old_msg_id)):
        assert trace.verdict == V.EXPIRED and trace.client_id is None and trace.reason is None
        assert "retention removed it" in str(trace)
    assert at(store, group, 0, 8).verdict == V.NOT_FOUND
    assert explain_message(store, group, msg_id="0" * 32).verdict == V.NOT_FOUND


def test_lookups_by_msg_id_and_key_find_the_same_message(store):
    by_position = at(store, seed_group(), 1, 1)
    msg_id = by_position.msg_id
    by_id = explain_message(store, seed_group(), msg_id=msg_id)
    assert by_id.steps[1:] == by_position.steps[1:] and "found by msg_id" in str(by_id)
    by_key = explain_message(store, seed_group(), key="k5")
    assert (by_key.queue_id, by_key.queue_offset, by_key.verdict) == (1, 1, by_position.verdict)


def test_bad_input(store):
    for kwargs, message in (({}, "give exactly one of msg_id, key, or topic"),
                            ({"msg_id": "x", "key": "k"}, "got msg_id, key"),
                            ({"topic": SEED, "queue_id": 0}, "needs topic, queue_id and queue_offset together"),
                            ({"topic": "Nope", "queue_id": 0, "queue_offset": 0}, "topic 'Nope' does not exist"),
                            ({"topic": SEED, "queue_id": 9, "queue_offset": 0}, "queue_id 9 is not a queue"),
                            ({"topic": SEED, "queue_id": 0, "queue_offset": 0, "client_id": "Z"},
                             "consumer 'Z' is not in group"),
                            ({"key": "dup"}, r"key 'dup' names 8 messages")):
        with pytest.raises(ValueError, match=message):
            explain_message(store, seed_group(), **kwargs)
    with pytest.raises(ValueError, match="no consumer group 'GID_unknown'"):
        explain_message(store, "GID_unknown", topic=SEED, queue_id=0, queue_offset=0)


def test_the_pull_loops_deliveries_are_never_broadcast(store):
    """Spark sizes the pull loop's output from the ConsumeQueue's compressed files, so it would
    broadcast it even when it holds millions of deliveries (at 10M messages: 736 MiB, out of a
    2 GiB driver): the outcomes join it by sort-merge whatever its size."""
    plan = plan_group_pulls(store, seed_group(), SEED)
    text = message_outcomes(store, plan, 2)._jdf.queryExecution().executedPlan().toString()
    assert "SortMergeJoin [queue_id" in text and "BroadcastHashJoin [queue_id" not in text, text
