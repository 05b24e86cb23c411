"""A data file whose bytes are corrupted is one line naming it (issue 19 §6.8), not Spark's
10,000-character Py4JJavaError."""
from __future__ import annotations

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.store import MessageStore, StoreDamagedError


def _corrupt_data_pages(path) -> None:
    """Overwrite everything between the leading magic and the footer."""
    raw = bytearray(path.read_bytes())
    footer = int.from_bytes(raw[-8:-4], "little")
    end = len(raw) - 8 - footer
    raw[4:end] = b"\xab" * (end - 4)
    path.write_bytes(bytes(raw))


def test_a_corrupted_commitlog_file_is_named_in_one_line(spark, tmp_path):
    store = MessageStore.open(str(tmp_path / "s"), spark, MessageStoreConfig())
    store.create_topic("T", read_queue_nums=1, write_queue_nums=1)
    store.put_messages([{"topic": "T", "body": f"message {i}" * 20} for i in range(6)])
    (data,) = sorted((tmp_path / "s" / "commitlog").glob("*.parquet"))
    _corrupt_data_pages(data)
    with pytest.raises(StoreDamagedError, match=data.name) as info:
        store.get_message("G", "T", 0, 0, 32)
    message = str(info.value)
    assert "\n" not in message and len(message) < 700, message
