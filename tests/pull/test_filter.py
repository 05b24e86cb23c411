"""ExpressionMessageFilter (SEMANTICS §7) and ExpressionForRetryMessageFilter (§8), in Python
against the oracle's cases, and their Column forms against the Python ones."""
from __future__ import annotations

import pytest
from pyspark.sql import types as T

from ..conftest import conformance
from rocketfilter.bloom import BloomFilter, BloomFilterData
from rocketfilter.pull.filter import (RETRY_FILTER_NPE, CqExtUnit, ExpressionForRetryMessageFilter,
                                      ExpressionMessageFilter, RetryFilterError, parse_group)
from rocketfilter.store.bitmap import calc_bitmap
from rocketfilter.store.filter_data import ConsumerFilterManager
from rocketfilter.tags import build_subscription, java_hash

BORN = 1000


def manager() -> ConsumerFilterManager:
    return ConsumerFilterManager(clock=lambda: BORN)


def sql_filter(m: ConsumerFilterManager, topic: str, group: str, cls=ExpressionMessageFilter):
    return cls(build_subscription(topic, m.get(topic, group).expression, "SQL92"), m.get(topic, group), m)


# -- TAG branch --------------------------------------------------------------------------------
@pytest.mark.parametrize("sub_string, tags, want", [
    ("TagA || TagB", "TagA", True), ("TagA || TagB", "TagC", False), ("Aa", "BB", True),  # collision passes
    ("*", "x", True), (" * ", "*", True), ("   ", "x", False), ("f5a5a608", None, True),   # untagged = code 0
    ("TagA", None, False),
])
def test_tag_branch(sub_string, tags, want):
    f = ExpressionMessageFilter(build_subscription("T", sub_string), None, BloomFilter())
    code = java_hash(tags) if tags else 0
    assert f.is_matched_by_consume_queue(code, None) is want
    assert f.is_matched_by_consume_queue(None, None) is True       # unreadable slot
    assert f.is_matched_by_commit_log({"TAGS": tags}) is True


def test_no_subscription_or_class_filter_matches_everything():
    f = ExpressionMessageFilter(None)
    assert f.is_matched_by_consume_queue(5, None) and f.is_matched_by_commit_log(None)
    sub = build_subscription("T", "a > 1", "SQL92")
    sub.class_filter_mode = True
    f = ExpressionMessageFilter(sub, None, None)
    assert f.is_matched_by_consume_queue(5, CqExtUnit(5, 2, b"\0")) and f.is_matched_by_commit_log({"a": "0"})


# -- SQL92: the oracle's bitmap scenarios -------------------------------------------------------
@pytest.mark.parametrize("scenario", conformance.params("bloom_cases.json", "bitmap_scenarios"))
def test_bitmap_scenario_cq_hit_and_commitlog_match(scenario):
    m = manager()
    topic = scenario["topic"]
    for group, registered in zip(scenario["groups"], scenario["registered"]):
        assert m.register(topic, group["group"], group["expr"], "SQL92", 1) is registered
    bitmap = calc_bitmap(m.filter_datas(topic), m.bloom, scenario["props"])
    assert (bitmap.hex() if bitmap is not None else None) == scenario["bitmap_hex"]
    ext = CqExtUnit(0, BORN + 1, bitmap)
    for group in scenario["groups"]:
        data = m.get(topic, group["group"])
        f = ExpressionMessageFilter(build_subscription(topic, group["expr"], "SQL92"), data, m)
        got = (f.is_matched_by_consume_queue(0, ext), f.is_matched_by_commit_log(scenario["props"]))
        assert got == (group["cq_hit"], group["commitlog_match"]), (scenario["id"], group)


def test_sql92_commit_log_against_the_oracle(conformance):
    m = manager()
    for case in conformance.jsonl("sql92_cases.jsonl"):
        if "props" not in case:  # typed properties: not what a broker sees
            continue
        data = m.build("T", "G", case["expr"], "SQL92", 1)
        assert (data is not None) is case["compiled"], case["id"]
        if data is None:
            continue
        f = ExpressionMessageFilter(build_subscription("T", case["expr"], "SQL92"), data, m)
        assert f.is_matched_by_commit_log(case["props"]) is case["matched"], case["id"]


def test_consume_queue_check_only_rejects_what_the_bitmap_proves():
    m = manager()
    m.register("T", "G", "a > 1", "SQL92", 1)
    f = sql_filter(m, "T", "G")
    zeros = bytes(14)
    assert f.bloom_data_valid
    assert f.is_matched_by_consume_queue(0, CqExtUnit(0, BORN + 1, zeros)) is False
    assert f.is_matched_by_consume_queue(0, None) is True                       # no ext unit
    assert f.is_matched_by_consume_queue(0, CqExtUnit(0, BORN, zeros)) is True  # stored before the filter
    assert f.is_matched_by_consume_queue(0, CqExtUnit(0, BORN + 1, None)) is True
    assert f.is_matched_by_consume_queue(0, CqExtUnit(0, BORN + 1, b"")) is True
    assert f.is_matched_by_consume_queue(0, CqExtUnit(0, BORN + 1, bytes(8))) is True  # wrong length
    other = ExpressionMessageFilter(f.subscription_data, f.consumer_filter_data, BloomFilter(20, 64))
    assert not other.bloom_data_valid and other.is_matched_by_consume_queue(0, CqExtUnit(0, BORN + 1, zeros))
    no_bloom = m.build("T", "G", "a > 1", "SQL92", 1)
    f = ExpressionMessageFilter(f.subscription_data, no_bloom, m)
    assert f.is_matched_by_consume_queue(0, CqExtUnit(0, BORN + 1, zeros)) is True
    assert f.is_matched_by_commit_log({"a": "0"}) is False                      # the selector still runs
    f = ExpressionMessageFilter(f.subscription_data, None, m)                  # subscription-flag quirk
    assert f.is_matched_by_consume_queue(0, CqExtUnit(0, BORN + 1, zeros)) and f.is_matched_by_commit_log({"a": "0"})


# -- retry filter ------------------------------------------------------------------------------
def test_parse_group():
    assert [parse_group(t) for t in ("%RETRY%G", "%RETRY%G+T", "%RETRY%G_T", "%RETRY%G+", "%RETRY%a+b+c")] == [
        "G", "G", "G_T", "G+", "a+b+c"]


@pytest.mark.parametrize("case", conformance.params("extra_cases.json", "retry"))
def test_retry_filter_cases(case):
    req = case["req"]
    m = manager()
    assert m.register(req["real_topic"], req["group"], req["expr"], "SQL92", 1) is case["registered_real"]
    m.register(req["sub_topic"], req["group"], req["sub_expr"], "SQL92", 1)
    f = ExpressionForRetryMessageFilter(build_subscription(req["sub_topic"], req["sub_expr"], "SQL92"),
                                        m.get(req["sub_topic"], req["group"]), m)
    if "matched_error" in case:
        with pytest.raises(RetryFilterError, match="RETRY_TOPIC"):
            f.is_matched_by_commit_log(req["props"])
    else:
        assert f.is_matched_by_commit_log(req["props"]) is case["matched"]


def test_retry_filter_edges():
    m = manager()
    m.register("T", "G", "a > 1", "SQL92", 1)
    tag = ExpressionForRetryMessageFilter(build_subscription("%RETRY%G", "*"), None, m)
    assert tag.is_matched_by_commit_log(None) is True                  # TAG retry subscriptions: not filtered
    f = ExpressionForRetryMessageFilter(build_subscription("%RETRY%G", "a > 9", "SQL92"), None, m)
    with pytest.raises(RetryFilterError):
        f.is_matched_by_commit_log(None)
    assert f.is_matched_by_commit_log({"RETRY_TOPIC": "T", "a": "2"}) is True
    with pytest.raises(TypeError):
        ExpressionForRetryMessageFilter(f.subscription_data, None, BloomFilter())


# -- Column forms vs Python ----------------------------------------------------------------------
ROW_SCHEMA = T.StructType([
    T.StructField("tags_code", T.LongType()), T.StructField("filter_bitmap", T.BinaryType()),
    T.StructField("store_timestamp", T.LongType()),
    T.StructField("properties", T.MapType(T.StringType(), T.StringType())),
])


def _rows(m: ConsumerFilterManager, topic: str):
    """Messages covering every branch: tags, collisions, bitmaps present/absent/short, old ones."""
    rows = []
    for i, props in enumerate([{"a": "5"}, {"a": "0"}, {"a": "x"}, {}, {"a": "3", "b": "1"},
                               {"TAGS": "Aa"}, {"TAGS": "BB"}, {"TAGS": "TagA", "a": "9"}]):
        bitmap = calc_bitmap(m.filter_datas(topic), m.bloom, props)
        code = java_hash(props["TAGS"]) if "TAGS" in props else 0
        rows.append((code, bitmap, BORN + 1 + i, props))
        rows.append((code, bitmap, BORN - i, props))                     # older than the filter
        rows.append((None if i % 2 else code, None, None, props))        # no ext unit
        rows.append((code, bitmap[:5] if bitmap else b"\x01", BORN + 5, props))  # wrong length
        rows.append((code, bytes(len(bitmap or b"")) or None, BORN + 5, props))   # all-zero bitmap
    return rows


def _python(f, row):
    code, bitmap, stored, props = row
    ext = None if stored is None else CqExtUnit(code, stored, bitmap)
    return f.is_matched_by_consume_queue(code, ext), f.is_matched_by_commit_log(props)


def test_columns_match_python(spark):
    m = manager()
    for group, expr in [("G1", "a > 1"), ("G2", "a < 1"), ("G3", "b = 1"), ("G4", "a IS NULL")]:
        m.register("T", group, expr, "SQL92", 1)
    rows = _rows(m, "T")
    df = spark.createDataFrame(rows, ROW_SCHEMA)
    filters = [sql_filter(m, "T", g) for g in ("G1", "G2", "G3", "G4")] + [
        ExpressionMessageFilter(build_subscription("T", s), None, m) for s in ("Aa", "TagA || TagB", "*", "   ")] + [
        ExpressionMessageFilter(build_subscription("T", "a > 1", "SQL92"), m.build("T", "G1", "a > 1", "SQL92", 1), m),
        ExpressionMessageFilter(build_subscription("T", "a > 1", "SQL92"), None, m)]
    columns = []
    for i, f in enumerate(filters):
        columns += [f.consume_queue_column().alias(f"cq{i}"), f.commit_log_column().alias(f"cl{i}")]
    got = df.select(*columns).collect()
    for row, out in zip(rows, got):
        for i, f in enumerate(filters):
            assert (out[f"cq{i}"], out[f"cl{i}"]) == _python(f, row), (repr(f), row)


def test_retry_commit_log_column(spark):
    m = manager()
    m.register("T", "G", "a > 1", "SQL92", 1)
    m.register("U", "G", "a < 1", "SQL92", 1)
    f = ExpressionForRetryMessageFilter(build_subscription("%RETRY%G", "a > 9", "SQL92"), None, m)
    rows = [({"RETRY_TOPIC": "T", "a": "5"},), ({"RETRY_TOPIC": "T", "a": "0"},), ({"RETRY_TOPIC": "U", "a": "0"},),
            ({"RETRY_TOPIC": "Other", "a": "0"},)]
    schema = T.StructType([ROW_SCHEMA["properties"]])
    got = [r[0] for r in spark.createDataFrame(rows, schema).select(f.commit_log_column()).collect()]
    assert got == [f.is_matched_by_commit_log(props) for (props,) in rows] == [True, False, True, True]
    # Not a retry topic: the subscription's own filter data.
    plain = ExpressionForRetryMessageFilter(build_subscription("T", "a > 1", "SQL92"), m.get("T", "G"), m)
    got = [r[0] for r in spark.createDataFrame(rows, schema).select(plain.commit_log_column()).collect()]
    assert got == [True, False, False, False]
    with pytest.raises(Exception, match=RETRY_FILTER_NPE):
        spark.createDataFrame([({"a": "5"},)], schema).select(f.commit_log_column()).collect()


def test_invalid_bloom_positions_make_the_column_match():
    m = manager()
    m.register("T", "G", "a > 1", "SQL92", 1)
    data = m.get("T", "G")
    data.bloom_filter_data = BloomFilterData(bit_pos=[1, 2, 3], bit_num=112)
    f = sql_filter(m, "T", "G")
    assert f.bloom_data_valid
    assert f.is_matched_by_consume_queue(0, CqExtUnit(0, BORN + 1, bytes(14))) is False


# -- ConsumerFilterManager: registration versions, life cycle, persistence (§6) -----------------
class Clock:
    def __init__(self, now: int = 10_000):
        self.now = now

    def __call__(self) -> int:
        return self.now


def test_register_version_rules():
    clock = Clock()
    m = ConsumerFilterManager(clock=clock)
    assert m.register("T", "G", "a > 1", "TAG", 5) is False and m.register("T", "G", "", "SQL92", 5) is False
    assert m.register("T", "G", "a >", "SQL92", 5) is False and m.get("T", "G") is None
    assert m.register("T", "G", "a > 1", "sql92", 5) is False                  # type names are case-sensitive
    assert m.register("T", "G", "a > 1", "SQL92", 5) is True
    first = m.get("T", "G")
    assert (first.born_time, first.dead_time, first.client_version) == (10_000, 0, 5)
    clock.now += 1
    assert m.register("T", "G", "a > 2", "SQL92", 5) is False                  # equal version: ignored
    assert m.register("T", "G", "a > 2", "SQL92", 4) is False                  # lower: ignored
    assert m.get("T", "G").expression == "a > 1"
    assert m.register("T", "G", "a > 1", "SQL92", 6) is True                   # higher, unchanged: bumped
    assert m.get("T", "G") is first and first.client_version == 6
    clock.now += 1
    assert m.register("T", "G", "a > 2", "SQL92", 7) is True                   # higher, changed: rebuilt
    second = m.get("T", "G")
    assert (second.expression, second.born_time, second.client_version) == ("a > 2", 10_002, 7)
    assert m.register("T", "G", "a >", "SQL92", 8) is False and m.get("T", "G") is None  # old one removed


def test_dead_data_revives_on_equal_version_and_is_cleaned_after_the_span():
    clock = Clock()
    m = ConsumerFilterManager(clock=clock)
    m.register("T", "G", "a > 1", "SQL92", 5)
    clock.now += 10
    m.unregister("G")
    data = m.get("T", "G")
    assert data.is_dead() and data.dead_time == 10_010 and m.filter_datas("T") == [data]
    assert m.register("T", "G", "a > 1", "SQL92", 5) is True and not data.is_dead()
    m.unregister("G")
    clock.now += 86_400_000 - 1
    m.clean()
    assert m.get("T", "G") is data
    clock.now += 1
    m.clean()
    assert m.get("T", "G") is None and m.topics() == []
    m.register("T", "G", "a > 1", "SQL92", 9)
    assert m.register("T", "G", "a > 1", "SQL92", 9) is False                  # equal version, alive
    m.unregister("G")
    assert m.register("T", "G", "a > 1", "SQL92", 10) is True                  # higher version revives too
    assert not m.get("T", "G").is_dead()


def test_register_group_kills_topics_left_out():
    clock = Clock()
    m = ConsumerFilterManager(clock=clock)
    m.register_group("G", [build_subscription("T", "a > 1", "SQL92"), build_subscription("U", "b = 1", "SQL92"),
                           build_subscription("V", "TagA")])
    assert sorted(m.topics()) == ["T", "U"] and [d.topic for d in m.get_by_group("G")]
    m.register_group("G", [build_subscription("T", "a > 1", "SQL92")])
    assert not m.get("T", "G").is_dead() and m.get("U", "G").is_dead()


def test_bloom_comes_from_the_broker_config():
    from rocketfilter.config import BrokerConfig, MessageStoreConfig

    store_config = MessageStoreConfig()
    m = ConsumerFilterManager(BrokerConfig(max_error_rate_of_bloom_filter=10, expect_consumer_num_use_filter=20),
                              store_config=store_config)
    assert (m.bloom.k, m.bloom.m, store_config.bit_map_length_consume_queue_ext) == (4, 96, 96)
    assert ConsumerFilterManager().bloom.m == 112


def test_persistence_round_trip_makes_everything_dead():
    import json

    clock = Clock()
    saved = {}
    m = ConsumerFilterManager(clock=clock, read_text=lambda: saved.get("text"),
                              write_text=lambda text: saved.__setitem__("text", text))
    m.register("T", "G1", "a > 1", "SQL92", 5)
    clock.now = 50_000
    m.register("T", "G2", "b = 1", "SQL92", 6)
    body = json.loads(saved["text"])
    g1 = body["filterDataByTopic"]["T"]["groupFilterData"]["G1"]
    assert g1["bloomFilterData"] == {"bitPos": [48, 65, 29], "bitNum": 112} and g1["expressionType"] == "SQL92"
    clock.now = 60_000
    loaded = ConsumerFilterManager(clock=clock, read_text=lambda: saved["text"])
    d1, d2 = loaded.get("T", "G1"), loaded.get("T", "G2")
    assert (d1.dead_time, d2.dead_time) == (30_000, 50_000)      # now - 30 s, or bornTime if later
    assert d1.is_dead() and d2.is_dead() and d1.compiled.matches({"a": "5"})
    assert d1.bloom_filter_data == m.get("T", "G1").bloom_filter_data
    # A different bloom filter ignores the whole file.
    from rocketfilter.config import BrokerConfig

    other = ConsumerFilterManager(BrokerConfig(expect_consumer_num_use_filter=64), read_text=lambda: saved["text"])
    assert other.topics() == []
    assert ConsumerFilterManager(read_text=lambda: None).topics() == []
    with pytest.raises(ValueError, match="consumerFilter.json"):
        ConsumerFilterManager(read_text=lambda: "{not json")


def test_for_store_keeps_consumer_filter_json_with_the_store():
    class Store:
        def __init__(self):
            from rocketfilter.config import BrokerConfig, MessageStoreConfig

            self.broker_config, self.config, self.files = BrokerConfig(), MessageStoreConfig(), {}

        def read_config(self, name):
            return self.files.get(name)

        def write_config(self, name, text):
            self.files[name] = text

    store = Store()
    m = ConsumerFilterManager.for_store(store)
    m.register("T", "G", "a > 1", "SQL92", 1)
    assert "consumerFilter.json" in store.files and store.config.bit_map_length_consume_queue_ext == 112
    assert ConsumerFilterManager.for_store(store).get("T", "G").is_dead()
