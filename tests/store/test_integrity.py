"""A store that lost its directory, a table or data files fails with one clear error naming what
is gone, and is never appended to; a mistyped path is never turned into a new store."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.store import MessageStore, StoreDamagedError, StoreNotFoundError

CONFIG = MessageStoreConfig(consume_queue_rows_per_file=1000, consume_queue_row_group_rows=64)


def _store(spark, path: Path) -> MessageStore:
    s = MessageStore.open(str(path), spark, CONFIG)
    s.create_topic("T", read_queue_nums=2, write_queue_nums=2)
    s.put_messages([{"topic": "T", "tags": "a", "body": f"m{i}"} for i in range(6)])
    return s


def _data_files(table_dir: Path) -> list:
    return sorted(p for p in table_dir.glob("*.parquet"))


def test_open_with_create_false_refuses_a_path_without_a_store(spark, tmp_path):
    with pytest.raises(StoreNotFoundError, match="no rocketfilter store at") as info:
        MessageStore.open(str(tmp_path / "typo"), spark, CONFIG, create=False)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "typo").exists()
    _store(spark, tmp_path / "real")
    assert MessageStore.open(str(tmp_path / "real"), spark, CONFIG, create=False).topic_config("T")


def test_a_store_deleted_while_open_fails_instead_of_answering_from_memory(spark, tmp_path):
    store = _store(spark, tmp_path / "s")
    assert store.get_message("G", "T", 0, 0, 32).status == "FOUND"
    shutil.rmtree(tmp_path / "s")
    for act in (lambda: store.get_message("G", "T", 0, 0, 32),
                lambda: store.put_messages([{"topic": "T", "body": "x"}]),
                lambda: store.query_consumer_offset("G", "T", 0)):
        with pytest.raises(StoreDamagedError, match="table is gone"):
            act()


def test_lost_commitlog_files_are_named_and_never_appended_to(spark, tmp_path):
    store = _store(spark, tmp_path / "s")
    before = store.commitlog_state().next_commitlog_offset
    lost = _data_files(tmp_path / "s" / "commitlog")[0]
    lost.unlink()
    with pytest.raises(StoreDamagedError, match=lost.name):
        store.get_message("G", "T", 0, 0, 32)
    with pytest.raises(StoreDamagedError, match=lost.name):
        store.put_messages([{"topic": "T", "body": "x"}])
    with pytest.raises(StoreDamagedError, match=lost.name):
        MessageStore.open(str(tmp_path / "s"), spark, CONFIG)
    assert store.commitlog_state().next_commitlog_offset == before  # offsets did not move on


def test_lost_consumequeue_files_are_named(spark, tmp_path):
    store = _store(spark, tmp_path / "s")
    lost = _data_files(tmp_path / "s" / "consumequeue")[0]
    lost.unlink()
    with pytest.raises(StoreDamagedError, match="consumequeue table lost"):
        MessageStore.open(str(tmp_path / "s"), spark, CONFIG)
    with pytest.raises(StoreDamagedError, match=lost.name):
        for q in range(2):  # whichever queue the file held
            store.get_message("G", "T", q, 0, 32)
