"""``read_messages``: every message of a topic that a consumer with a subscription receives, in
bulk, without the pull loop's batches.

The pull loop (SEMANTICS §12) decides *when* a message is delivered, never *whether*: over a
queue range every entry the broker's filter passes and the CommitLog still holds is delivered by
some pull. So the delivered set is a filter:

* TAG: the client's exact re-check (``TAGS`` in the subscribed set). It implies the broker's
  tag-code check wherever the ConsumeQueue's code is ``hashCode(TAGS)``, which dispatch writes
  for every topic; the broker's ``SCHEDULE_TOPIC_XXXX`` keeps delivery times there instead, so
  that topic is read through its ConsumeQueue.
* SQL92: the compiled selector, on the promoted columns where the store has them.
* A SQL92 subscription that owns a slot of exact subscription bits over the whole range
  (:mod:`rocketfilter.store.sub_bits`) and reads a property that is not promoted: the
  ConsumeQueue's bit, then the CommitLog rows it selects (a broadcast semi-join); no property
  is read at all. Where every property it reads is promoted, the selector over those columns
  is cheaper than that join, so it is used instead.

Only the CommitLog files that the topic's and the queues' offset statistics allow are read.

>>> read_messages(store, "OrderEvents", "amount > 100", "SQL92").count()        # doctest: +SKIP
>>> read_messages(store, "OrderEvents", "TagA || TagB", start={0: 100}, end={0: 200})  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Tuple

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketfilter.store import schema as S
from rocketfilter.tags import build_subscription, check_expression_type, is_tag_type
from rocketfilter.tag_columns import tag_code_predicate, tag_exact_predicate

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
_OR_LIMIT = 16   # more queues than this: the range test is a map lookup, not an OR chain
BROADCAST_ENTRIES = 20_000_000   # ~160 MB of offsets at most in a broadcast hash

Ranges = Dict[int, Tuple[int, int]]


def resolve_range(store, topic: str, start: Optional[Mapping[int, int]],
                  end: Optional[Mapping[int, int]]) -> Ranges:
    """``{queue_id: (first, stop)}`` to read, ``first`` included and ``stop`` excluded.

    ``start`` and ``end`` map a queue id to a queue offset; a queue they leave out starts at
    its min offset and ends at its max offset (``maxOffsetInQueue``). Offsets outside the queue
    are clamped to it, as a consumer's pulls are (OFFSET_TOO_SMALL moves it to the min). Queues
    with nothing in range are left out. ValueError for anything but non-negative ints keyed by a
    queue id of the topic.
    """
    queues = store.consumequeue_state().queues.get(topic, {})
    config = store.topic_config(topic)
    width = max([config.read_queue_nums if config else 0] + [q + 1 for q in queues])
    for name, given in (("start", start), ("end", end)):
        if given is None:
            continue
        if not isinstance(given, Mapping):
            raise ValueError(f"read_messages: {name} must be a dict {{queue_id: offset}}, got {given!r:.80}")
        for q, offset in given.items():
            if isinstance(q, bool) or not isinstance(q, int) or not 0 <= q < width:
                raise ValueError(f"read_messages: {name}: topic {topic!r} has queues 0..{width - 1}, "
                                 f"not {q!r}")
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise ValueError(f"read_messages: {name}[{q}] must be an offset >= 0, got {offset!r}")
    out: Ranges = {}
    for q, (lo, hi) in sorted(queues.items()):
        first = max(lo, (start or {}).get(q, lo))
        stop = min(hi, (end or {}).get(q, hi))
        if first < stop:
            out[q] = (first, stop)
    return out


def _files(store, topic: str, ranges: Ranges) -> list:
    """The CommitLog files whose (topic, queue_id, queue_offset) statistics may hold a row of
    some queue's range; a file without statistics is kept."""
    lowest, highest = min(s for s, _ in ranges.values()), max(e for _, e in ranges.values())
    files = store.commitlog.files([("topic", "=", topic), ("queue_offset", ">=", lowest),
                                   ("queue_offset", "<", highest)])

    def may_hold(f) -> bool:
        q_lo, q_hi = f.min.get("queue_id"), f.max.get("queue_id")
        o_lo, o_hi = f.min.get("queue_offset"), f.max.get("queue_offset")
        return any((q_lo is None or q_lo <= q) and (q_hi is None or q <= q_hi)
                   and (o_hi is None or s <= o_hi) and (o_lo is None or o_lo < e)
                   for q, (s, e) in ranges.items())
    return [f for f in files if may_hold(f)]


def _range_column(ranges: Ranges) -> Column:
    """``queue_offset`` within its queue's range, as one Column."""
    qid, offset = F.col("queue_id"), F.col("queue_offset")
    if len(ranges) <= _OR_LIMIT:
        out = None
        for q, (s, e) in ranges.items():
            term = (qid == F.lit(q)) & (offset >= F.lit(s)) & (offset < F.lit(e))
            out = term if out is None else out | term
        return out
    firsts = F.create_map(*[F.lit(x) for q, (s, _) in ranges.items() for x in (q, s)])
    stops = F.create_map(*[F.lit(x) for q, (_, e) in ranges.items() for x in (q, e)])
    return F.coalesce((offset >= firsts[qid]) & (offset < stops[qid]), F.lit(False))


def _needs_range(store, topic: str, ranges: Ranges) -> bool:
    """Whether the CommitLog may hold rows of the topic outside ``ranges``: not when every
    queue is read from offset 0 to the CommitLog's own next offset."""
    written = store.commitlog_state().queues.get(topic, {})
    return (set(ranges) != set(written)
            or any(s != 0 or e != written[q] for q, (s, e) in ranges.items()))


def _commitlog(store, topic: str, ranges: Ranges) -> DataFrame:
    """The topic's CommitLog rows within ``ranges``, from the files statistics allow; the row
    tests are left out where the statistics prove them."""
    files = _files(store, topic, ranges)
    df = store.commitlog.read(store.spark, files=files)
    if not all(f.min.get("topic") == topic == f.max.get("topic") for f in files):
        df = df.where(F.col("topic") == F.lit(topic))
    if _needs_range(store, topic, ranges):
        df = df.where(_range_column(ranges))
    return df


def consume_queue_entries(store, topic: str, ranges: Ranges) -> DataFrame:
    """The topic's ConsumeQueue entries within ``ranges`` whose message the CommitLog still
    holds (retention removes a prefix); the range test is left out when every queue is read
    whole."""
    lowest = store.commitlog_state().min_commitlog_offset
    queues = store.consumequeue_state().queues.get(topic, {})
    entries = store.consumequeue.read(store.spark, where=[("topic", "=", topic)])
    if any(ranges.get(q) != (lo, hi) for q, (lo, hi) in queues.items()) or any(lo for lo, _ in queues.values()):
        entries = entries.where(_range_column(ranges))
    if lowest:
        entries = entries.where(F.col("commitlog_offset") >= F.lit(lowest))
    return entries


def _through_consume_queue(store, topic: str, ranges: Ranges, cq_match: Column,
                           rows: DataFrame) -> DataFrame:
    """``rows`` (CommitLog) restricted to the entries of ``ranges`` that ``cq_match`` passes.
    The entries' offsets are broadcast (a hash of longs) unless there may be more than
    ``BROADCAST_ENTRIES``."""
    entries = consume_queue_entries(store, topic, ranges).where(cq_match).select("commitlog_offset")
    if sum(e - s for s, e in ranges.values()) <= BROADCAST_ENTRIES:
        entries = F.broadcast(entries)
    return rows.join(entries, "commitlog_offset", "left_semi")


def checked_subscription(store, topic: str, subscription: str, expression_type: str):
    """``(SubscriptionData, Selector or None)`` for a read of ``topic``, or ValueError as
    :func:`read_messages` documents."""
    from rocketfilter.selector import parse

    check_expression_type(expression_type)
    sub = build_subscription(topic, subscription, expression_type)
    sql = not is_tag_type(sub.expression_type)
    selector = parse(subscription) if sql else None
    if sql and not store.broker_config.enable_property_filter:
        raise ValueError(f"The broker does not support consumer to filter message by {sub.expression_type} "
                         "(enablePropertyFilter=false)")
    if store.topic_config(topic) is None and not store.consumequeue_state().queues.get(topic):
        known = ", ".join(sorted(store.topics())) or "none"
        raise ValueError(f"topic {topic!r} does not exist in store {store.uri} (topics: {known})")
    return sub, selector


def read_messages(store, topic: str, subscription: str, expression_type: str = "TAG", *,
                  start: Optional[Mapping[int, int]] = None, end: Optional[Mapping[int, int]] = None,
                  promoted: bool = True, bits: bool = True) -> DataFrame:
    """Every message of ``topic`` a consumer subscribed with ``subscription`` (a TAG expression
    such as ``"TagA || TagB"`` or ``"*"``, or a SQL92 selector with ``expression_type="SQL92"``)
    receives from the store: the broker's filter and the client's exact tag re-check, over each
    queue's ``[start, end)`` (see :func:`resolve_range`). It equals the union of the messages
    :func:`rocketfilter.pull.sequence.pull_sequence` delivers over the same offsets, after the
    client's re-check, without the pull batches.

    Columns: the CommitLog row (the MessageExt fields of docs/storage.md). ``promoted=False``
    and ``bits=False`` read the properties map instead of promoted columns and bits, for
    comparisons; the answer is the same. Raises ValueError for an unknown topic, a subscription
    RocketMQ rejects (a tag list it cannot split, a selector that does not compile) and SQL92
    when ``enablePropertyFilter`` is off.

    >>> read_messages(store, "OrderEvents", "TagA").select("queue_id", "msg_id").show()  # doctest: +SKIP
    """
    from rocketfilter.pull.bits import bit, subscription_key, usable

    sub, selector = checked_subscription(store, topic, subscription, expression_type)
    sql = selector is not None
    ranges = resolve_range(store, topic, start, end)
    if not ranges:
        return store.spark.createDataFrame([], S.COMMITLOG_SCHEMA)
    store.check_files(S.COMMITLOG, S.CONSUMEQUEUE)  # a lazy result: catch lost files now
    columns = S.COMMITLOG_SCHEMA.fieldNames()
    rows = _commitlog(store, topic, ranges)
    if sql:
        mapping = store.promoted_properties() if promoted else {}
        # Bits replace the selector, but their join back to the CommitLog costs more than a
        # selector over promoted columns (bench/bulk_filter.py): bits only when the map is read.
        slot = usable(store, topic, subscription_key(sub), {q: s for q, (s, _) in ranges.items()}) \
            if bits and not all(p in mapping for p in selector.properties) else None
        if slot is not None:
            return _through_consume_queue(store, topic, ranges, bit(slot), rows).select(*columns)
        return rows.where(selector.to_column("properties", promoted=mapping)).select(*columns)
    exact = rows.where(tag_exact_predicate(sub, "tags"))
    if topic == SCHEDULE_TOPIC and not sub.is_sub_all:
        exact = _through_consume_queue(store, topic, ranges, tag_code_predicate(sub), exact)
    return exact.select(*columns)
