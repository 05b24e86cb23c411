"""read_messages equals the union of pull_sequence's deliveries (after the client's exact tag
re-check) for random subscriptions and offset ranges, through the properties map, promoted
columns and exact subscription bits alike."""
from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

import rocketfilter
from rocketfilter.config import MessageStoreConfig
from rocketfilter.pull.filter import ExpressionMessageFilter
from rocketfilter.pull.sequence import pull_sequence
from rocketfilter.store import MessageStore
from rocketfilter.tags import build_subscription, is_tag_type
from rocketfilter.tag_columns import tag_exact_predicate

TOPIC = "Bulk"
QUEUES = 3
TAGS = ["TagA", "TagB", "Aa", "BB", None]          # "Aa" and "BB" share a hash code
A_VALUES = ["1", "5", "12", "x", "-3", "7.5", "040", None]
B_VALUES = ["true", "TRUE", "no", "", None]
SUBSCRIPTIONS = [("TagA", "TAG"), ("TagA || BB", "TAG"), ("Aa", "TAG"), ("*", "TAG"),
                 ("TagB || TagC", "TAG"), ("a > 4", "SQL92"),
                 ("a BETWEEN 2 AND 12 AND b = TRUE", "SQL92"), ("a IS NULL OR b <> 'no'", "SQL92"),
                 ("NOT (a >= 5.0)", "SQL92")]


def _message(rnd: random.Random) -> dict:
    props = {k: v for k, v in (("a", rnd.choice(A_VALUES)), ("b", rnd.choice(B_VALUES)))
             if v is not None}
    return {"topic": TOPIC, "tags": rnd.choice(TAGS), "properties": props, "body": "x" * rnd.randint(0, 30)}


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    """Three puts (several CommitLog files), ``a`` promoted, small ConsumeQueue files and a
    small in-memory threshold so the pulls meet their limits."""
    s = MessageStore.open(str(tmp_path_factory.mktemp("bulk") / "store"), spark,
                          MessageStoreConfig(promoted_properties="a", consume_queue_rows_per_file=100,
                                             mapped_file_size_consume_queue=70 * 20,
                                             total_physical_memory=100_000))
    s.create_topic(TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    rnd = random.Random(20260613)
    for _ in range(3):
        s.put_messages([_message(rnd) for _ in range(110)])
    return s


def _filter(store, subscription, expression_type):
    sub = build_subscription(TOPIC, subscription, expression_type)
    if is_tag_type(expression_type):
        return sub, ExpressionMessageFilter(sub)
    data = store.filter_manager.build(TOPIC, "G", subscription, expression_type, 1)
    return sub, ExpressionMessageFilter(sub, data)


def _delivered(store, subscription, expression_type, start, end, max_msg_nums):
    """The union of pull_sequence's deliveries in [start, end), after the client's re-check."""
    sub, message_filter = _filter(store, subscription, expression_type)
    entries = pull_sequence(store, TOPIC, message_filter, max_msg_nums=max_msg_nums,
                            start_offsets=start, end_offsets=end)
    tags = store.commitlog.read(store.spark).select("commitlog_offset", "tags")
    rows = (entries.join(tags, "commitlog_offset").where(tag_exact_predicate(sub, "tags"))
            .select("queue_id", "queue_offset").collect())
    stop = lambda q: (end or {}).get(q, store.get_max_offset_in_queue(TOPIC, q))  # noqa: E731
    return {(r.queue_id, r.queue_offset) for r in rows if r.queue_offset < stop(r.queue_id)}


def _read(store, subscription, expression_type, **kwargs):
    df = rocketfilter.read_messages(store, TOPIC, subscription, expression_type, **kwargs)
    return [(r.queue_id, r.queue_offset) for r in df.select("queue_id", "queue_offset").collect()]


def _ranges(rnd: random.Random):
    def some():
        if rnd.random() < 0.3:
            return None
        return {q: rnd.randint(0, 125) for q in range(QUEUES) if rnd.random() < 0.8}
    return some(), some()


@pytest.mark.parametrize("seed", range(6))
def test_read_messages_is_what_the_pulls_deliver(store, seed):
    rnd = random.Random(seed)
    subscription, expression_type = SUBSCRIPTIONS[seed] if seed < 4 else rnd.choice(SUBSCRIPTIONS[4:])
    start, end = _ranges(rnd)
    want = _delivered(store, subscription, expression_type, start, end, rnd.choice([1, 8, 32]))
    for promoted in (True, False):
        got = _read(store, subscription, expression_type, start=start, end=end, promoted=promoted)
        assert len(got) == len(set(got)), "a message read twice"
        assert set(got) == want, (subscription, start, end, promoted)


def test_every_sql92_subscription_through_the_map_and_the_promoted_column(store):
    assert store.promoted_properties() == {"a": "prop_a"}
    for subscription, expression_type in SUBSCRIPTIONS:
        if expression_type == "SQL92":
            assert sorted(_read(store, subscription, "SQL92")) == \
                sorted(_read(store, subscription, "SQL92", promoted=False)), subscription


def test_columns_are_the_message_and_only_allowed_files_are_read(store):
    df = rocketfilter.read_messages(store, TOPIC, "*", start={0: 90}, end={0: 100, 1: 0, 2: 0})
    from rocketfilter.store.schema import COMMITLOG_SCHEMA

    assert df.columns == COMMITLOG_SCHEMA.fieldNames()
    rows = df.collect()
    assert sorted((r.queue_id, r.queue_offset) for r in rows) == [(0, q) for q in range(90, 100)]
    assert len(df.inputFiles()) < len(store.commitlog.files())   # the first put's file is skipped


def test_bad_input_is_refused_clearly(store):
    with pytest.raises(ValueError, match="does not exist"):
        rocketfilter.read_messages(store, "NoSuchTopic", "*")
    with pytest.raises(ValueError, match="queues 0..2"):
        rocketfilter.read_messages(store, TOPIC, "*", start={7: 0})
    with pytest.raises(ValueError, match=r"start\[0\] must be an offset"):
        rocketfilter.read_messages(store, TOPIC, "*", start={0: -1})
    with pytest.raises(ValueError):
        rocketfilter.read_messages(store, TOPIC, "a >", "SQL92")
    assert rocketfilter.read_messages(store, TOPIC, "*", start={0: 500, 1: 500, 2: 500}).count() == 0


def test_bits_answer_like_the_selector(store):
    """A registered subscription's bits (after a backfill) give the same messages, and are used."""
    from rocketfilter.pull import bits

    for i, (subscription, expression_type) in enumerate(SUBSCRIPTIONS):
        store.register_subscription_bits(f"G{i}", TOPIC, subscription, expression_type, 1)
    store.backfill()
    for subscription, expression_type in SUBSCRIPTIONS:
        sub = build_subscription(TOPIC, subscription, expression_type)
        key = bits.subscription_key(sub)
        if key is not None:
            assert bits.usable(store, TOPIC, key, {0: 0, 1: 0, 2: 0}) is not None, subscription
        start = {0: 17, 2: 40}   # promoted=False: the bits decide, not the promoted column
        assert sorted(_read(store, subscription, expression_type, start=start, promoted=False)) == \
            sorted(_read(store, subscription, expression_type, start=start, promoted=False, bits=False)), \
            subscription
    plan = store.consumequeue.read(store.spark).agg(F.count("sub_bits")).first()[0]
    assert plan == store.consumequeue.read(store.spark).count()   # every entry has its bits


def _positions(df):
    return sorted((r.queue_id, r.queue_offset, r.commitlog_offset)
                  for r in df.select("queue_id", "queue_offset", "commitlog_offset").collect())


def test_read_consume_queue_is_read_messages_as_entries(store):
    """The entries of read_messages' rows, with and without bits; with a SQL92 subscription's
    bits, and for ``*``, no CommitLog file is read at all."""
    from rocketfilter.pull.read_consume_queue import ENTRY_COLUMNS

    for i, (subscription, expression_type) in enumerate(SUBSCRIPTIONS):
        store.register_subscription_bits(f"E{i}", TOPIC, subscription, expression_type, 1)
    store.backfill()
    commitlog = {f.path for f in store.commitlog.files()}
    for i, (subscription, expression_type) in enumerate(SUBSCRIPTIONS):
        # Whole queues (no range test) and a range, on alternate subscriptions.
        for start, end in ([(None, None), ({0: 17, 2: 40}, {1: 60})][i % 2],):
            want = _positions(rocketfilter.read_messages(store, TOPIC, subscription, expression_type,
                                                         start=start, end=end, bits=False))
            for bits in (True, False):
                df = rocketfilter.read_consume_queue(store, TOPIC, subscription, expression_type,
                                                     start=start, end=end, bits=bits)
                assert tuple(df.columns) == ENTRY_COLUMNS
                assert _positions(df) == want, (subscription, start, end, bits)
                cq_alone = (bits and expression_type == "SQL92") or subscription == "*"
                read = {p for p in df.inputFiles()}
                assert cq_alone == (not read & {p.replace("file://", "file:") for p in commitlog}
                                    and not read & commitlog), (subscription, bits, read)
    empty = rocketfilter.read_consume_queue(store, TOPIC, "a > 4", "SQL92", start={0: 500, 1: 500, 2: 500})
    assert empty.count() == 0 and tuple(empty.columns) == ENTRY_COLUMNS
    with pytest.raises(ValueError, match="does not exist"):
        rocketfilter.read_consume_queue(store, "NoSuchTopic", "*")
