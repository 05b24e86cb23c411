"""A small store for the source's tests: two topics interleaved in the CommitLog over two puts,
with tiny row groups so a read spans many of them, tags that collide ("Aa"/"BB") or are absent,
and properties for selectors (numbers, text, a missing one, values Java cannot parse)."""
from __future__ import annotations

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.source.offsets import queue_bounds
from rocketfilter.store import MessageStore

from .model import messages

TOPIC, OTHER = "SourceTopic", "OtherTopic"
TAGS = ("TagA", "TagB", "Aa", "BB", None, "TagC", "日本")
REGIONS = ("eu", "us", "apac", None)
SMALL = MessageStoreConfig(commit_log_row_group_rows=16, consume_queue_row_group_rows=8)


def topic_messages(topic: str, lo: int, hi: int) -> list:
    out = []
    for i in range(lo, hi):
        props = {"a": str(i), "price": f"{i * 1.5}"}
        region = REGIONS[i % len(REGIONS)]
        if region is not None:
            props["region"] = region
        if i % 11 == 0:
            props["a"] = "x" + str(i)  # Integer.valueOf fails: an evaluation error
        message = {"topic": topic, "keys": f"{topic}-{i}", "properties": props, "body": f"body-{i}"}
        if TAGS[i % len(TAGS)] is not None:
            message["tags"] = TAGS[i % len(TAGS)]
        out.append(message)
    return out


def put_round(store, lo: int, hi: int) -> None:
    """Messages ``lo..hi-1`` of both topics, interleaved, in one put."""
    mixed = []
    for a, b in zip(topic_messages(TOPIC, lo, hi), topic_messages(OTHER, lo, hi)):
        mixed += [a, b]
    store.put_messages(mixed)


@pytest.fixture(scope="session")
def source_store(spark, tmp_path_factory):
    """The shared read-only store: 2 puts of 60 messages per topic; 4 queues for TOPIC."""
    store = MessageStore.open(str(tmp_path_factory.mktemp("source") / "store"), spark, SMALL)
    store.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
    store.create_topic(OTHER, read_queue_nums=2, write_queue_nums=2)
    for lo in (0, 60):
        put_round(store, lo, lo + 60)
    return store


@pytest.fixture(scope="session")
def source_rows(source_store) -> list:
    return messages(source_store, TOPIC)


LOST = "LostTopic"


@pytest.fixture(scope="session")
def expired_store(spark, tmp_path_factory):
    """40 messages in 2 queues, the oldest expired: commit-log "files" of 1 KiB, the first two
    deleted and the ConsumeQueue cleaned; then two more deleted with the ConsumeQueue left as is
    (its entries point at messages that are gone)."""
    store = MessageStore.open(str(tmp_path_factory.mktemp("expired") / "store"), spark,
                              MessageStoreConfig(mapped_file_size_commit_log=1024))
    store.create_topic(LOST, read_queue_nums=2, write_queue_nums=2)
    store.put_messages(topic_messages(LOST, 0, 40))
    store.expire(before_commitlog_offset=2048)
    cleaned = queue_bounds(store, LOST)
    store.expire(before_commitlog_offset=4096, clean_consume_queue=False)
    return store, cleaned
