"""The executor side of a store import: parse commit-log and consume-queue files into Arrow
batches (``mapInArrow`` functions), runs of whole records at a time, reading through ``pyarrow.fs``
so object-store URIs work. Damage becomes rows (``_kind`` 'error'), never exceptions, so a parse
task never fails.

No Spark here: :mod:`rocketfilter.store.importer` (the driver: listing, task packing, validation)
owns the Spark schemas of the parsed rows and hands their Arrow form to these functions.
"""
from __future__ import annotations

import os
from typing import Dict, Iterator, List, Tuple

import numpy as np
import pyarrow as pa

from rocketfilter.broker_files.records import StoreFormatError

_BATCH_ROWS = 1024
_BATCH_BODY_BYTES = 16 << 20
_READ_BUFFER = 4 << 20


def _filesystem(path: str):
    """``(pyarrow FileSystem, root path)`` for a local path or a URI."""
    from pyarrow import fs as pafs

    if "://" in path:
        from rocketfilter.delta.object_store import arrow_filesystem  # S3: from the AWS environment

        filesystem, root = arrow_filesystem(path)
        return filesystem, root.rstrip("/")
    return pafs.LocalFileSystem(), os.path.abspath(path)


def commitlog_batches(stream, name: str, start: int, size: int, schema: pa.Schema, *,
                      fast: bool = True) -> Iterator[pa.RecordBatch]:
    """The parsed rows of one commit-log file (``name``, global offset ``start``, ``size`` bytes)
    read from ``stream``, as batches of ``schema``: its records, its blank, its damage and one
    'file' summary row. ``fast``: runs of good records are decoded together
    (:mod:`.record_columns`); the per-record decoder, the reference, gives the same rows."""
    from rocketfilter.broker_files.record_columns import scan_commitlog_columns
    from rocketfilter.broker_files.records import Blank, FileEnd, scan_commitlog

    columns = list(schema.names)
    rows: Dict[str, list] = {c: [] for c in columns}
    body_bytes = good = 0

    def add(**values) -> None:
        for c in columns:
            rows[c].append(values.get(c))

    def flush() -> pa.RecordBatch:
        nonlocal rows, body_bytes
        rows["properties"] = [None if p is None else list(p.items()) for p in rows["properties"]]
        batch = pa.RecordBatch.from_pydict(rows, schema=schema)
        rows, body_bytes = {c: [] for c in columns}, 0
        return batch

    blank = dict(topic="", queue_id=-1, queue_offset=-1, _file=name)
    items = (scan_commitlog_columns(stream, name, start, size, schema) if fast
             else scan_commitlog(stream, name, start, size))
    for item in items:
        if isinstance(item, tuple):   # (count, batch) of good records
            if rows["_kind"]:
                yield flush()
            good += item[0]
            yield item[1]
            continue
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


def _commitlog_rows(tasks: List[List[Tuple[str, str, int, int]]], source: str, schema: pa.Schema):
    """The mapInArrow function parsing the commit-log files of ``tasks[id]`` for each input id,
    into batches of ``schema`` (the importer's parsed commit-log rows)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        filesystem, _ = _filesystem(source)
        for batch in batches:
            for name, path, start, size in (f for i in batch.column(0).to_pylist() for f in tasks[i]):
                with filesystem.open_input_stream(path, compression=None, buffer_size=_READ_BUFFER) as stream:
                    yield from commitlog_batches(stream, name, start, size, schema)

    return run


def _consumequeue_rows(groups: List[List[Tuple[str, int, List[Tuple[str, str, int]]]]], source: str,
                       schema: pa.Schema):
    """The mapInArrow function parsing the queues of ``groups[id]`` (topic, queue id, files) into
    batches of ``schema`` (the importer's parsed consume-queue rows), one batch per file."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        filesystem, _ = _filesystem(source)
        for batch in batches:
            for g in batch.column(0).to_pylist():
                for topic, queue_id, files in groups[g]:
                    for k, (name, path, start) in enumerate(files):
                        with filesystem.open_input_file(path) as f:
                            data = f.read()
                        out = consumequeue_file_batch(data, name, start, topic, queue_id, schema,
                                                      later_file=k + 1 < len(files))
                        if out.num_rows:
                            yield out

    return run


def consumequeue_file_batch(data: bytes, name: str, start: int, topic: str, queue_id: int,
                            schema: pa.Schema, *, later_file: bool) -> pa.RecordBatch:
    """One consume-queue file's rows of ``schema``: its units, then its damage (a bad unit, or a
    file that ends early although ``later_file`` says the queue goes on)."""
    from rocketfilter.broker_files.cq_columns import consumequeue_columns
    from rocketfilter.broker_files.records import CQ_UNIT_SIZE

    units, error = consumequeue_columns(data, name, start)
    n = len(units["queue_offset"])
    extra: List[Tuple[int, str]] = []
    if error is not None:
        extra.append((error.byte_offset, error.reason))
    else:
        end = int(units["file_position"][-1]) + CQ_UNIT_SIZE if n else 0
        if later_file and end < len(data) and not data[-CQ_UNIT_SIZE:].strip(b"\0"):
            extra.append((end, "consume-queue file ends here, but a later file of this queue exists"))
    m = len(extra)

    def then(values: np.ndarray, filler) -> pa.Array:   # the units' values, then the damage's
        return pa.array(np.concatenate([values, np.full(m, filler, values.dtype)]))

    columns = {
        "topic": pa.repeat(pa.scalar(topic, pa.string()), n + m),
        "queue_id": pa.array(np.full(n + m, queue_id, np.int64)),
        "queue_offset": then(units["queue_offset"], -1),
        "commitlog_offset": then(units["commitlog_offset"], -1),
        "size": then(units["size"], 0),
        "tags_code": pa.array(np.concatenate([units["tags_code"], np.zeros(m, np.int64)]),
                              mask=np.concatenate([units["tags_is_ext"], np.ones(m, bool)])),
        "_kind": pa.concat_arrays([pa.repeat(pa.scalar("unit"), n), pa.repeat(pa.scalar("error"), m)]),
        "_file": pa.repeat(pa.scalar(name, pa.string()), n + m),
        "_file_position": pa.array(np.concatenate([units["file_position"],
                                                   np.array([e[0] for e in extra], np.int64)])),
        "_reason": pa.concat_arrays([pa.nulls(n, pa.string()), pa.array([e[1] for e in extra], pa.string())]),
    }
    return pa.RecordBatch.from_arrays([columns[f.name].cast(f.type) for f in schema], schema=schema)
