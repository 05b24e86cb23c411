"""The executor side of a store import: parse commit-log and consume-queue files into Arrow
batches (``mapInArrow`` functions), one record or unit at a time, reading through ``pyarrow.fs``
so object-store URIs work. Damage becomes rows (``_kind`` 'error'), never exceptions, so a parse
task never fails.

Split out of :mod:`.importer` (the driver: listing, task packing, validation), which
imports these names and so still exposes them.
"""
from __future__ import annotations

import os
from typing import Dict, Iterator, List, Tuple

import pyarrow as pa
from pyspark.sql.types import LongType, StringType, StructField, StructType

from rocketfilter.store.records import StoreFormatError
from rocketfilter.store.schema import COMMITLOG_SCHEMA, CONSUMEQUEUE_SCHEMA, arrow_schema

_BATCH_ROWS = 1024
_BATCH_BODY_BYTES = 16 << 20
_READ_BUFFER = 4 << 20

_INTERNAL = [StructField("_tags_code", LongType()), StructField("_kind", StringType(), False),
             StructField("_file", StringType(), False), StructField("_file_position", LongType(), False),
             StructField("_reason", StringType())]
# Parsed commit-log rows: records, plus 'blank', 'error' and one 'file' summary row per file.
# Non-record rows fill the non-null columns with placeholders so the schema stays truthful.
PARSED_COMMITLOG_SCHEMA = StructType(list(COMMITLOG_SCHEMA.fields) + _INTERNAL)
PARSED_CQ_SCHEMA = StructType([f for f in CONSUMEQUEUE_SCHEMA.fields if f.name in (
    "topic", "queue_id", "queue_offset", "commitlog_offset", "size", "tags_code")] + _INTERNAL[1:])


def _filesystem(path: str):
    """``(pyarrow FileSystem, root path)`` for a local path or a URI."""
    from pyarrow import fs as pafs

    if "://" in path:
        from rocketfilter.object_store import arrow_filesystem  # S3: from the AWS environment

        filesystem, root = arrow_filesystem(path)
        return filesystem, root.rstrip("/")
    return pafs.LocalFileSystem(), os.path.abspath(path)


def _commitlog_rows(tasks: List[List[Tuple[str, str, int, int]]], source: str):
    """The mapInArrow function parsing the commit-log files of ``tasks[id]`` for each input id."""
    schema = arrow_schema(PARSED_COMMITLOG_SCHEMA)
    columns = [f.name for f in PARSED_COMMITLOG_SCHEMA.fields]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from rocketfilter.store.records import Blank, FileEnd, scan_commitlog

        filesystem, _ = _filesystem(source)
        rows: Dict[str, list] = {c: [] for c in columns}
        body_bytes = 0

        def add(**values) -> None:
            for c in columns:
                rows[c].append(values.get(c))

        def flush() -> pa.RecordBatch:
            nonlocal rows, body_bytes
            rows["properties"] = [None if p is None else list(p.items()) for p in rows["properties"]]
            batch = pa.RecordBatch.from_pydict(rows, schema=schema)
            rows, body_bytes = {c: [] for c in columns}, 0
            return batch

        for batch in batches:
            for name, path, start, size in (f for i in batch.column(0).to_pylist() for f in tasks[i]):
                blank = dict(topic="", queue_id=-1, queue_offset=-1, _file=name)
                good = 0
                with filesystem.open_input_stream(path, compression=None, buffer_size=_READ_BUFFER) as stream:
                    for item in scan_commitlog(stream, name, start, size):
                        if isinstance(item, dict):
                            add(**item, _tags_code=item["tags_code"], _kind="record", _file=name,
                                _file_position=item["file_position"])
                            body_bytes += len(item["body"] or b"")
                            good += 1
                        elif isinstance(item, Blank):
                            add(**blank, commitlog_offset=item.commitlog_offset, store_size=item.total_size,
                                _kind="blank", _file_position=item.file_position)
                        elif isinstance(item, FileEnd):  # store_size: the file's good records
                            add(**blank, commitlog_offset=start + item.data_end, store_size=good, _kind="file",
                                _file_position=item.data_end, _reason=item.ends_with)
                        else:
                            add(**blank, commitlog_offset=start + item.byte_offset, store_size=0,
                                _kind="error", _file_position=item.byte_offset, _reason=item.reason)
                        if len(rows["_kind"]) >= _BATCH_ROWS or body_bytes >= _BATCH_BODY_BYTES:
                            yield flush()
        if rows["_kind"]:
            yield flush()

    return run


def _consumequeue_rows(groups: List[List[Tuple[str, int, List[Tuple[str, str, int]]]]], source: str):
    """The mapInArrow function parsing the queues of ``groups[id]``: (topic, queue id, files)."""
    schema = arrow_schema(PARSED_CQ_SCHEMA)
    columns = [f.name for f in PARSED_CQ_SCHEMA.fields]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from rocketfilter.store.records import CQ_UNIT_SIZE, iter_consumequeue_file

        filesystem, _ = _filesystem(source)
        for batch in batches:
            for g in batch.column(0).to_pylist():
                for topic, queue_id, files in groups[g]:
                    def add(**values) -> None:
                        values.update(topic=topic, queue_id=queue_id)
                        for c in columns:
                            rows[c].append(values.get(c))

                    for k, (name, path, start) in enumerate(files):  # one batch per file
                        rows: Dict[str, list] = {c: [] for c in columns}
                        with filesystem.open_input_file(path) as f:
                            data = f.read()
                        end = 0
                        try:
                            for u in iter_consumequeue_file(data, name, start):
                                add(**u, _kind="unit", _file=name, _file_position=u["file_position"])
                                end = u["file_position"] + CQ_UNIT_SIZE
                        except StoreFormatError as exc:
                            add(queue_offset=-1, commitlog_offset=-1, size=0, _kind="error", _file=name,
                                _file_position=exc.byte_offset, _reason=exc.reason)
                        else:
                            if k + 1 < len(files) and end < len(data) and not data[-CQ_UNIT_SIZE:].strip(b"\0"):
                                add(queue_offset=-1, commitlog_offset=-1, size=0, _kind="error", _file=name,
                                    _file_position=end, _reason="consume-queue file ends here, but a"
                                                                " later file of this queue exists")
                        if rows["_kind"]:
                            yield pa.RecordBatch.from_pydict(rows, schema=schema)

    return run
