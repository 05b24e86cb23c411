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
