"""A killed ``format("rocketmq")`` write leaves its staged rows under ``_sink/<uuid>/`` (issue
19 §6.9); opening the store removes staging that no write can still be using (nothing in it
changed for a day), and never a recent one a concurrent write may be filling."""
from __future__ import annotations

import os
import time

from rocketfilter.config import MessageStoreConfig
from rocketfilter.store import MessageStore
from rocketfilter.store.staging import clean_abandoned_staging


def _staged(root, name: str, age_hours: float):
    folder = root / "_sink" / name
    folder.mkdir(parents=True)
    part = folder / "part-00000-x.parquet"
    part.write_bytes(b"PAR1")
    then = time.time() - age_hours * 3600
    os.utime(part, (then, then))
    os.utime(folder, (then, then))
    return folder


def test_open_removes_abandoned_staging_and_keeps_recent(spark, tmp_path):
    path = tmp_path / "s"
    MessageStore.open(str(path), spark, MessageStoreConfig())
    old = _staged(path, "0b5c-killed", age_hours=25)
    recent = _staged(path, "7f1a-running", age_hours=0.5)
    MessageStore.open(str(path), spark, MessageStoreConfig())
    assert not old.exists() and recent.exists()


def test_the_age_is_the_newest_file_in_the_folder(spark, tmp_path):
    path = tmp_path / "s"
    store = MessageStore.open(str(path), spark, MessageStoreConfig())
    folder = _staged(path, "slow-writer", age_hours=30)
    (folder / "part-00001-y.parquet").write_bytes(b"PAR1")   # a task still writing
    assert clean_abandoned_staging(store) == []
    assert folder.exists()
    assert clean_abandoned_staging(store, max_age_hours=0) == [f"_sink/{folder.name}"]
    assert not folder.exists()
