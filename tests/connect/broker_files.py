"""A tiny real-format RocketMQ broker store (one commit-log file, two queues of one topic),
written with rocketfilter's record writer, for importing on both sessions."""
from __future__ import annotations

from pathlib import Path

from rocketfilter.broker_files.records import encode_blank, encode_cq_unit, encode_record
from rocketfilter.tags import tags_code

TOPIC, QUEUES = "Imported", 2


def write_broker_store(root: Path, messages: int = 12, file_bytes: int = 8192) -> Path:
    """``messages`` messages (message i in queue i % 2, tag TagA/TagB/TagC, property ``a``), an
    end-of-file blank, and the consume-queue units; returns ``root``."""
    records, units = [], {q: bytearray() for q in range(QUEUES)}
    position = 0
    for i in range(messages):
        tag, queue = ("TagA", "TagB", "TagC")[i % 3], i % QUEUES
        record = encode_record(topic=TOPIC, queue_id=queue, queue_offset=i // QUEUES, commitlog_offset=position,
                               body=b"imported %d" % i, properties={"TAGS": tag, "a": str(i % 4)},
                               born_timestamp=1_700_000_000_000 + i, store_timestamp=1_700_000_000_000 + i)
        records.append(record)
        units[queue] += encode_cq_unit(position, len(record), tags_code(tag))
        position += len(record)
    if position + 8 > file_bytes:
        raise ValueError(f"{messages} messages need more than {file_bytes} bytes")
    (root / "commitlog").mkdir(parents=True)
    (root / "commitlog" / f"{0:020d}").write_bytes(
        b"".join(records) + encode_blank(file_bytes - position) + bytes(file_bytes - position - 8))
    for queue, data in units.items():
        directory = root / "consumequeue" / TOPIC / str(queue)
        directory.mkdir(parents=True)
        (directory / f"{0:020d}").write_bytes(bytes(data))
    return root
