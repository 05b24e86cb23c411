"""One small store for every Connect test, written through Spark Connect, open on both sessions.

The store is written once per session through Connect (a put from a DataFrame, with bloom
bitmaps for a SQL92 group), and the same messages, as a list, through the classic session into a
mirror store. Tests run the same call on both sessions (:func:`both`) and compare the answers.
Tests that change a store (expire, promote) work on a copy (:func:`copy_store`).
"""
from __future__ import annotations

import dataclasses
import shutil
from types import SimpleNamespace

import pytest

from rocketfilter.config import BrokerConfig, MessageStoreConfig
from rocketfilter.store import MessageStore
from tests.connect.modes import classic_mode, connect_mode

TOPIC, RETRY = "Orders", "%RETRY%R"  # R: the retry group
# Commit-log "files" of 1,000 bytes (messages are ~150), so expire has whole files to drop.
CONFIG = dict(mapped_file_size_commit_log=1000)
BROKER = dict(enable_calc_filter_bit_map=True, filter_support_retry=True)
# Round-robin messages (no queue_id) and, from 24 on, messages with their queue given.
MESSAGES = [{"topic": TOPIC, "tags": ("TagA", "TagB", "Aa", "BB")[i % 4], "keys": f"k{i}",
             "properties": {"a": str(i % 4), "n": str(i)}, "body": f"body {i}"} for i in range(24)]
MESSAGES += [{"topic": TOPIC, "tags": "TagC" if i % 2 else "TagA", "queue_id": i % 2,
              "properties": {"a": str(i), "n": str(100 + i)}, "body": f"df {i}"} for i in range(8)]
# A retry message without RETRY_TOPIC: the retry filter fails its pull as RocketMQ's NPE does.
MESSAGES.append({"topic": RETRY, "properties": {"a": "3"}, "body": "retry"})
MESSAGES_SCHEMA = ("topic string, tags string, keys string, queue_id int, properties map<string,string>, "
                   "body binary")


def open_store(path, spark, create=True) -> MessageStore:
    store = MessageStore.open(path, spark, MessageStoreConfig(**CONFIG), broker_config=BrokerConfig(**BROKER),
                              create=create)
    store.pull_engine = "spark"   # single pulls read with pyarrow by default: these hold Spark's reads
    return store


def _fill(store: MessageStore, as_dataframe: bool) -> list:
    """Topics, a SQL92 group (before the messages, so they get bitmaps) and one put, from a
    DataFrame or from the list; returns what the put assigned, sorted."""
    store.create_topic(TOPIC, read_queue_nums=3, write_queue_nums=2)  # queue 2: readable, never written
    store.create_topic(RETRY, read_queue_nums=1, write_queue_nums=1)
    store.filter_manager.register(TOPIC, "G", "a > 1", "SQL92", 1)
    if as_dataframe:
        rows = [(m["topic"], m.get("tags"), m.get("keys"), m.get("queue_id"), m["properties"], m["body"].encode())
                for m in MESSAGES]
        put = store.put_messages(store.spark.createDataFrame(rows, MESSAGES_SCHEMA)).collect()
    else:
        put = store.put_messages(MESSAGES)
    return sorted(tuple(r[k] for k in ("topic", "queue_id", "queue_offset", "commitlog_offset", "msg_id"))
                  for r in put)


@pytest.fixture(scope="session")
def stores(spark, _connect_session, tmp_path_factory):
    """The Connect-written store (a DataFrame put), open on both sessions, and the mirror the
    classic session writes from the same messages as a list."""
    root = tmp_path_factory.mktemp("connect_store")
    with connect_mode(True):
        written = open_store(str(root / "store"), _connect_session)
        put_connect = _fill(written, as_dataframe=True)
    with classic_mode():
        mirror = open_store(str(root / "mirror"), spark)
        put_classic = _fill(mirror, as_dataframe=False)
        classic = open_store(str(root / "store"), spark)
        # A store opened again loads its filter data as dead, as a restarted broker does, until
        # the group's consumers heartbeat: this is that heartbeat, so both sessions pull alike.
        classic.filter_manager.register(TOPIC, "G", "a > 1", "SQL92", 1)
    return SimpleNamespace(path=str(root / "store"), connect=written, classic=classic, mirror=mirror,
                           put_connect=put_connect, put_classic=put_classic)


def both(stores, call):
    """``call(store)`` on the Connect session, then on the classic one: (connect, classic)."""
    with connect_mode(True):
        got = call(stores.connect)
    with classic_mode():
        return got, call(stores.classic)


def copy_store(stores, tmp_path):
    """A copy of the Connect-written store, open on both sessions (same shape as ``stores``)."""
    target = str(tmp_path / "copy")
    shutil.copytree(stores.path, target)
    with connect_mode(True):
        connect = open_store(target, stores.connect.spark)
    with classic_mode():
        classic = open_store(target, stores.classic.spark)
    for store in (connect, classic):
        store.filter_manager.register(TOPIC, "G", "a > 1", "SQL92", 1)  # the heartbeat (see stores)
    return SimpleNamespace(path=target, connect=connect, classic=classic)


def answer(result) -> tuple:
    """Everything a ``GetMessageResult`` says, comparable with ``==``."""
    messages = [(m["queue_offset"], m["msg_id"], m["tags"], m["body"], sorted(m["properties"].items()))
                for m in result.messages]
    return (result.status, result.next_begin_offset, result.min_offset, result.max_offset,
            result.message_queue_offsets, result.buffer_total_size, result.filter_message_count,
            result.suggest_pulling_from_slave, dataclasses.asdict(result.funnel), messages)


def _plain(value):
    return tuple(sorted(value.items())) if isinstance(value, dict) else value


def rows(df, drop=()) -> list:
    """The rows as sorted tuples of (column, value), without the columns ``drop``."""
    return sorted(tuple(sorted((k, _plain(v)) for k, v in r.asDict().items() if k not in drop))
                  for r in df.collect())
