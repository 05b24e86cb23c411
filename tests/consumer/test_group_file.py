"""ConsumerGroup as a document: to_dict / from_dict round trips, JSON and YAML files, and errors that
name the file, the consumer and the field."""
from __future__ import annotations

import json

import pytest

from rocketfilter.consumer import ConsumerGroup, GroupFileError, MessageQueue

ROOMS = {"brokerRooms": {"broker-a": "r1"}, "consumerRooms": {"A": "r1", "B": "r1"}}


def sample_group() -> ConsumerGroup:
    group = ConsumerGroup("GID_orders", allocate_strategy={"name": "MACHINE_ROOM_NEARBY", "inner": "AVG", **ROOMS},
                          consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    group.add_consumer("A", {"Orders": "paid || shipped", "Refunds": "*"})
    group.add_consumer("B", {"Orders": ("amount > 100", "SQL92")}, post_subscription_when_pull=True)
    group.heartbeat("A")
    return group


def same_group(a: ConsumerGroup, b: ConsumerGroup) -> bool:
    return (a.to_dict() == b.to_dict() and a.allocate_strategy == b.allocate_strategy
            and {t: (s.sub_string, s.expression_type, s.sub_version, s.tags_set, s.code_set)
                 for t, s in a.effective_subscriptions.items()}
            == {t: (s.sub_string, s.expression_type, s.sub_version, s.tags_set, s.code_set)
                for t, s in b.effective_subscriptions.items()})


def test_to_dict_shape():
    group = sample_group()
    data = group.to_dict()
    assert data == {
        "group": "GID_orders", "messageModel": "CLUSTERING",
        "allocateStrategy": {"name": "MACHINE_ROOM_NEARBY", "inner": {"name": "AVG"}, **ROOMS},
        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
        "consumers": [
            {"clientId": "A", "subscriptions": {"Orders": "paid || shipped", "Refunds": "*"},
             "subVersion": group.consumer("A").sub_version},
            {"clientId": "B", "subscriptions": {"Orders": {"expression": "amount > 100", "type": "SQL92"}},
             "subVersion": group.consumer("B").sub_version, "postSubscriptionWhenPull": True}],
        "heartbeats": ["A", "B", "A"]}
    assert json.loads(json.dumps(data)) == data


def test_round_trip_through_dict_json_and_yaml(tmp_path):
    import yaml

    group = sample_group()
    assert same_group(ConsumerGroup.from_dict(group.to_dict()), group)
    (tmp_path / "g.json").write_text(json.dumps(group.to_dict()), encoding="utf-8")
    (tmp_path / "g.yaml").write_text(yaml.safe_dump(group.to_dict()), encoding="utf-8")
    for name in ("g.json", "g.yaml"):
        assert same_group(ConsumerGroup.from_file(tmp_path / name), group)
    plain = ConsumerGroup("G")
    plain.add_consumer("A", {"T": "*"})
    assert "heartbeats" not in plain.to_dict()                   # the default order is not written
    assert same_group(ConsumerGroup.from_dict(plain.to_dict()), plain)


def test_a_hand_written_yaml_file(tmp_path):
    path = tmp_path / "group.yml"
    path.write_text("""
group: GID_seed003
consumers:
  - clientId: A
    subscriptions: {SUBSCRIBE_TEST: tagA}
  - clientId: B
    subscriptions:
      SUBSCRIBE_TEST: tagB
""", encoding="utf-8")
    group = ConsumerGroup.from_file(path)
    assert (group.message_model, group.allocate_strategy.get_name()) == ("CLUSTERING", "AVG")
    assert group.consumer("A").sub_version < group.consumer("B").sub_version    # file order: B is later
    assert group.effective_subscriptions["SUBSCRIBE_TEST"].sub_string == "tagB"
    mqs = [MessageQueue("SUBSCRIBE_TEST", "broker-a", i) for i in range(4)]
    assert {c: [q.queue_id for q in qs] for c, qs in group.allocate("SUBSCRIBE_TEST", mqs).items()} == {
        "A": [0, 1], "B": [2, 3]}


def test_explicit_sub_versions_decide_over_file_order():
    group = ConsumerGroup.from_dict({"group": "G", "consumers": [
        {"clientId": "A", "subscriptions": {"T": "a"}, "subVersion": 9},
        {"clientId": "B", "subscriptions": {"T": "b"}, "subVersion": 3}]})
    assert group.effective_subscriptions["T"].sub_string == "a"


BASE = {"group": "G", "consumers": [{"clientId": "A", "subscriptions": {"T": "*"}},
                                    {"clientId": "B", "subscriptions": {"T": "*"}}]}


def with_consumer(index: int, **changes) -> dict:
    consumers = [dict(c) for c in BASE["consumers"]]
    consumers[index].update(changes)
    return {**BASE, "consumers": consumers}


@pytest.mark.parametrize("data, message", [
    ([], "expected a mapping with group and consumers, got list"),
    ({"consumers": []}, "group: missing"),
    ({"group": "a b"}, "group: The specified group"),
    ({**BASE, "consumer": []}, "unknown key 'consumer' (did you mean 'consumers'?)"),
    ({**BASE, "messageModel": "clustering"}, "messageModel: must be one of CLUSTERING, BROADCASTING"),
    ({**BASE, "consumeFromWhere": 1}, "consumeFromWhere: must be one of"),
    ({**BASE, "allocateStrategy": {"name": "CONSISTENT_HASH", "virtualNodeCnt": -1}},
     "allocateStrategy: illegal virtualNodeCnt :-1"),
    ({**BASE, "consumers": {"A": {}}}, "consumers: expected a list"),
    ({**BASE, "consumers": ["A"]}, "consumers[0]: expected a mapping"),
    (with_consumer(1, clientId=""), "consumers[1]: clientId: expected a non-empty string"),
    (with_consumer(1, clientId="A"), "consumers[1] (clientId 'A'): clientId: listed twice"),
    (with_consumer(1, subscription={}), "consumers[1] (clientId 'B'): unknown key 'subscription' "
                                        "(did you mean 'subscriptions'?)"),
    (with_consumer(1, subscriptions=["T"]), "consumers[1] (clientId 'B'): subscriptions: expected a mapping"),
    (with_consumer(1, subscriptions={"T": {"expression": "", "type": "SQL92"}}),
     "consumers[1] (clientId 'B'): subscriptions.T: Expression can't be null! SQL92"),
    (with_consumer(1, subscriptions={"T": {"expression": "a", "type": "sql"}}),
     "consumers[1] (clientId 'B'): subscriptions.T: the expression type must be TAG or SQL92"),
    (with_consumer(1, subscriptions={"T": None}), "consumers[1] (clientId 'B'): subscriptions.T: expected a TAG"),
    (with_consumer(1, subscriptions={"a/b": "*"}),
     "consumers[1] (clientId 'B'): subscriptions.a/b: The specified topic"),
    (with_consumer(0, subVersion="7"), "consumers[0] (clientId 'A'): subVersion: expected an integer"),
    (with_consumer(0, postSubscriptionWhenPull="yes"), "consumers[0] (clientId 'A'): postSubscriptionWhenPull"),
    (with_consumer(1, subscriptions={"T": {"expression": "a", "subVersion": "1"}}),
     "consumers[1] (clientId 'B'): subscriptions.T: subVersion: expected an integer"),
    (with_consumer(1, subscriptions={"T": {"expression": "a", "version": 1}}),
     "consumers[1] (clientId 'B'): subscriptions.T: a subscription is"),
    (with_consumer(0, unregistered=1), "consumers[0] (clientId 'A'): unregistered: expected true or false"),
    ({**BASE, "consumers": [{**c, "unregistered": True} for c in BASE["consumers"]]},
     "consumers: every consumer is unregistered"),
    ({**BASE, "heartbeats": ["A", "C"]}, "heartbeats[1]: 'C' is not a consumer of the group"),
    ({**BASE, "heartbeats": ["A"]}, "heartbeats: consumers ['B'] never heartbeat"),
])
def test_bad_documents_name_the_source_consumer_and_field(data, message):
    with pytest.raises(GroupFileError) as info:
        ConsumerGroup.from_dict(data, source="groups/orders.yaml")
    assert str(info.value).startswith("groups/orders.yaml: ") and message in str(info.value), str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("name, text, message", [
    ("g.json", '{"group": "G",}', "g.json: line 1 column 15: Expecting property name"),
    ("g.yaml", "group: G\nconsumers:\n  - clientId: A\n    subscriptions: {T: *}\n",
     'line 4 column 25: expected alphabetic or numeric character, but found \'}\' (YAML reads an unquoted * '
     'as an alias: write "*")'),
    ("g.yaml", "", "g.yaml: expected a mapping with group and consumers, got NoneType"),
    ("g.toml", "group = 'G'", "g.toml: a group file ends in .json, .yaml or .yml"),
    ("g.yaml", "group: G\nconsumers:\n  - clientId: A\n    subscriptions: {T: 'a ||| b', U: '||'}\n",
     "g.yaml: consumers[0] (clientId 'A'): subscriptions.U: subString split error"),
])
def test_bad_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GroupFileError) as info:
        ConsumerGroup.from_file(path)
    assert message in str(info.value) and str(path) in str(info.value), str(info.value)


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(GroupFileError, match="cannot read: No such file"):
        ConsumerGroup.from_file(tmp_path / "absent.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe{")
    with pytest.raises(GroupFileError, match="not UTF-8"):
        ConsumerGroup.from_file(tmp_path / "bin.json")


def test_a_topic_may_carry_its_own_sub_version_and_round_trips():
    group = ConsumerGroup.from_dict({"group": "G", "consumers": [
        {"clientId": "A", "subscriptions": {"T": "a", "U": {"expression": "x > 1", "type": "SQL92",
                                                            "subVersion": 12}}, "subVersion": 10}]})
    subs = group.consumer("A").subscriptions
    assert (subs["T"].sub_version, subs["U"].sub_version, subs["U"].expression_type) == (10, 12, "SQL92")
    assert group.to_dict()["consumers"][0]["subscriptions"] == {
        "T": "a", "U": {"expression": "x > 1", "type": "SQL92", "subVersion": 12}}
    assert same_group(ConsumerGroup.from_dict(group.to_dict()), group)


def test_a_consumer_that_left_round_trips_as_unregistered():
    group = sample_group()
    group.remove_consumer("B")
    data = group.to_dict()
    assert data["consumers"][1]["unregistered"] is True and data["heartbeats"] == ["A", "B", "A"]
    back = ConsumerGroup.from_dict(data)
    assert same_group(back, group) and back.departed == ["B"] and back.consumer_ids() == ["A"]
