"""Commit-log records decoded a buffer at a time into Arrow columns: the import's fast path.

:func:`scan_commitlog_columns` walks a file as :func:`.records.scan_commitlog` does, but decodes
each run of whole, well-formed records together: the fixed-position fields with numpy over the
buffer; bodies, topics and properties strings cut out of the buffer by Arrow (``_spans``), the
properties split by Arrow kernels, IPv4 message ids in numpy; only the body CRCs, compressed
bodies and IPv6 hosts go record by record.
The first record it cannot vouch for (any header that is not a whole V1/V2 record, inconsistent
lengths, a misplaced PHYSICALOFFSET, a bad CRC, a body that does not inflate) and the rest of
the file go to :func:`.records.scan_commitlog`, which stays the one reference for damage; the
two agree row for row (tests/store/test_record_columns.py). On 174k bench records the
per-record decoder took 28 µs a record, this one 12 µs with list comprehensions, and about 7 µs
since the strings are cut by Arrow, with the same rows.
"""
from __future__ import annotations

import binascii
import struct
import zlib
from typing import Dict, Iterator, List, Optional, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rocketfilter.broker_files.body_codec import decompress_body
from rocketfilter.broker_files.records import (MIN_RECORD_SIZE, Blank, FileEnd, Record, StoreFormatError,
                                               _decode_text, _host_text, _msg_id_prefix, _read_exactly,
                                               scan_commitlog)
from rocketfilter.message import (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2, SYSFLAG_BORNHOST_V6,
                                  SYSFLAG_COMPRESSED, SYSFLAG_STOREHOST_V6, NAME_VALUE_SEPARATOR,
                                  PROPERTY_SEPARATOR, record_size, string_to_properties)
from rocketfilter.tags import tags_code

CHUNK_BYTES = 8 << 20     # read and decoded at a time (plus the record that straddles the end)
_HEADER = struct.Struct(">ii")
_FIXED = record_size(0, 0, 0)
_UNSIGNED = 0xFFFFFFFFFFFFFFFF

Item = Union[Tuple[int, pa.RecordBatch], Record, Blank, FileEnd, StoreFormatError]


class _Prefixed:
    """A stream that first returns ``prefix``: hands the slow scanner the bytes already read."""

    def __init__(self, prefix: bytes, stream) -> None:
        self._prefix, self._stream = memoryview(prefix), stream

    def read(self, n: int) -> bytes:
        if self._prefix:
            out, self._prefix = bytes(self._prefix[:n]), self._prefix[n:]
            return out
        return self._stream.read(n)


def _walk(data: bytes, limit: int) -> Tuple[List[int], int, bool]:
    """Starts of the whole V1/V2 records at the head of ``data``; where the walk stopped; and
    whether more bytes could extend it (``limit``: the bytes left in the file from data[0])."""
    starts, pos, n = [], 0, len(data)
    unpack = _HEADER.unpack_from
    while pos + 8 <= n:
        size, magic = unpack(data, pos)
        if (magic != MESSAGE_MAGIC_CODE_V1 and magic != MESSAGE_MAGIC_CODE_V2) or size < MIN_RECORD_SIZE \
                or pos + size > limit:
            return starts, pos, False
        if pos + size > n:
            return starts, pos, True
        starts.append(pos)
        pos += size
    return starts, pos, n < limit


def _be(a: np.ndarray, pos: np.ndarray, dtype: str) -> np.ndarray:
    """The big-endian integers at byte positions ``pos`` of ``a`` (clipped into ``a``: callers
    mask out the records whose fields do not lie inside them)."""
    width = np.dtype(dtype).itemsize
    pos = np.clip(pos, 0, len(a) - width)
    return a[pos[:, None] + np.arange(width)].view(dtype).ravel().astype(np.int64)


def _fields(a: np.ndarray, s: np.ndarray) -> Dict[str, np.ndarray]:
    """The fields of the records starting at ``s``, and ``ok``: their lengths are consistent."""
    f = {name: _be(a, s + at, kind) for name, at, kind in (
        ("store_size", 0, ">i4"), ("magic", 4, ">i4"), ("body_crc", 8, ">i4"), ("queue_id", 12, ">i4"),
        ("flag", 16, ">i4"), ("queue_offset", 20, ">i8"), ("commitlog_offset", 28, ">i8"),
        ("sys_flag", 36, ">i4"), ("born_timestamp", 40, ">i8"))}
    born_len = np.where(f["sys_flag"] & SYSFLAG_BORNHOST_V6, 16, 4)
    store_len = np.where(f["sys_flag"] & SYSFLAG_STOREHOST_V6, 16, 4)
    f["born_at"], f["born_len"] = s + 48, born_len
    f["born_port"] = _be(a, s + 48 + born_len, ">i4")
    at = s + 52 + born_len
    f["store_timestamp"] = _be(a, at, ">i8")
    f["store_at"], f["store_len"] = at + 8, store_len
    f["store_port"] = _be(a, at + 8 + store_len, ">i4")
    at = at + 12 + store_len
    f["reconsume_times"] = _be(a, at, ">i4")
    f["prepared_transaction_offset"] = _be(a, at + 4, ">i8")
    body_len = _be(a, at + 12, ">i4")
    end = s + f["store_size"]
    ok = (body_len >= 0) & (at + 16 + body_len <= end)
    f["body_at"], f["body_len"] = at + 16, body_len
    at = at + 16 + np.maximum(body_len, 0)
    v2 = f["magic"] == MESSAGE_MAGIC_CODE_V2
    topic_len = np.where(v2, _be(a, at, ">i2"), _be(a, at, ">i1"))
    at = at + np.where(v2, 2, 1)
    ok &= (topic_len >= 0) & (at + topic_len <= end)
    f["topic_at"], f["topic_len"] = at, topic_len
    at = at + np.maximum(topic_len, 0)
    props_len = _be(a, at, ">i2")
    stored_props = np.maximum(props_len, 0)
    expected = (_FIXED + body_len + topic_len + stored_props + v2 + np.where(born_len == 16, 12, 0)
                + np.where(store_len == 16, 12, 0))
    ok &= (at + 2 <= end) & (expected == f["store_size"]) & (at + 2 + stored_props == end)
    f["props_at"], f["props_len"], f["ok"] = at + 2, props_len, ok
    return f


def _first_false(mask: np.ndarray) -> int:
    bad = np.flatnonzero(~mask)
    return int(bad[0]) if len(bad) else len(mask)


def _decode(data: bytes, starts: List[int], position: int, file_start_offset: int,
            schema: pa.Schema, file: str) -> Tuple[int, pa.RecordBatch]:
    """The leading records of ``starts`` (offsets into ``data``, which starts at file position
    ``position``) that decode cleanly, as a batch of ``schema`` (the importer's parsed rows)."""
    a = np.frombuffer(data, np.uint8)
    s = np.asarray(starts, np.int64)
    f = _fields(a, s)
    n = _first_false(f["ok"] & (f["commitlog_offset"] == file_start_offset + position + s))
    view = memoryview(data)
    body_at, body_len = f["body_at"][:n].tolist(), f["body_len"][:n].tolist()
    crcs = np.fromiter((zlib.crc32(view[b:b + k]) & 0x7FFFFFFF for b, k in zip(body_at, body_len)),
                       np.int64, n)
    n = _first_false(crcs == f["body_crc"][:n])
    if not np.any((f["sys_flag"][:n] & SYSFLAG_COMPRESSED) & (f["body_len"][:n] > 0)):
        # No compressed body: the stored bytes are the column, copied once (null when empty).
        return n, _batch(a, f, n, data, None, position + s[:n], schema, file)
    bodies = []
    for b, k, flag in zip(body_at[:n], body_len[:n], f["sys_flag"][:n].tolist()):
        stored = bytes(view[b:b + k])
        if flag & SYSFLAG_COMPRESSED and stored:
            try:
                stored = decompress_body(stored, flag)
            except ValueError:   # the slow scanner reports it
                n = len(bodies)
                break
        bodies.append(stored or None)
    return n, _batch(a, f, n, data, bodies, position + s[:n], schema, file)


def _spans(data: bytes, spans: List[Tuple[np.ndarray, np.ndarray]]) -> List[pa.BinaryArray]:
    """For each ``(at, length)`` pair of per-row arrays, ``data[at:at + length]`` per row as one
    binary array. A row's spans lie in order and rows follow each other in ``data``, so the
    spans and the gaps between them are one binary array over ``data`` itself (no copy), from
    which ``take`` copies each field's spans once, in C++ (profiled: slicing per row in Python
    was a third of the parse)."""
    n, k = len(spans[0][0]), len(spans)
    bounds = np.empty((n, 2 * k), np.int64)
    for j, (at, length) in enumerate(spans):
        bounds[:, 2 * j], bounds[:, 2 * j + 1] = at, at + np.maximum(length, 0)
    flat = np.concatenate(([0], bounds.ravel(), [len(data)]))
    if np.any(np.diff(flat) < 0):   # not in order: cannot happen for records that decoded
        view = memoryview(data)
        return [pa.array([bytes(view[p:p + m]) for p, m in zip(at.tolist(), np.maximum(length, 0).tolist())],
                         pa.binary()) for at, length in spans]
    whole = pa.Array.from_buffers(pa.binary(), len(flat) - 1,
                                  [None, pa.py_buffer(flat.astype(np.int32)), pa.py_buffer(data)])
    rows = np.arange(n, dtype=np.int64) * (2 * k)
    return [whole.take(pa.array(rows + 2 * j + 1)) for j in range(k)]


def _nulls(array: pa.Array, valid: np.ndarray) -> pa.Array:
    """``array`` (no nulls yet, from ``_spans``: offset 0) with nulls where ``valid`` is False."""
    if valid.all():
        return array
    mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(array.type, len(array), [mask] + array.buffers()[1:],
                                 null_count=int(len(valid) - valid.sum()))


def _text(raw: pa.BinaryArray) -> pa.Array:
    """Bytes decoded as Java's ``new String(bytes, UTF_8)`` does: as they are when they are valid
    UTF-8 (checked once for the whole array), else row by row with U+FFFD."""
    strings = raw.view(pa.string())
    try:
        strings.validate(full=True)
        return strings
    except pa.ArrowInvalid:
        return pa.array([None if b is None else _decode_text(b) for b in raw.to_pylist()], pa.string())


def _hosts(a: np.ndarray, view: memoryview, at: np.ndarray, length: np.ndarray, port: np.ndarray) -> list:
    """Host texts: IPv4 ones (ip and port are 8 contiguous bytes) formatted once per distinct host."""
    out = np.empty(len(at), object)
    v4 = length == 4
    keys, index = np.unique(_be(a, at[v4], ">i8"), return_inverse=True)
    texts = np.array([_host_text((k >> 32 & 0xFFFFFFFF).to_bytes(4, "big"), (k & 0xFFFFFFFF) - ((k & 0x80000000) << 1))
                      for k in keys.tolist()], object)
    out[v4] = texts[index]
    for i in np.flatnonzero(~v4).tolist():
        out[i] = _host_text(bytes(view[at[i]:at[i] + 16]), int(port[i]))
    return out.tolist()


def _pairs(items: pa.StringArray) -> Tuple[pa.Array, pa.Array, pa.Array]:
    """Which ``items`` are pairs (a non-empty key up to the first separator, then a non-empty
    value, as :func:`string_to_properties` reads them), and their keys and values: cut at the
    separator's byte position inside the items' own buffer (no regular expression)."""
    cut = pc.find_substring(items, NAME_VALUE_SEPARATOR).to_numpy(zero_copy_only=False).astype(np.int64)
    length = pc.binary_length(items).to_numpy(zero_copy_only=False).astype(np.int64)
    keep = (cut > 0) & (cut < length - 1)
    if items.offset or items.null_count:
        items = pa.concat_arrays([items.fill_null("")])   # offsets from 0, no nulls
    start = np.frombuffer(items.buffers()[1], np.int32, len(items) + 1)[:-1].astype(np.int64)
    start, cut, length = start[keep], cut[keep], length[keep]
    names, values = _spans(items.buffers()[2] or b"", [(start, cut), (start + cut + 1, length - cut - 1)])
    return pa.array(keep), names.view(pa.string()), values.view(pa.string())


def _properties(strings: pa.StringArray, map_type: pa.DataType) -> Tuple[pa.Array, pa.Array, pa.Array]:
    """The properties strings parsed as :func:`string_to_properties` does, as a map column, with
    each record's TAGS and KEYS: split with Arrow kernels, not a Python loop per record."""
    items = pc.split_pattern(strings, PROPERTY_SEPARATOR)
    keep, names, values = _pairs(items.flatten())
    parents = pc.list_parent_indices(items).filter(keep)
    if pa.table({"p": parents, "k": names}).group_by(["p", "k"]).aggregate([]).num_rows < len(names):
        # A key twice in one record keeps its first place and its last value: the dict does that.
        dicts = [{} if t is None else string_to_properties(t) for t in strings.to_pylist()]
        counts = [len(d) for d in dicts]
        names = pa.array([k for d in dicts for k in d], pa.string())
        values = pa.array([v for d in dicts for v in d.values()], pa.string())
    else:
        counts = np.bincount(parents.to_numpy(), minlength=len(strings))
    offsets = np.zeros(len(strings) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    mapped = pa.MapArray.from_arrays(pa.array(offsets), names, values, type=map_type, mask=strings.is_null())
    rows = np.repeat(np.arange(len(strings)), np.diff(offsets))

    def pick(key: str) -> pa.Array:
        at = np.full(len(strings), -1, np.int64)
        hit = np.flatnonzero(pc.equal(names, key).to_numpy(zero_copy_only=False))
        at[rows[hit]] = hit
        return values.take(pa.array(at, mask=at < 0))

    return mapped, pick("TAGS"), pick("KEYS")


def _tag_codes(tags: pa.Array) -> pa.Array:
    """Each TAGS value's tag code, computed once per distinct value (0 when absent)."""
    encoded = tags.dictionary_encode()
    codes = pa.array([tags_code(t) for t in encoded.dictionary.to_pylist()], pa.int64())
    return pc.fill_null(codes.take(encoded.indices), 0)


def _msg_ids(a: np.ndarray, view: memoryview, g: Dict[str, np.ndarray], store: list) -> Union[pa.Array, list]:
    """Offset message ids. With IPv4 store hosts the id is the hex of the 8 stored host bytes (IP
    and port) and of the offset, built for all rows at once; IPv6 hosts go through Java's
    ``InetAddress`` rules one distinct host at a time."""
    n = len(store)
    if (g["store_len"] == 4).all():
        raw = np.empty((n, 16), np.uint8)
        raw[:, :8] = a[g["store_at"][:, None] + np.arange(8)]
        raw[:, 8:] = g["commitlog_offset"].astype(">i8").view(np.uint8).reshape(n, 8)
        ends = np.arange(0, 32 * (n + 1), 32, dtype=np.int32)
        hex_digits = binascii.hexlify(raw.tobytes()).upper()
        return pa.StringArray.from_buffers(n, pa.py_buffer(ends), pa.py_buffer(hex_digits))
    prefixes: Dict[str, str] = {}
    return [(prefixes.get(h) or prefixes.setdefault(h, _msg_id_prefix(bytes(view[at:at + k]), port)))
            + f"{physical & _UNSIGNED:016X}"
            for h, at, k, port, physical in zip(store, g["store_at"].tolist(), g["store_len"].tolist(),
                                                g["store_port"].tolist(), g["commitlog_offset"].tolist())]


def _batch(a: np.ndarray, f: Dict[str, np.ndarray], n: int, data: bytes, bodies: Optional[list],
           positions: np.ndarray, schema: pa.Schema, file: str) -> pa.RecordBatch:
    """The batch of the first ``n`` records of ``f``; ``bodies`` None: the stored bytes (none
    is compressed), null when empty."""
    g = {k: v[:n] for k, v in f.items()}
    view = memoryview(data)
    raw_body, raw_topic, raw_props = _spans(data, [(g[f"{k}_at"], g[f"{k}_len"]) for k in ("body", "topic", "props")])
    if bodies is None:
        bodies = _nulls(raw_body, g["body_len"] > 0)
    topic = _text(raw_topic)
    strings = _text(_nulls(raw_props, g["props_len"] > 0))
    properties, tags, keys = _properties(strings, schema.field("properties").type)
    tag_codes = _tag_codes(tags)
    store = _hosts(a, view, g["store_at"], g["store_len"], g["store_port"])
    msg_id = _msg_ids(a, view, g, store)
    columns = {"topic": topic, "tags": tags, "keys": keys,
               "properties": properties, "body": bodies, "store_host": store, "msg_id": msg_id,
               "born_host": _hosts(a, view, g["born_at"], g["born_len"], g["born_port"]),
               "_tags_code": tag_codes, "_kind": ["record"] * n,
               "_file": [file] * n, "_file_position": positions, "_reason": [None] * n}
    arrays = []
    for field in schema:
        value = columns[field.name] if field.name in columns else g[field.name]
        arrays.append(value if isinstance(value, pa.Array) else pa.array(value, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def scan_commitlog_columns(stream, file: str, file_start_offset: int, file_size: int, schema: pa.Schema,
                           chunk_bytes: Optional[int] = None) -> Iterator[Item]:
    """What :func:`.records.scan_commitlog` yields for one file, in the same order, except that
    runs of good records come as ``(count, RecordBatch of schema)``. ``chunk_bytes``: how much
    is read and decoded at a time (default :data:`CHUNK_BYTES`)."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    data, position = b"", 0     # data: the file's bytes from ``position`` not yet decoded
    while True:
        more = _read_exactly(stream, chunk_bytes)
        data += more
        starts, stop, extendable = _walk(data, file_size - position)
        if starts:
            n, batch = _decode(data, starts, position, file_start_offset, schema, file)
            if n:
                yield n, batch
            if n < len(starts):
                stop, extendable = starts[n], False
        if not extendable or not more:
            yield from scan_commitlog(_Prefixed(data[stop:], stream), file, file_start_offset, file_size,
                                      start=position + stop)
            return
        data, position = data[stop:], position + stop
