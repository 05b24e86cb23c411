"""Start and end points given the way Spark users give them to the Kafka source.

A spec is one of:

* ``"earliest"`` / ``"latest"``: each queue's min / max offset;
* a time: epoch ms (an int, or a string of digits), an ISO-8601 string (``"2024-05-01T10:00:00Z"``;
  without a zone it is UTC) or a datetime (naive: UTC). Each queue starts (or ends, exclusive) at
  the first message stored at or after it: ``getOffsetInQueueByTime`` with LOWER, as Kafka's
  ``startingTimestamp`` and ``endingTimestamp`` take the first record at or after the time;
* per-queue offsets as JSON text or a dict, ``{"TopicA": {"0": 23, "1": -2}}``: -2 is the queue's
  earliest offset, -1 its latest (the Kafka source's convention). Queues the JSON leaves out
  start at earliest and end at latest (the Kafka source would ask for every partition).

:func:`resolve_offsets` turns a spec into ``{queue_id: offset}`` for one topic of a store (a
:class:`rocketfilter.store.MessageStore`, asked through its methods), for a start or for an end; :func:`queue_offsets` also passes a plain ``{queue_id: offset}`` dict
through unchanged, which is what ``pull_sequence`` takes.

>>> parse_offsets('{"TopicA": {"0": 23, "1": -2}}')
OffsetSpec(kind='offsets', timestamp_ms=None, offsets={'TopicA': {0: 23, 1: -2}})
>>> parse_offsets("2024-05-01T10:00:00Z").timestamp_ms
1714557600000
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Mapping, Optional, Set

from rocketfilter.checks import LONG_MAX, _is_int

EARLIEST = -2
LATEST = -1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EXPECTED = ("'earliest', 'latest', a time (epoch ms, ISO-8601 or a datetime) or per-queue offsets "
             "like {\"TopicA\": {\"0\": 23, \"1\": -2}}")


@dataclass(frozen=True)
class OffsetSpec:
    """A parsed spec: ``kind`` is ``earliest``, ``latest``, ``timestamp`` or ``offsets``."""

    kind: str
    timestamp_ms: Optional[int] = None
    offsets: Optional[Dict[str, Dict[int, int]]] = None


def _default_what(end: bool) -> str:
    return "endingOffsets" if end else "startingOffsets"


def _time(moment: datetime) -> int:
    """Epoch ms of a datetime (naive: UTC), exactly (no float rounding)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _timestamp(value: int, what: str) -> OffsetSpec:
    if not 0 <= value <= LONG_MAX:
        raise ValueError(f"{what}: a timestamp must be epoch milliseconds from 0 to {LONG_MAX}, got {value}")
    return OffsetSpec("timestamp", timestamp_ms=value)


def _per_queue(body: Any, what: str) -> OffsetSpec:
    """``{topic: {queue: offset}}`` checked: string or int queue ids, integer offsets >= -2."""
    if not isinstance(body, Mapping):
        raise ValueError(f"{what}: per-queue offsets must be an object of topics, like "
                         f"{{\"TopicA\": {{\"0\": 23}}}}, got {body!r:.80}")
    out: Dict[str, Dict[int, int]] = {}
    for topic, queues in body.items():
        if not isinstance(topic, str):
            raise ValueError(f"{what}: topic {topic!r} must be a string")
        if not isinstance(queues, Mapping):
            raise ValueError(f"{what}: topic {topic!r}: expected an object of queue ids to offsets, "
                             f"got {queues!r:.80}")
        out[topic] = {}
        for queue, offset in queues.items():
            text = str(queue)
            if not (_is_int(queue) or (isinstance(queue, str) and text.isascii() and text.isdigit())):
                raise ValueError(f"{what}: topic {topic!r}: queue id {queue!r} is not an integer >= 0")
            if not _is_int(offset) or not -2 <= offset <= LONG_MAX:
                raise ValueError(f"{what}: topic {topic!r} queue {text}: offset {offset!r} is neither an "
                                 "offset >= 0 nor -2 (earliest) or -1 (latest)")
            out[topic][int(queue)] = offset
    return OffsetSpec("offsets", offsets=out)


def parse_offsets(spec: Any, what: str = "startingOffsets") -> OffsetSpec:
    """A spec as an :class:`OffsetSpec`; ValueError naming ``what`` and the bad part."""
    if isinstance(spec, OffsetSpec):
        return spec
    if isinstance(spec, datetime):
        return _timestamp(_time(spec), what)
    if _is_int(spec):
        return _timestamp(spec, what)
    if isinstance(spec, Mapping):
        return _per_queue(spec, what)
    if not isinstance(spec, str):
        raise ValueError(f"{what}: expected {_EXPECTED}; got {spec!r:.80}")
    text = spec.strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())
    if text.startswith("{"):
        try:
            body = json.loads(text)
        except ValueError as error:
            raise ValueError(f"{what}: not valid JSON ({error})") from None
        return _per_queue(body, what)
    if text.isascii() and text.isdigit():
        return _timestamp(int(text), what)
    try:
        return _timestamp(_time(datetime.fromisoformat(text)), what)
    except ValueError:
        raise ValueError(f"{what}: expected {_EXPECTED}; got {spec!r:.80}") from None


def topic_queues(store, topic: str) -> Set[int]:
    """The queue ids of ``topic``: its read queues and any queue holding messages."""
    config = store.topic_config(topic)
    queues = set(range(config.read_queue_nums)) if config is not None else set()
    return queues | set(store.consumequeue_state().queues.get(topic, {}))


def resolve_offsets(store, topic: str, spec: Any, *, end: bool = False,
                    what: Optional[str] = None) -> Dict[int, int]:
    """``{queue_id: offset}`` for every queue of ``topic``: where a read starts (``end=False``)
    or ends, exclusive (``end=True``). ValueError for an unknown topic (the one asked for, or one
    the JSON names), a queue the topic does not have, or a malformed spec."""
    what = what or _default_what(end)
    parsed = parse_offsets(spec, what)
    queues = topic_queues(store, topic)
    state = store.consumequeue_state()
    known = set(store.topics()) | set(state.queues)
    if topic not in known:
        raise ValueError(f"{what}: topic {topic!r} does not exist in store {store.uri} "
                         f"(topics: {', '.join(sorted(known)) or 'none'})")
    bounds = {q: state.offsets(topic, q) or (0, 0) for q in queues}
    if parsed.kind == "earliest":
        return {q: lo for q, (lo, _) in bounds.items()}
    if parsed.kind == "latest":
        return {q: hi for q, (_, hi) in bounds.items()}
    if parsed.kind == "timestamp":
        return {q: store.get_offset_in_queue_by_time(topic, q, parsed.timestamp_ms, "LOWER") for q in sorted(queues)}
    unknown = sorted(set(parsed.offsets) - known)
    if unknown:
        raise ValueError(f"{what}: topic {unknown[0]!r} in the offsets does not exist in store {store.uri} "
                         f"(topics: {', '.join(sorted(known)) or 'none'})")
    given = parsed.offsets.get(topic, {})
    outside = sorted(set(given) - queues)
    if outside:
        has = f"{len(queues)} queue{'s' if len(queues) != 1 else ''}" + (
            f" ({min(queues)}..{max(queues)})" if len(queues) > 1 else f" ({min(queues)})" if queues else "")
        raise ValueError(f"{what}: topic {topic!r} has {has}; queue {outside[0]} is out of range")
    out = {}
    for q, (lo, hi) in bounds.items():
        offset = given.get(q, LATEST if end else EARLIEST)
        out[q] = lo if offset == EARLIEST else hi if offset == LATEST else offset
    return out


def queue_offsets(store, topic: str, spec: Any, *, end: bool = False,
                  what: Optional[str] = None) -> Optional[Dict[int, int]]:
    """What ``pull_sequence`` and the like take: None stays None (their own default), a dict of
    queue ids to offsets passes through as it is, and any other spec is resolved."""
    if spec is None:
        return None
    if isinstance(spec, Mapping) and all(_is_int(k) for k in spec):
        return dict(spec)
    return resolve_offsets(store, topic, spec, end=end, what=what)
