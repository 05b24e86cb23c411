"""Every allocation strategy against RocketMQ's own results (alloc_cases.json, 2,001 cases produced by
the Java classes), plus MessageQueue's Java ordering and the strategies' configs."""
from __future__ import annotations

import re

import pytest

from ..conftest import conformance
from rocketfilter.consumer import (AllocateMachineRoomNearby, AllocateMessageQueueAveragely,
                                   AllocateMessageQueueAveragelyByCircle, AllocateMessageQueueByConfig,
                                   AllocateMessageQueueByMachineRoom, AllocateMessageQueueConsistentHash,
                                   ConsistentHashRouter, MachineRoomMap, MessageQueue, allocate_strategy_from_config,
                                   md5_hash)
from rocketfilter.javalang import INT_MAX, INT_MIN

NEARBY = "MACHINE_ROOM_NEARBY"


def case_config(case: dict) -> dict:
    """The case's strategy, spelled as a group file would spell it."""
    name = case["strategy"]
    if name == "CONSISTENT_HASH":
        return {"name": name, "virtualNodeCnt": case["virtual_node_cnt"]}
    if name == "MACHINE_ROOM":
        return {"name": name, "consumerIdcs": case["consumer_idcs"]}
    if name == NEARBY:
        return {"name": name, "inner": case["inner"], "brokerRooms": case["broker_rooms"],
                "consumerRooms": case["consumer_rooms"]}
    return {"name": name}


@pytest.mark.parametrize("case", conformance.params("alloc_cases.json", "alloc"))
def test_alloc_case(case):
    strategy = allocate_strategy_from_config(case_config(case))
    mq_all = [MessageQueue(*mq) for mq in case["mq_all"]]
    args = (case["group"], case["current_cid"], mq_all, case["cid_all"])
    if "error" in case:
        with pytest.raises(ValueError) as info:
            strategy.allocate(*args)
        assert case["error"] in str(info.value)
        return
    got = [[mq.topic, mq.broker_name, mq.queue_id] for mq in strategy.allocate(*args)]
    assert got == case["result"], f"{case['id']} {strategy!r} cid={case['current_cid']} cids={case['cid_all']}"


def test_the_case_file_covers_every_strategy_with_parameters():
    cases = conformance.cases("alloc_cases.json", "alloc")
    assert len(cases) == 2001
    assert {c["strategy"] for c in cases} == {"AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM", NEARBY}
    assert {c.get("virtual_node_cnt") for c in cases} >= {0, 1, 10, 50}
    assert {c.get("inner") for c in cases} >= {"AVG", "AVG_BY_CIRCLE"}


# -- MessageQueue ------------------------------------------------------------------------------
def test_message_queue_to_string_and_old_import_path():
    from rocketfilter.pull.client import MessageQueue as FromPull
    assert FromPull is MessageQueue
    assert str(MessageQueue("温度", "room1@broker-a", 7)) == (
        "MessageQueue [topic=温度, brokerName=room1@broker-a, queueId=7]")
    assert MessageQueue.from_dict(MessageQueue("T", "b", 1).to_dict()) == MessageQueue("T", "b", 1)
    assert len({MessageQueue("T", "b", 1), MessageQueue("T", "b", 1), MessageQueue("T", "b", 2)}) == 2


def test_message_queue_orders_by_utf16_code_units_like_java():
    bmp_high, astral = "\uffff", "\U00010000"   # Java: U+10000 is D800 DC00, below FFFF
    assert astral > bmp_high                    # ... while Python compares code points
    assert sorted([MessageQueue(bmp_high, "b", 0), MessageQueue(astral, "b", 0)])[0].topic == astral
    assert sorted([MessageQueue("T", bmp_high, 0), MessageQueue("T", astral, 0)])[0].broker_name == astral
    queues = [MessageQueue("T", "b", 0), MessageQueue("T", "a", 1), MessageQueue("S", "z", 9),
              MessageQueue("T", "a", 0)]
    assert [(q.topic, q.broker_name, q.queue_id) for q in sorted(queues)] == [
        ("S", "z", 9), ("T", "a", 0), ("T", "a", 1), ("T", "b", 0)]
    assert MessageQueue("T", "a", 0) <= MessageQueue("T", "a", 0) < MessageQueue("T", "a", 1)


def test_message_queue_compares_queue_ids_with_java_int_subtraction():
    low, one = MessageQueue("T", "b", INT_MIN), MessageQueue("T", "b", 1)
    assert low.compare_to(one) == INT_MAX and low > one   # INT_MIN - 1 wraps around in Java
    assert MessageQueue("T", "b", 3).compare_to(MessageQueue("T", "b", 5)) == -2


@pytest.mark.parametrize("args, error", [
    (("T", "b", "0"), TypeError), (("T", None, 0), TypeError), (("T", "b", True), TypeError),
    (("T", "b", INT_MAX + 1), ValueError),
])
def test_message_queue_rejects_bad_fields(args, error):
    with pytest.raises(error):
        MessageQueue(*args)


# -- the input check and each strategy ---------------------------------------------------------
MQS = [MessageQueue("T", "broker-a", i) for i in range(5)]
CHECKED = [AllocateMessageQueueAveragely(), AllocateMessageQueueAveragelyByCircle(),
           AllocateMessageQueueConsistentHash(), AllocateMessageQueueByMachineRoom(["room1"]),
           AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), MachineRoomMap({}, {}))]


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda s: s.get_name())
@pytest.mark.parametrize("cid, mqs, cids, message", [
    ("", MQS, ["c0"], "currentCID is empty"), (None, MQS, ["c0"], "currentCID is empty"),
    ("c0", [], ["c0"], "mqAll is null or mqAll empty"), ("c0", None, ["c0"], "mqAll is null or mqAll empty"),
    ("c0", MQS, [], "cidAll is null or cidAll empty"),
])
def test_check_raises_rocketmqs_messages(strategy, cid, mqs, cids, message):
    with pytest.raises(ValueError, match=message):
        strategy.allocate("G", cid, mqs, cids)


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda s: s.get_name())
def test_a_consumer_not_in_the_list_takes_nothing(strategy):
    assert strategy.allocate("G", "stranger", MQS, ["c0", "c1"]) == []


def test_names():
    assert [s.get_name() for s in CHECKED] == ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM",
                                               "MACHINE_ROOM_NEARBY-AVG"]
    assert AllocateMessageQueueByConfig([]).get_name() == "CONFIG"


def test_by_circle_deals_round_robin():
    cids = ["c0", "c1", "c2"]
    assert [[q.queue_id for q in AllocateMessageQueueAveragelyByCircle().allocate("G", c, MQS, cids)]
            for c in cids] == [[0, 3], [1, 4], [2]]


def test_by_config_returns_its_list_whatever_the_arguments():
    mine = [MessageQueue("T", "broker-a", 3)]
    strategy = AllocateMessageQueueByConfig(mine)
    assert strategy.allocate(None, "", [], []) == mine               # RocketMQ checks nothing
    strategy.allocate("G", "c0", MQS, ["c0"]).append("x")
    assert strategy.message_queue_list == mine


def test_machine_room_takes_room_at_name_brokers_only_as_java_split_does():
    mqs = [MessageQueue("T", b, 0) for b in ("room1@a", "room1@", "@b", "room1@a@c", "room2@a", "room1@@")]
    got = AllocateMessageQueueByMachineRoom(["room1", ""]).allocate("G", "c0", mqs, ["c0"])
    assert [q.broker_name for q in got] == ["room1@a", "@b"]   # "room1@" and "room1@@" split to one piece
    with pytest.raises(ValueError, match="consumer_idcs"):
        AllocateMessageQueueByMachineRoom(None)


def test_machine_room_deals_the_remainder_from_the_end():
    mqs = [MessageQueue("T", "r@b", i) for i in range(7)]
    cids = ["c0", "c1", "c2"]
    assert [[q.queue_id for q in AllocateMessageQueueByMachineRoom(["r"]).allocate("G", c, mqs, cids)]
            for c in cids] == [[0, 1, 6], [2, 3], [4, 5]]


def test_nearby_refuses_unresolved_rooms_with_rocketmqs_messages():
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(),
                                         MachineRoomMap({"broker-a": "room1"}, {"c0": "room1"}))
    unresolved = r"Machine room is null for mq MessageQueue \[topic=T, brokerName=b, queueId=0\]"
    with pytest.raises(ValueError, match=unresolved):
        strategy.allocate("G", "c0", [MessageQueue("T", "b", 0)], ["c0"])
    with pytest.raises(ValueError, match="Machine room is null for consumer id c1"):
        strategy.allocate("G", "c0", MQS, ["c0", "c1"])
    with pytest.raises(ValueError, match="allocateMessageQueueStrategy is null"):
        AllocateMachineRoomNearby(None, MachineRoomMap({}, {}))
    with pytest.raises(ValueError, match="machineRoomResolver is null"):
        AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), None)


def test_nearby_shares_rooms_without_consumers_in_java_string_order():
    bmp_high, astral = "\uffff", "\U00010000"
    mqs = [MessageQueue("T", "x", 0), MessageQueue("T", "y", 0), MessageQueue("T", "z", 0)]
    resolver = MachineRoomMap({"x": bmp_high, "y": astral, "z": "home"}, {"c0": "home"})
    got = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), resolver).allocate("G", "c0", mqs, ["c0"])
    assert [q.broker_name for q in got] == ["z", "y", "x"]   # own room first, then TreeMap order


# -- consistent hash ---------------------------------------------------------------------------
def test_md5_hash_is_the_first_four_digest_bytes_unsigned():
    # MD5("") = d41d8cd98f00b204e9800998ecf8427e
    assert md5_hash("") == 0xD41D8CD9
    assert md5_hash("\ud800") == md5_hash("?")            # Java's UTF-8 encoder replaces a lone surrogate


def test_consistent_hash_ring_routes_to_the_next_point_and_wraps():
    points = {"c0-0": 100, "c1-0": 200}

    def custom(key: str) -> int:
        if key in points:
            return points[key]
        return int(key.split("queueId=")[1][:-1]) * 100 + 50    # queue i sits at i*100 + 50

    strategy = AllocateMessageQueueConsistentHash(1, custom)
    mqs = [MessageQueue("T", "b", i) for i in range(3)]         # at 50, 150, 250
    assert [q.queue_id for q in strategy.allocate("G", "c0", mqs, ["c0", "c1"])] == [0, 2]
    assert [q.queue_id for q in strategy.allocate("G", "c1", mqs, ["c0", "c1"])] == [1]
    points["c1-0"] = 100                                         # a collision: the later node wins the point
    assert strategy.allocate("G", "c0", mqs, ["c0", "c1"]) == []
    with pytest.raises(ValueError, match="cannot be saved"):
        strategy.to_config()


def test_consistent_hash_numbers_replicas_of_a_repeated_consumer_on():
    asked = []
    router = ConsistentHashRouter(["c0", "c0"], 2, lambda key: asked.append(key) or len(asked))
    assert asked == ["c0-0", "c0-1", "c0-2", "c0-3"] and router.existing_replicas("c0") == 4


def test_consistent_hash_parameters():
    with pytest.raises(ValueError, match="illegal virtualNodeCnt :-1"):
        AllocateMessageQueueConsistentHash(-1)
    assert AllocateMessageQueueConsistentHash(0).allocate("G", "c0", MQS, ["c0"]) == []   # an empty ring
    with pytest.raises(ValueError, match="Java long"):
        AllocateMessageQueueConsistentHash(1, lambda key: 1 << 63).allocate("G", "c0", MQS, ["c0"])


# -- configs -----------------------------------------------------------------------------------
ROOMS = {"brokerRooms": {"broker-a": "room1"}, "consumerRooms": {"c0": "room1"}}


@pytest.mark.parametrize("config", [
    {"name": "AVG"}, {"name": "AVG_BY_CIRCLE"}, {"name": "CONSISTENT_HASH", "virtualNodeCnt": 3},
    {"name": "CONFIG", "messageQueueList": [{"topic": "T", "brokerName": "b", "queueId": 1}]},
    {"name": "MACHINE_ROOM", "consumerIdcs": ["room1", "room2"]},
    {"name": NEARBY, "inner": {"name": "CONSISTENT_HASH", "virtualNodeCnt": 5}, **ROOMS},
], ids=lambda c: c["name"])
def test_config_round_trip(config):
    strategy = allocate_strategy_from_config(config)
    assert strategy.to_config() == config
    assert allocate_strategy_from_config(strategy.to_config()) == strategy


def test_config_shorthands():
    assert allocate_strategy_from_config("AVG_BY_CIRCLE") == AllocateMessageQueueAveragelyByCircle()
    assert allocate_strategy_from_config({"name": "CONSISTENT_HASH"}).virtual_node_cnt == 10
    nearby = allocate_strategy_from_config({"name": "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE", **ROOMS})
    assert nearby.get_name() == "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE"
    assert nearby.to_config()["inner"] == {"name": "AVG_BY_CIRCLE"}
    assert allocate_strategy_from_config({"name": NEARBY, "inner": "AVG", **ROOMS}).get_name() == f"{NEARBY}-AVG"


@pytest.mark.parametrize("config, message", [
    ("avg", re.escape("unknown allocation strategy 'avg' (did you mean 'AVG'?)")),
    ({"name": "AVG", "virtualNodeCnt": 3}, r"AVG does not take \['virtualNodeCnt'\]"),
    ({"name": "CONSISTENT_HASH", "virtualNodeCnt": "10"}, "virtualNodeCnt must be an integer"),
    ({"name": "CONSISTENT_HASH", "virtualNodeCnt": -2}, "illegal virtualNodeCnt :-2"),
    ({"virtualNodeCnt": 3}, "needs a \"name\""),
    ({"name": "MACHINE_ROOM", "consumerIdcs": "room1"}, "consumerIdcs must be a list"),
    ({"name": "CONFIG", "messageQueueList": [{"topic": "T", "queueId": 1}]}, r"messageQueueList\[0\].*brokerName"),
    ({"name": NEARBY, **ROOMS}, "needs an inner strategy"),
    ({"name": NEARBY, "inner": "AVGG", **ROOMS}, "inner: unknown allocation strategy 'AVGG'"),
    ({"name": NEARBY, "inner": "AVG", "brokerRooms": {"a": 1}, "consumerRooms": {}}, "brokerRooms must map"),
    ({"name": f"{NEARBY}-AVG", "inner": "AVG_BY_CIRCLE", **ROOMS}, "does not match its inner strategy"),
    (7, "a name or"),
])
def test_config_errors(config, message):
    with pytest.raises(ValueError, match=message):
        allocate_strategy_from_config(config)
