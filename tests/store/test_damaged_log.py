"""A damaged Delta log is detected on open (issue 19 §6.1): a commit-log log that went backwards
(its newest commit emptied or removed) or vanished (``_delta_log`` deleted) against what the
ConsumeQueue and the store's state recorded raises StoreDamagedError naming it, and nothing is
written on top; a truncated or garbage JSON commit gives one line naming the file."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.store import MessageStore, StoreDamagedError

CONFIG = MessageStoreConfig(consume_queue_rows_per_file=1000, consume_queue_row_group_rows=64)


def _store(spark, path: Path) -> Path:
    s = MessageStore.open(str(path), spark, CONFIG)
    s.create_topic("T", read_queue_nums=1, write_queue_nums=1)
    s.put_messages([{"topic": "T", "body": f"a{i}"} for i in range(3)])
    s.put_messages([{"topic": "T", "body": f"b{i}"} for i in range(3)])
    return path


def _newest_commit(path: Path) -> Path:
    return sorted((path / "commitlog" / "_delta_log").glob("*.json"))[-1]


def _log_listing(path: Path) -> list:
    return sorted((p.name, p.stat().st_size) for p in (path / "commitlog" / "_delta_log").iterdir())


@pytest.mark.parametrize("damage", ["empty", "removed", "garbage", "half"])
def test_a_damaged_newest_commit_is_named_and_never_written_on(spark, tmp_path, damage):
    path = _store(spark, tmp_path / "s")
    newest = _newest_commit(path)
    text = newest.read_bytes()
    if damage == "empty":
        newest.write_bytes(b"")
    elif damage == "removed":
        newest.unlink()
    elif damage == "garbage":
        newest.write_bytes(b"\x00\xffnot json at all\n")
    else:
        newest.write_bytes(text[:len(text) // 2])
    listing = _log_listing(path)
    with pytest.raises(StoreDamagedError) as info:
        MessageStore.open(str(path), spark, CONFIG)
    message = str(info.value)
    assert "\n" not in message and "backtrace" not in message.lower()
    assert "commitlog" in message and (newest.name in message or "went backwards" in message)
    assert _log_listing(path) == listing  # nothing written on top


def test_a_vanished_commitlog_log_is_named_and_not_recreated(spark, tmp_path):
    path = _store(spark, tmp_path / "s")
    shutil.rmtree(path / "commitlog" / "_delta_log")
    for create in (True, False):
        with pytest.raises(StoreDamagedError, match=r"commitlog.*_delta_log") as info:
            MessageStore.open(str(path), spark, CONFIG, create=create)
        assert "\n" not in str(info.value)
        assert not (path / "commitlog" / "_delta_log").exists()


def test_an_intact_store_still_opens_and_continues_its_offsets(spark, tmp_path):
    path = _store(spark, tmp_path / "s")
    store = MessageStore.open(str(path), spark, CONFIG)
    put = store.put_messages([{"topic": "T", "body": "c"}])
    assert put[0]["queue_offset"] == 6
