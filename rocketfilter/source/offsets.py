"""Queue offsets of the ``rocketmq`` source: where reads start and end, the streaming offset a
checkpoint keeps, ``maxOffsetsPerTrigger``, and offsets already expired by retention.

A streaming offset is ``{"topic": {"0": 42, "1": 40}}``: for each queue, the next queue offset to
read (what a consumer group commits). Keys are sorted by queue id, so equal offsets are equal
JSON, as Spark compares them.
"""
from __future__ import annotations

import logging
from typing import Dict, Mapping, Optional, Tuple

from rocketfilter.offsets_spec import resolve_offsets, topic_queues

log = logging.getLogger(__name__)

Offsets = Dict[int, int]


class DataLossError(RuntimeError):
    """Offsets the read needs were expired by retention (``failOnDataLoss`` is true)."""


def to_json(topic: str, offsets: Mapping[int, int]) -> dict:
    """The checkpointed form: ``{"topic": {"queue": offset}}`` in queue order."""
    return {topic: {str(q): int(offsets[q]) for q in sorted(offsets)}}


def from_json(topic: str, body: Mapping) -> Offsets:
    """Offsets of ``topic`` from a checkpointed offset; ValueError if it is another topic's (the
    query's checkpoint belongs to a different read)."""
    if topic not in body:
        raise ValueError(f"the checkpointed offset {dict(body)} is not for topic {topic!r}; a checkpoint "
                         "belongs to one query: use a new checkpoint location for another topic")
    return {int(q): int(o) for q, o in body[topic].items()}


def queue_bounds(store, topic: str) -> Dict[int, Tuple[int, int]]:
    """``{queue: (min_offset, max_offset)}`` for every queue of ``topic`` (read queues, and any
    queue holding messages), from the ConsumeQueue state."""
    state = store.consumequeue_state()
    return {q: state.offsets(topic, q) or (0, 0) for q in sorted(topic_queues(store, topic))}


def resolve(store, topic: str, spec, *, end: bool, what: str) -> Offsets:
    """A start or end spec (earliest, latest, JSON, timestamp) as ``{queue: offset}``."""
    return resolve_offsets(store, topic, spec, end=end, what=what)


def check_range(start: Offsets, end: Offsets, bounds: Mapping[int, Tuple[int, int]]) -> None:
    """A batch read's offsets must lie within each queue, start before end."""
    for q in sorted(end):
        lo, hi = bounds.get(q, (0, 0))
        s = start.get(q, lo)
        if end[q] > hi:
            raise ValueError(f"endingOffsets: queue {q} ends at {end[q]}, past its max offset {hi}")
        if s > end[q]:
            raise ValueError(f"queue {q}: the start offset {s} is after the end offset {end[q]} "
                             "(startingOffsets/startingTimestamp against endingOffsets)")


def skip_expired(topic: str, start: Offsets, bounds: Mapping[int, Tuple[int, int]],
                 fail_on_data_loss: bool, store_uri: str) -> Offsets:
    """Start offsets moved up to each queue's min offset where retention expired them: an error
    with ``failOnDataLoss`` (DataLossError naming the queues), else logged and skipped."""
    lost = {q: (o, bounds[q][0]) for q, o in start.items() if q in bounds and o < bounds[q][0]}
    if not lost:
        return dict(start)
    detail = ", ".join(f"queue {q}: {o}..{lo - 1}" for q, (o, lo) in sorted(lost.items()))
    if fail_on_data_loss:
        raise DataLossError(
            f"topic {topic!r} of store {store_uri}: offsets expired by retention are gone ({detail}). "
            "Some data may have been lost; to skip ahead to the oldest offsets left, set the option "
            "failOnDataLoss to false")
    log.warning("topic %r of store %s: skipping offsets expired by retention (%s); failOnDataLoss "
                "is false", topic, store_uri, detail)
    return {q: max(o, bounds[q][0]) if q in bounds else o for q, o in start.items()}


def rate_limit(start: Offsets, latest: Offsets, max_offsets: Optional[int]) -> Offsets:
    """The end of a micro-batch that reads at most ``max_offsets`` queue offsets in all, shared
    among the queues in proportion to what each has waiting (largest remainders first, so the
    total is exactly the limit, never above it); all of it when None.

    >>> rate_limit({0: 0, 1: 0}, {0: 10, 1: 30}, 8)
    {0: 2, 1: 6}
    """
    waiting = {q: max(latest[q] - start.get(q, latest[q]), 0) for q in latest}
    total = sum(waiting.values())
    if max_offsets is None or total <= max_offsets:
        return dict(latest)
    share = {q: w * max_offsets // total for q, w in waiting.items()}
    left = max_offsets - sum(share.values())
    by_remainder = sorted(waiting, key=lambda q: (-(waiting[q] * max_offsets % total), q))
    for q in by_remainder[:left]:
        share[q] += 1
    return {q: start.get(q, latest[q]) + share[q] for q in latest}
