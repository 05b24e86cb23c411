"""Start and end points as Spark users give them, resolved against the shared ``timed_store``
(CF/0: offsets 0-9 stored at T0+1000*i; CF/1: 0-4 expired, 5-14 stored at T0+1000*(i-5))."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rocketfilter.offsets_spec import OffsetSpec, parse_offsets, queue_offsets, resolve_offsets
from tests.store.store_times import T0


@pytest.mark.parametrize("spec, parsed", [
    ("earliest", OffsetSpec("earliest")),
    (" Latest ", OffsetSpec("latest")),
    (T0, OffsetSpec("timestamp", T0)),
    (str(T0), OffsetSpec("timestamp", T0)),
    ("2024-05-01T10:00:00Z", OffsetSpec("timestamp", T0)),
    ("2024-05-01T12:00:00.250+02:00", OffsetSpec("timestamp", T0 + 250)),
    ("2024-05-01 10:00:00", OffsetSpec("timestamp", T0)),             # no zone: UTC
    (datetime(2024, 5, 1, 10), OffsetSpec("timestamp", T0)),
    (datetime(2024, 5, 1, 10, tzinfo=timezone.utc), OffsetSpec("timestamp", T0)),
    ('{"TopicA": {"0": 23, "1": -2}}', OffsetSpec("offsets", offsets={"TopicA": {0: 23, 1: -2}})),
    ({"TopicA": {0: -1}}, OffsetSpec("offsets", offsets={"TopicA": {0: -1}})),
])
def test_specs_parse(spec, parsed):
    assert parse_offsets(spec) == parsed


@pytest.mark.parametrize("spec, message", [
    ('{"TopicA": {"0": 23,}}', r"startingOffsets: not valid JSON \(Expecting property name"),
    ('{"TopicA": {"zero": 23}}', "topic 'TopicA': queue id 'zero' is not an integer >= 0"),
    ('{"TopicA": {"0": -3}}', "topic 'TopicA' queue 0: offset -3 is neither an offset >= 0 nor -2"),
    ('{"TopicA": {"0": 1.5}}', "topic 'TopicA' queue 0: offset 1.5 is neither"),
    ('{"TopicA": [1, 2]}', "topic 'TopicA': expected an object of queue ids to offsets"),
    ("yesterday", "startingOffsets: expected 'earliest', 'latest', a time"),
    (-5, "a timestamp must be epoch milliseconds from 0"),
    (True, "startingOffsets: expected"),
])
def test_bad_specs_name_the_bad_part(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_offsets(spec)


def test_earliest_latest_and_times_per_queue(timed_store):
    store = timed_store
    assert resolve_offsets(store, "CF", "earliest") == {0: 0, 1: 5}
    assert resolve_offsets(store, "CF", "latest", end=True) == {0: 10, 1: 15}
    for t in (T0 + 3000, "2024-05-01T10:00:03Z", datetime(2024, 5, 1, 10, 0, 3, tzinfo=timezone.utc)):
        assert resolve_offsets(store, "CF", t) == {0: 3, 1: 8}
        assert resolve_offsets(store, "CF", t, end=True) == {0: 3, 1: 8}   # exclusive: before the time
    assert resolve_offsets(store, "CF", T0 + 3500) == {0: 4, 1: 9}


def test_json_offsets_with_kafkas_minus_one_and_two(timed_store):
    store = timed_store
    assert resolve_offsets(store, "CF", '{"CF": {"0": 4, "1": -1}}') == {0: 4, 1: 15}
    assert resolve_offsets(store, "CF", '{"CF": {"0": -2}}', end=True) == {0: 0, 1: 15}  # 1: latest
    assert resolve_offsets(store, "CF", {"%RETRY%GID": {"0": 7}}) == {0: 0, 1: 5}       # CF not named
    assert resolve_offsets(store, "CF", '{"CF": {"1": 99}}') == {0: 0, 1: 99}            # beyond max: a pull says so


def test_json_errors_name_the_topic_or_queue(timed_store):
    with pytest.raises(ValueError, match="startingOffsets: topic 'Nope' in the offsets does not exist"):
        resolve_offsets(timed_store, "CF", '{"CF": {"0": 1}, "Nope": {"0": 1}}')
    with pytest.raises(ValueError, match=r"endingOffsets: topic 'CF' has 2 queues \(0..1\); queue 7 is out of range"):
        resolve_offsets(timed_store, "CF", '{"CF": {"7": 1}}', end=True)
    with pytest.raises(ValueError, match="topic 'Nope' does not exist in store"):
        resolve_offsets(timed_store, "Nope", "earliest")


def test_plain_queue_dicts_pass_through(timed_store):
    assert queue_offsets(timed_store, "CF", None) is None
    assert queue_offsets(timed_store, "CF", {0: 3}) == {0: 3}
    assert queue_offsets(timed_store, "CF", "latest") == {0: 10, 1: 15}


def test_pull_sequence_takes_specs_as_well_as_dicts(timed_store):
    from rocketfilter.pull.sequence import pull_sequence

    def delivered(**bounds):
        rows = pull_sequence(timed_store, "CF", **bounds).select("queue_id", "queue_offset").collect()
        return sorted((r["queue_id"], r["queue_offset"]) for r in rows)

    # pulls are whole (a pull of 32 may run past the end), so the spans show in where they start
    by_spec = delivered(start_offsets='{"CF": {"0": 4}}', end_offsets="2024-05-01T10:00:07Z")
    assert by_spec == [(0, q) for q in range(4, 10)] + [(1, q) for q in range(5, 15)]
    assert delivered(start_offsets={0: 4}, end_offsets={0: 7, 1: 12}) == by_spec
    assert delivered(start_offsets="2024-05-01T10:00:08Z") == [(0, 8), (0, 9)] + [(1, 13), (1, 14)]
    with pytest.raises(ValueError, match=r"end_offsets: topic 'CF' has 2 queues \(0..1\); queue 2 is out of range"):
        pull_sequence(timed_store, "CF", end_offsets={"CF": {"2": 5}})
