"""Exact subscription bits: registration (subVersion rules), slots shared by equal decisions,
freed and moved on a new subVersion, computed by dispatch from the offset they start at,
backfilled for history, registered by heartbeats, and the ``rocketfilter backfill`` command."""
from __future__ import annotations

import argparse
import io

import pytest
from pyspark.sql import functions as F

from rocketfilter.config import BrokerConfig
from rocketfilter.jobs.maintenance import backfill_command
from rocketfilter.pull.broker import Broker
from rocketfilter.store import MessageStore
from rocketfilter.store import schema as S
from rocketfilter.store.sub_bits import decision_key, registrations

TOPIC = "Bits"


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("bits") / "store"), spark)
    s.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)
    s.put_messages([{"topic": TOPIC, "tags": "TagA" if i % 3 else "TagB", "properties": {"n": str(i)}}
                    for i in range(12)])
    return s


def _bits(store):
    rows = store.consumequeue.refresh().read(store.spark).orderBy("queue_id", "queue_offset")
    return [(r.queue_id, r.queue_offset, r[S.SUB_BITS]) for r in rows.collect()]


def test_registration_follows_sub_versions(store):
    assert S.SUB_BITS not in store.consumequeue.schema.fieldNames()   # nothing registered yet
    assert store.register_subscription_bits("G1", TOPIC, "n >= 6", "SQL92", sub_version=5)
    assert not store.register_subscription_bits("G1", TOPIC, "n < 6", "SQL92", sub_version=4)
    assert store.register_subscription_bits("G2", TOPIC, "n >= 6", "SQL92", sub_version=1)
    assert store.register_subscription_bits("G3", TOPIC, "TagB", sub_version=1)
    with pytest.raises(ValueError):
        store.register_subscription_bits("G4", TOPIC, "n >", "SQL92")
    assert registrations(store)[TOPIC]["G1"] == {"expressionType": "SQL92", "expression": "n >= 6",
                                                 "subVersion": 5}


def test_dispatch_computes_bits_from_where_the_slot_starts(store):
    ends = {q: hi for q, (_, hi) in store.consumequeue_state().queues[TOPIC].items()}
    store.put_messages([{"topic": TOPIC, "tags": "TagB", "properties": {"n": str(i)}} for i in (3, 7)])
    slots = store.consumequeue_state().bits[TOPIC]
    assert set(slots) == {decision_key("SQL92", "n >= 6"), decision_key("TAG", "TagB")}  # G1, G2 share
    assert all(v["from"] == ends for v in slots.values())
    sql, tag = slots["SQL92:n >= 6"]["slot"], slots[decision_key("TAG", "TagB")]["slot"]
    for q, offset, bits in _bits(store):
        if offset < ends[q]:
            assert bits is None          # dispatched before the slots existed
        else:                            # the two new messages: n=3 and n=7, both TagB
            assert bits is not None and bits >> tag & 1 == 1
    new = {bits >> sql & 1 for q, offset, bits in _bits(store) if offset >= ends[q]}
    assert new == {0, 1}


def test_backfill_covers_history_and_the_command_reports(store):
    out = io.StringIO()
    assert backfill_command(argparse.Namespace(store=store.uri, topic=None, master=None),
                            spark=store.spark, out=out) == 0
    assert f"backfilled {TOPIC}: 14 entries" in out.getvalue()
    slots = store.consumequeue_state().bits[TOPIC]
    assert all(v["from"] == {} for v in slots.values())
    sql, tag = slots["SQL92:n >= 6"]["slot"], slots[decision_key("TAG", "TagB")]["slot"]
    cl = {(r.queue_id, r.queue_offset): r for r in store.commitlog.read(store.spark).collect()}
    for q, offset, bits in _bits(store):
        message = cl[(q, offset)]
        assert bits >> sql & 1 == (int(message.properties["n"]) >= 6)
        assert bits >> tag & 1 == (message.tags == "TagB")


def test_a_new_expression_moves_the_group_and_frees_the_slot(store):
    old = store.consumequeue_state().bits[TOPIC]
    store.register_subscription_bits("G1", TOPIC, "n < 2", "SQL92", sub_version=6)
    store.register_subscription_bits("G2", TOPIC, "n < 2", "SQL92", sub_version=2)
    store.put_messages([{"topic": TOPIC, "properties": {"n": "1"}}])
    slots = store.consumequeue_state().bits[TOPIC]
    assert "SQL92:n >= 6" not in slots and "SQL92:n < 2" in slots
    assert slots["SQL92:n < 2"]["slot"] == old["SQL92:n >= 6"]["slot"]   # the freed slot, reused
    assert slots["SQL92:n < 2"]["from"] != {}                             # history not computed yet


def test_heartbeats_register_when_enabled(spark, tmp_path):
    s = MessageStore.open(str(tmp_path / "s"), spark)
    s.create_topic(TOPIC, read_queue_nums=1, write_queue_nums=1)
    Broker(s, BrokerConfig(enable_calc_subscription_bits=False)).register_consumer("Off", "c", [(TOPIC, "TagA")])
    assert registrations(s) == {}
    broker = Broker(s, BrokerConfig(enable_calc_subscription_bits=True))
    broker.register_consumer("On", "c", [(TOPIC, "n > 1", "SQL92")])
    broker.register_consumer("Bad", "c", [(TOPIC, "n >", "SQL92")])   # accepted, but no bits
    assert set(registrations(s)[TOPIC]) == {"On"}
    assert registrations(s)[TOPIC]["On"]["expression"] == "n > 1"
    assert s.consumequeue.read(spark).agg(F.count(F.lit(1))).first()[0] == 0


# Values where Integer.valueOf, Double.valueOf and Boolean.valueOf part ways (no empty value:
# the broker's property encoding drops it, so a message never holds one).
_EDGE_VALUES = ("5", "٥", "05", " 5", "5.5", "-0", "2147483648", "1732590000000", "user42", "TRUE",
                "NaN")
_MANY = ("a > 4", "a = 5", "a BETWEEN 1 AND 9", "a > 4.5", "a = TRUE", "a IS NULL", "a <> 'x' AND b < 3",
         "b = 5 OR a >= 5")


def test_many_sql92_slots_share_one_parse_per_property(spark, tmp_path):
    """With several SQL92 slots, dispatch parses each property once per row for all of them
    (sub_bits.shared_parses), and the bits are each selector's own decision."""
    from rocketfilter.selector import parse
    from rocketfilter.store.sub_bits import bits_column, shared_parses

    s = MessageStore.open(str(tmp_path / "store"), spark)
    s.create_topic(TOPIC, read_queue_nums=1, write_queue_nums=1)
    for i, expression in enumerate(_MANY):
        s.register_subscription_bits(f"G{i}", TOPIC, expression, "SQL92", 1)
    props = [{"a": a, "b": b} for a in _EDGE_VALUES for b in ("3", "5")] + [{"b": "5"}, {}]
    s.put_messages([{"topic": TOPIC, "tags": "T", "properties": p} for p in props])
    slots = s.consumequeue_state().bits[TOPIC]
    columns, mapping = shared_parses({TOPIC: slots})
    assert sorted(mapping) == ["a", "b"] and all(c.startswith("__rf_parsed") for c in columns)
    # The projection's expression: each comparison reads the shared columns, not its own parse.
    assert len(str(bits_column({TOPIC: slots}, mapping))) * 4 < len(str(bits_column({TOPIC: slots})))
    rows = s.consumequeue.refresh().read(spark).orderBy("queue_offset").collect()
    for expression in _MANY:
        bit = 1 << slots["SQL92:" + expression]["slot"]
        got = [bool(r[S.SUB_BITS] & bit) for r in rows]
        assert got == [parse(expression).matches(p) for p in props], expression
