"""ConsumerGroup: the group table after a sequence of heartbeats (ConsumerGroupInfo.updateSubscription),
which subscription a pull uses, and RebalanceImpl-style allocation. Pure Python."""
from __future__ import annotations

import ast
import doctest
import importlib
import pkgutil
import time
from pathlib import Path

import pytest

import rocketfilter.consumer
from rocketfilter.consumer import (AllocateMachineRoomNearby, AllocateMessageQueueAveragely,
                                   AllocateMessageQueueAveragelyByCircle, ConsumerGroup, ConsumerGroupInfo,
                                   MachineRoomMap, MessageQueue)
from rocketfilter.tags import client_accepts, is_matched_by_consume_queue, tags_code


def queues(topic: str, n: int, broker: str = "broker-a"):
    return [MessageQueue(topic, broker, i) for i in range(n)]


def ids(allocation):
    return {cid: [q.queue_id for q in qs] for cid, qs in allocation.items()}


def test_seed_003_later_subscription_wins_and_avg_splits_the_queues():
    group = ConsumerGroup("GID_seed003")
    a = group.add_consumer("A", {"SUBSCRIBE_TEST": "tagA"})
    b = group.add_consumer("B", {"SUBSCRIBE_TEST": "tagB"})
    assert b.sub_version > a.sub_version
    effective = group.effective_subscriptions["SUBSCRIBE_TEST"]
    assert effective.sub_string == "tagB" and effective is b.subscriptions["SUBSCRIBE_TEST"]
    assert ids(group.allocate("SUBSCRIBE_TEST", queues("SUBSCRIBE_TEST", 4))) == {"A": [0, 1], "B": [2, 3]}

    pull_a = group.subscription_for_pull("A", "SUBSCRIBE_TEST")
    assert pull_a.refusal is None and pull_a.broker is effective and pull_a.client.sub_string == "tagA"
    # The broker sends A's queues' tagB messages; A's exact re-check drops them; tagA reaches nobody.
    assert is_matched_by_consume_queue(pull_a.broker, tags_code("tagB"))
    assert not client_accepts(pull_a.client, "tagB")
    assert not is_matched_by_consume_queue(pull_a.broker, tags_code("tagA"))


def test_default_sub_versions_are_now_and_strictly_increasing():
    before = time.time_ns() // 1_000_000
    group = ConsumerGroup("G")
    versions = [group.add_consumer(f"c{i}", {"T": "*"}).sub_version for i in range(50)]
    assert versions[0] >= before and all(x < y for x, y in zip(versions, versions[1:]))
    assert all(s.sub_version == versions[3] for s in group.consumer("c3").subscriptions.values())


def test_an_older_sub_version_added_later_does_not_win():
    group = ConsumerGroup("G")
    group.add_consumer("B", {"T": "tagB"}, sub_version=2)
    group.add_consumer("A", {"T": "tagA"}, sub_version=1)
    assert group.effective_subscriptions["T"].sub_string == "tagB"
    group.add_consumer("C", {"T": "tagC"}, sub_version=2)        # a tie keeps the older one
    assert group.effective_subscriptions["T"].sub_string == "tagB"


def test_heartbeats_drop_unlisted_topics_and_flap():
    group = ConsumerGroup("G")
    group.add_consumer("A", {"T1": "*", "T2": "x"})
    group.add_consumer("B", {"T2": "y"})
    assert sorted(group.effective_subscriptions) == ["T2"]             # B's heartbeat dropped T1
    assert group.subscription_for_pull("A", "T1").refusal == "SUBSCRIPTION_NOT_EXIST"
    group.heartbeat("A")
    assert sorted(group.effective_subscriptions) == ["T1", "T2"]       # and A's brings it back
    assert group.effective_subscriptions["T2"].sub_string == "y"       # B's later version stays
    steps = group.replay()
    assert [(s.client_id, s.changed, s.topics) for s in steps] == [
        ("A", True, {"T1": "*", "T2": "x"}), ("B", True, {"T2": "y"}), ("A", True, {"T2": "y", "T1": "*"})]
    assert group.heartbeats == ["A", "B", "A"] and group.consumer_ids() == ["A", "B"]


def test_a_re_added_topic_with_an_older_version_refuses_newer_consumers():
    group = ConsumerGroup("G")
    group.add_consumer("A", {"T": "a"}, sub_version=5)
    group.add_consumer("C", {"U": "*"}, sub_version=4)     # drops T
    group.add_consumer("B", {"T": "b"}, sub_version=3)     # adds T back, at version 3
    assert group.subscription_for_pull("A", "T").refusal == "SUBSCRIPTION_NOT_LATEST"
    assert group.subscription_for_pull("A", "T").broker is None
    assert group.subscription_for_pull("B", "T").broker.sub_string == "b"


def test_post_subscription_when_pull_uses_the_consumers_own():
    group = ConsumerGroup("G")
    group.add_consumer("A", {"T": ("a > 1", "SQL92")}, post_subscription_when_pull=True)
    group.add_consumer("B", {"U": "*"})                    # drops T from the table
    pull = group.subscription_for_pull("A", "T")
    assert pull.refusal is None and pull.broker is pull.client and pull.broker.expression_type == "SQL92"
    with pytest.raises(ValueError, match="does not subscribe 'T'"):
        group.subscription_for_pull("B", "T")


def test_group_info_is_the_brokers_record():
    group = ConsumerGroup("G", message_model="BROADCASTING", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    group.add_consumer("A", {"T": "*"})
    group.add_consumer("B", {"T": "*"})
    group.heartbeat("A")
    info = group.group_info()
    assert isinstance(info, ConsumerGroupInfo)
    assert (info.message_model, info.consume_from_where, info.clients) == ("BROADCASTING",
                                                                            "CONSUME_FROM_FIRST_OFFSET",
                                                                            {"A": 2, "B": 1})


def test_the_broker_and_the_group_share_consumer_group_info():
    from rocketfilter.pull.broker import ConsumerGroupInfo as FromBroker
    assert FromBroker is ConsumerGroupInfo


# -- allocation --------------------------------------------------------------------------------
def test_allocate_sorts_queues_and_client_ids_like_java_and_dedupes():
    group = ConsumerGroup("G")
    group.add_consumer("\uffff", {"T": "*"})
    group.add_consumer("\U00010000", {"T": "*"})          # Java sorts this one first (D800 < FFFF)
    mqs = list(reversed(queues("T", 3))) + queues("T", 1)
    assert list(group.allocate("T", mqs)) == ["\U00010000", "\uffff"]
    assert ids(group.allocate("T", mqs)) == {"\U00010000": [0, 1], "\uffff": [2]}


def test_consumers_without_the_topic_take_nothing_and_orphan_their_share():
    group = ConsumerGroup("G")
    group.add_consumer("A", {"T": "*"})
    group.add_consumer("B", {"U": "*"})
    assert ids(group.allocate("T", queues("T", 4))) == {"A": [0, 1], "B": []}
    assert [q.queue_id for q in group.unconsumed_queues("T", queues("T", 4))] == [2, 3]


def test_broadcasting_gives_every_subscriber_every_queue():
    group = ConsumerGroup("G", message_model="BROADCASTING")
    group.add_consumer("A", {"T": "*"})
    group.add_consumer("B", {"T": "x"})
    group.add_consumer("C", {"U": "*"})
    assert ids(group.allocate("T", queues("T", 3))) == {"A": [0, 1, 2], "B": [0, 1, 2], "C": []}


def test_allocate_with_other_strategies_and_no_queues():
    group = ConsumerGroup("G", allocate_strategy="AVG_BY_CIRCLE")
    assert group.allocate_strategy == AllocateMessageQueueAveragelyByCircle()
    for cid in ("c0", "c1"):
        group.add_consumer(cid, {"T": "*"})
    assert ids(group.allocate("T", queues("T", 5))) == {"c0": [0, 2, 4], "c1": [1, 3]}
    assert ids(group.allocate("T", [])) == {"c0": [], "c1": []}
    hashed = ConsumerGroup("G", allocate_strategy={"name": "CONSISTENT_HASH", "virtualNodeCnt": 10})
    for cid in ("c0", "c1"):
        hashed.add_consumer(cid, {"T": "*"})
    taken = sorted(q.queue_id for qs in hashed.allocate("T", queues("T", 8)).values() for q in qs)
    assert taken == list(range(8))


def test_allocate_names_the_group_topic_and_consumer_on_a_strategy_error():
    nearby = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), MachineRoomMap({"broker-a": "r1"}, {"A": "r1"}))
    group = ConsumerGroup("G", allocate_strategy=nearby)
    group.add_consumer("A", {"T": "*"})
    group.add_consumer("B", {"T": "*"})
    with pytest.raises(ValueError, match="group 'G', topic 'T', consumer 'A': MACHINE_ROOM_NEARBY-AVG: "
                                         "Machine room is null for consumer id B"):
        group.allocate("T", queues("T", 2))


def test_allocate_refuses_queues_of_another_topic():
    group = ConsumerGroup("G")
    group.add_consumer("A", {"T": "*"})
    with pytest.raises(ValueError, match=r"MessageQueue \[topic=U.* is not a queue of topic 'T'"):
        group.allocate("T", queues("U", 1))
    with pytest.raises(ValueError, match="MessageQueue items"):
        group.allocate("T", [("T", "b", 0)])


# -- validation --------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    ({"group": "a/b"}, "group"),
    ({"group": "G", "message_model": "clustering"}, "message_model must be one of CLUSTERING, BROADCASTING"),
    ({"group": "G", "consume_from_where": "LAST"}, "consume_from_where must be one of"),
    ({"group": "G", "allocate_strategy": "ROUND_ROBIN"}, "allocate_strategy: unknown allocation strategy"),
])
def test_group_settings_are_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ConsumerGroup(**kwargs)


@pytest.mark.parametrize("cid, subs, kwargs, message", [
    ("", {"T": "*"}, {}, "client id must be a non-empty string"),
    ("A", {"../T": "*"}, {}, "consumer 'A', topic '../T': The specified topic"),
    ("A", {"T": "||"}, {}, "consumer 'A', topic 'T': subString split error"),
    ("A", {"T": ("a > 1", "sql92")}, {}, "expression type must be TAG or SQL92"),
    ("A", {"T": ("", "SQL92")}, {}, "Expression can't be null"),
    ("A", {"T": 5}, {}, "a subscription is a TAG expression"),
    ("A", {"T": {"expr": "x"}}, {}, "got keys"),
    ("A", ["T"], {}, "subscriptions must map topics"),
    ("A", {"T": "*"}, {"sub_version": "1"}, "sub_version must be a Java long"),
])
def test_add_consumer_checks_its_input(cid, subs, kwargs, message):
    group = ConsumerGroup("G")
    with pytest.raises(ValueError, match=message):
        group.add_consumer(cid, subs, **kwargs)
    assert group.consumer_ids() == [] and group.heartbeats == []     # nothing half-added


def test_duplicates_and_unknown_consumers():
    group = ConsumerGroup("G")
    group.add_consumer("A", {"T": "*"})
    with pytest.raises(ValueError, match="already in the group"):
        group.add_consumer("A", {"T": "*"})
    with pytest.raises(ValueError, match="has no consumer 'Z'"):
        group.heartbeat("Z")
    group.add_consumer("B", {"T": "*"})
    with pytest.raises(ValueError, match=r"consumers \['A'\] never heartbeat"):
        group.set_heartbeats(["B"])
    group.set_heartbeats(["B", "A", "B"])
    assert group.heartbeats == ["B", "A", "B"]


def test_a_consumer_that_leaves_takes_no_queue_but_its_subscription_stays():
    group = ConsumerGroup("G")
    group.add_consumer("A", {"T": "tagA"}, sub_version=1)
    group.add_consumer("B", {"T": "tagB"}, sub_version=2)
    group.remove_consumer("B")                 # unregisterChannel: B's tagB stays in the table
    group.heartbeat("A")                       # A's older version does not replace it
    assert group.consumer_ids() == ["A"] and group.departed == ["B"]
    assert group.effective_subscriptions["T"].sub_string == "tagB"
    assert list(group.group_info().clients) == ["A"]
    assert ids(group.allocate("T", queues("T", 4))) == {"A": [0, 1, 2, 3]}
    assert group.subscription_for_pull("A", "T").broker.sub_string == "tagB"
    with pytest.raises(ValueError, match="'B' has left the group"):
        group.subscription_for_pull("B", "T")
    group.heartbeat("B")                       # B is back
    assert group.departed == [] and ids(group.allocate("T", queues("T", 4))) == {"A": [0, 1], "B": [2, 3]}


def test_the_last_consumer_leaving_clears_the_group():
    group = ConsumerGroup("G", allocate_strategy="AVG_BY_CIRCLE")
    group.add_consumer("A", {"T": "*"})
    group.add_consumer("B", {"T": "*"})
    group.remove_consumer("A")
    group.remove_consumer("B")
    assert (group.consumer_ids(), group.heartbeats, group.departed, group.effective_subscriptions) == ([], [], [], {})
    assert group.allocate_strategy.get_name() == "AVG_BY_CIRCLE"


# -- the package's own rules -------------------------------------------------------------------
CONSUMER_DIR = Path(rocketfilter.consumer.__file__).parent


@pytest.mark.parametrize("path", sorted(CONSUMER_DIR.glob("*.py")), ids=lambda p: p.name)
def test_consumer_never_imports_pull(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert not [n for n in names if n.startswith("rocketfilter.pull")]


def test_importing_the_package_loads_neither_pull_nor_the_store_and_hands_out_the_replay_lazily():
    import subprocess
    import sys

    code = ("import sys, rocketfilter.consumer as c; "
            "print(sorted(m for m in sys.modules if m.startswith(('rocketfilter.pull', 'rocketfilter.store')))); "
            "f = c.replay_group; print(f.__module__, 'rocketfilter.groups.replay' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(rocketfilter.consumer.__file__).parents[2])
    assert done.stdout.splitlines() == ["[]", "rocketfilter.groups.replay True"], done.stderr
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        rocketfilter.consumer.nope   # noqa: B018


@pytest.mark.parametrize("name", [m.name for m in pkgutil.iter_modules([str(CONSUMER_DIR)])])
def test_docstring_examples_run(name):
    module = importlib.import_module(f"rocketfilter.consumer.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_a_config_list_of_another_topic_is_not_pulled_for_this_one():
    """RocketMQ 5.3.3 (tests/broker, seed 8): AllocateMessageQueueByConfig hands every consumer its
    fixed list whatever topic it rebalances; RebalanceImpl keys pull requests by queue, so the
    list's queues of topic A are not pulled as queues of topic B."""
    from rocketfilter.consumer import AllocateMessageQueueByConfig, ConsumerGroup, MessageQueue

    listed = [MessageQueue("A", "broker-a", 0), MessageQueue("A", "broker-a", 2)]
    group = ConsumerGroup("GID_config", allocate_strategy=AllocateMessageQueueByConfig(listed))
    group.add_consumer("c0", {"A": "*", "B": "*"})
    assert group.allocate("A", [MessageQueue("A", "broker-a", i) for i in range(4)])["c0"] == listed
    assert group.allocate("B", [MessageQueue("B", "broker-a", i) for i in range(4)])["c0"] == []
