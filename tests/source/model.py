"""What a consumer of a subscription receives, in plain Python, for the source's tests.

Written from the rules, not from the source's code: the broker's tag-code check and the client's
exact re-check (``rocketfilter.tags.delivered``), or the reference evaluator's decision on the
message's properties (``Selector.matches``), over the CommitLog rows of a topic read to Python.
"""
from __future__ import annotations

from typing import Dict, Iterable, Set, Tuple

from rocketfilter.selector import parse
from rocketfilter.tags import build_subscription, delivered

Key = Tuple[int, int]  # (queue_id, queue_offset)


def messages(store, topic: str) -> list:
    """Every CommitLog row of ``topic`` as a dict (small test stores only)."""
    rows = store.commitlog.read(store.spark, where=[("topic", "=", topic)]).collect()
    return [r.asDict() for r in rows]


def consumer_receives(rows: Iterable[dict], topic: str, sub_string: str, expression_type: str = "TAG",
                      ranges: Dict[int, Tuple[int, int]] = None) -> Set[Key]:
    """(queue_id, queue_offset) of the messages a consumer of the subscription receives, within
    ``ranges`` (``{queue: (start, end)}``; None: everything)."""
    if expression_type == "SQL92":
        selector = parse(sub_string)
        accept = lambda r: selector.matches(dict(r["properties"] or {}))  # noqa: E731
    else:
        sub = build_subscription(topic, sub_string)
        accept = lambda r: delivered(sub, r["tags"])  # noqa: E731
    out = set()
    for r in rows:
        if ranges is not None:
            start, end = ranges.get(r["queue_id"], (0, 0))
            if not start <= r["queue_offset"] < end:
                continue
        if accept(r):
            out.add((r["queue_id"], r["queue_offset"]))
    return out


def pull_sequence_receives(store, topic: str, sub_string: str, expression_type: str,
                           ranges: Dict[int, Tuple[int, int]]) -> Set[Key]:
    """The same from the store's own pull loop: ``pull_sequence`` over ``ranges`` (its last pull
    may run past an end: cut there), then the client's exact tag re-check."""
    from pyspark.sql import functions as F

    from rocketfilter.pull.filter import ExpressionMessageFilter
    from rocketfilter.pull.sequence import pull_sequence
    from rocketfilter.store.filter_data import ConsumerFilterManager
    from rocketfilter.tag_columns import tag_exact_predicate

    sub = build_subscription(topic, sub_string, expression_type)
    data = None
    if expression_type == "SQL92":
        data = ConsumerFilterManager(clock=lambda: 0).build(topic, "GID_model", sub_string, "SQL92", 1)
    entries = pull_sequence(store, topic, ExpressionMessageFilter(sub, data, None),
                            start_offsets={q: s for q, (s, _) in ranges.items()},
                            end_offsets={q: e for q, (_, e) in ranges.items()})
    tags = store.commitlog.read(store.spark, where=[("topic", "=", topic)]).select("commitlog_offset", "tags")
    rows = (entries.join(tags, "commitlog_offset").where(tag_exact_predicate(sub, F.col("tags")))
            .select("queue_id", "queue_offset").collect())
    return {(q, o) for q, o in rows if ranges[q][0] <= o < ranges[q][1]}
