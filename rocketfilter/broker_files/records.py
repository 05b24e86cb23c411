"""A broker store's files byte for byte: commit-log records and consume-queue units
(SEMANTICS §9.2, §11; the sample store's README). Pure Python (struct, zlib); no Spark.

Decoded records are dicts keyed by the ``COMMITLOG_SCHEMA`` columns, plus raw fields
(``file``, ``file_position``, ``magic_code``, ``version``, ``stored_body``, ``properties_string``,
``born_host_bytes``, ``store_host_bytes``, ``tags_code``).

Column choices, as ``MessageDecoder.decode(readBody, deCompressBody=true, isClient=false)``:
* ``body`` is what a client sees: inflated when the record is compressed; None when empty.
  ``stored_body`` keeps the bytes on disk, which ``body_crc`` covers.
* ``sys_flag`` is the flag **as stored** (compressed bit kept, e.g. 769), so a record can be
  re-encoded byte for byte; Java's decode clears bit 0 (the manifest's ``sysFlag`` 768).
* ``body_crc`` is ``UtilAll.crc32``: CRC32 masked with 0x7FFFFFFF, so never negative.
* ``properties`` is None when the properties length is <= 0, as Java leaves the map null.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, BinaryIO, Dict, Iterator, Mapping, Optional, Union

from rocketfilter.message import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V1,
    MESSAGE_MAGIC_CODE_V2,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_COMPRESSED,
    SYSFLAG_STOREHOST_V6,
    format_host,
    java_utf8_bytes,
    offset_msg_id,
    parse_host,
    properties_to_string,
    record_message_version,
    record_size,
    string_to_properties,
)
# The stored body's CRC and compression live in .body_codec; re-exported here (see __all__).
from rocketfilter.broker_files.body_codec import body_crc, compress_body, compression_type, decompress_body
from rocketfilter.tags import tags_code as _tags_code

__all__ = [
    "CQ_UNIT_SIZE", "MIN_RECORD_SIZE", "PRE_BLANK_SIZE", "CQ_EXT_MAX_ADDR", "Record", "StoreFormatError",
    "Blank", "FileEnd", "decode_record", "scan_commitlog", "iter_commitlog_file", "encode_record",
    "encode_blank", "iter_consumequeue_file", "encode_cq_unit", "check_cq_unit",
    # rocketfilter.broker_files.body_codec
    "body_crc", "compression_type", "compress_body", "decompress_body",
]

CQ_UNIT_SIZE = 20
MIN_RECORD_SIZE = record_size(0, 0, 0)
# ConsumeQueue "pre-blank" filler units and ext addresses (SEMANTICS §11.1, §11.3).
PRE_BLANK_SIZE = 2147483647
CQ_EXT_MAX_ADDR = -2147483649

_HEAD = struct.Struct(">iiiiiqqiq")  # TOTALSIZE .. BORNTIMESTAMP: 48 bytes
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_LONG = struct.Struct(">q")
_CQ_UNIT = struct.Struct(">qiq")

Record = Dict[str, Any]


class StoreFormatError(ValueError):
    """A damaged store file: names the file, the byte offset inside it, and what is wrong."""

    def __init__(self, file: str, byte_offset: int, reason: str) -> None:
        super().__init__(f"{file}: byte {byte_offset}: {reason}")
        self.file = file
        self.byte_offset = byte_offset
        self.reason = reason

    def __reduce__(self):  # picklable with its three fields (it crosses process boundaries)
        return (StoreFormatError, (self.file, self.byte_offset, self.reason))


@dataclass(frozen=True)
class Blank:
    """The end-of-file marker: ``total_size`` bytes from ``file_position`` to the file's end."""

    file: str
    file_position: int
    commitlog_offset: int
    total_size: int


@dataclass(frozen=True)
class FileEnd:
    """Where a commit-log file's data stopped: at a ``blank``, at ``zeros`` (TOTALSIZE 0),
    at ``eof``, or at ``damage`` (a record whose extent cannot be trusted)."""

    file: str
    data_end: int
    ends_with: str


_host_text = lru_cache(maxsize=4096)(format_host)  # hosts repeat across records
_msg_id_prefix = lru_cache(maxsize=4096)(lambda ip, port: offset_msg_id(ip, port, 0)[:-16])


def _decode_text(raw: bytes) -> str:
    # Java's new String(bytes, UTF_8) replaces malformed input with U+FFFD; so does "replace".
    return raw.decode("utf-8", "replace")


def decode_record(rec: bytes, file: str, file_position: int, file_start_offset: int) -> Record:
    """Decode one whole record (``rec`` holds exactly TOTALSIZE bytes whose magic is V1/V2).

    Raises StoreFormatError on inconsistent lengths, a CRC mismatch, a PHYSICALOFFSET that is
    not the record's position, or a body that does not decompress.
    """
    def fail(reason: str) -> StoreFormatError:
        return StoreFormatError(file, file_position, reason)

    total = len(rec)
    (size, magic, crc, queue_id, flag, queue_offset, physical, sys_flag,
     born_ts) = _HEAD.unpack_from(rec, 0)
    try:
        pos = 48
        born_len = 16 if sys_flag & SYSFLAG_BORNHOST_V6 else 4
        born = rec[pos:pos + born_len + 4]
        pos += born_len + 4
        store_ts, = _LONG.unpack_from(rec, pos)
        pos += 8
        store_len = 16 if sys_flag & SYSFLAG_STOREHOST_V6 else 4
        store = rec[pos:pos + store_len + 4]
        pos += store_len + 4
        reconsume, = _INT.unpack_from(rec, pos)
        prepared, = _LONG.unpack_from(rec, pos + 4)
        body_len, = _INT.unpack_from(rec, pos + 12)
        pos += 16
        if body_len < 0 or pos + body_len > total:
            raise fail(f"inconsistent lengths: body length {body_len} in a {total}-byte record")
        stored_body = rec[pos:pos + body_len]
        pos += body_len
        v2 = magic == MESSAGE_MAGIC_CODE_V2
        if v2:
            topic_len, = _SHORT.unpack_from(rec, pos)
            pos += 2
        else:
            topic_len = struct.unpack_from(">b", rec, pos)[0]  # Java reads a signed byte
            pos += 1
        if topic_len < 0 or pos + topic_len > total:
            raise fail(f"inconsistent lengths: topic length {topic_len} in a {total}-byte record")
        topic = _decode_text(rec[pos:pos + topic_len])
        pos += topic_len
        props_len, = _SHORT.unpack_from(rec, pos)
        pos += 2
    except struct.error:
        raise fail(f"inconsistent lengths: fields run past the {total}-byte record") from None
    stored_props_len = max(props_len, 0)
    expected = record_size(body_len, topic_len, stored_props_len, v2=v2,
                           born_ipv6=born_len == 16, store_ipv6=store_len == 16)
    if expected != size or pos + stored_props_len != total:
        raise fail(f"inconsistent lengths: TOTALSIZE {size} but the fields add up to {expected}"
                   f" (body {body_len}, topic {topic_len}, properties {props_len})")
    global_offset = file_start_offset + file_position
    if physical != global_offset:
        raise fail(f"PHYSICALOFFSET {physical} disagrees with the record's position {global_offset}")
    actual_crc = body_crc(stored_body)
    if actual_crc != crc:
        raise fail(f"body CRC mismatch: stored {crc}, computed {actual_crc}")
    body = stored_body
    if sys_flag & SYSFLAG_COMPRESSED and stored_body:
        try:
            body = decompress_body(stored_body, sys_flag)
        except ValueError as exc:
            raise fail(str(exc)) from None
    props_string = _decode_text(rec[pos:pos + props_len]) if props_len > 0 else ""
    properties = string_to_properties(props_string) if props_len > 0 else None
    tags = properties.get("TAGS") if properties else None
    born_port, = _INT.unpack_from(born, born_len)
    store_port, = _INT.unpack_from(store, store_len)
    return {
        "file": file, "file_position": file_position, "magic_code": magic, "version": 2 if v2 else 1,
        "commitlog_offset": physical, "store_size": size, "topic": topic, "queue_id": queue_id,
        "queue_offset": queue_offset, "tags": tags,
        "keys": properties.get("KEYS") if properties else None,
        "properties": properties, "body": body or None, "body_crc": crc, "flag": flag,
        "sys_flag": sys_flag, "born_timestamp": born_ts,
        "born_host": _host_text(born[:born_len], born_port), "store_timestamp": store_ts,
        "store_host": _host_text(store[:store_len], store_port), "reconsume_times": reconsume,
        "prepared_transaction_offset": prepared,
        "msg_id": _msg_id_prefix(store[:store_len], store_port) + f"{physical & 0xFFFFFFFFFFFFFFFF:016X}",
        "stored_body": stored_body, "properties_string": props_string,
        "born_host_bytes": born, "store_host_bytes": store, "tags_code": _tags_code(tags),
    }


def _read_exactly(stream: BinaryIO, n: int) -> bytes:
    chunks = []
    while n > 0:
        chunk = stream.read(n)
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def scan_commitlog(stream: BinaryIO, file: str, file_start_offset: int, file_size: int, start: int = 0,
                   ) -> Iterator[Union[Record, Blank, FileEnd, StoreFormatError]]:
    """Walk one commit-log file from a binary stream, reading record by record (memory stays
    at one record however large the file). Yields records, the Blank marker, damage as
    StoreFormatError items, and finally a FileEnd. After damage that leaves the record's
    extent known (CRC, PHYSICALOFFSET, decompression) the walk goes on; after a bad magic
    code, a truncated record or inconsistent lengths it stops, as the broker's recovery does.
    ``start``: the file position the stream is at (a walk resumed mid-file)."""
    pos = start
    while True:
        head = _read_exactly(stream, 8)
        if len(head) < 8:
            if head.strip(b"\0"):
                yield StoreFormatError(file, pos, f"truncated record: {len(head)} bytes before the end of the file")
                yield FileEnd(file, pos, "damage")
            else:
                yield FileEnd(file, pos, "eof" if not head else "zeros")
            return
        size, magic = struct.unpack(">ii", head)
        left = file_size - pos
        if magic in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2):
            if size < MIN_RECORD_SIZE or size > left:
                what = "past the end of the file" if size > left else "below the minimum"
                yield StoreFormatError(file, pos, f"truncated record: TOTALSIZE {size} runs {what}"
                                                  f" ({left} bytes left in a {file_size}-byte file)")
                yield FileEnd(file, pos, "damage")
                return
            rest = _read_exactly(stream, size - 8)
            if len(rest) < size - 8:
                yield StoreFormatError(file, pos, f"truncated record: TOTALSIZE {size} but the file"
                                                  f" ends {len(rest) + 8} bytes after its start")
                yield FileEnd(file, pos, "damage")
                return
            try:
                yield decode_record(head + rest, file, pos, file_start_offset)
            except StoreFormatError as exc:
                yield exc
                if exc.reason.startswith("inconsistent lengths"):
                    yield FileEnd(file, pos, "damage")
                    return
            pos += size
        elif magic == BLANK_MAGIC_CODE:
            if size != left:
                yield StoreFormatError(file, pos, f"blank marker of {size} bytes does not reach the"
                                                  f" end of the file ({left} bytes left)")
                yield FileEnd(file, pos, "damage")
                return
            yield Blank(file, pos, file_start_offset + pos, size)
            yield FileEnd(file, pos, "blank")
            return
        elif size == 0 and magic == 0:
            yield FileEnd(file, pos, "zeros")
            return
        else:
            yield StoreFormatError(file, pos, f"bad magic code 0x{magic & 0xFFFFFFFF:08X} at byte"
                                              f" {pos + 4} (TOTALSIZE {size})")
            yield FileEnd(file, pos, "damage")
            return


def iter_commitlog_file(data: bytes, file_name: str, file_start_offset: int,
                        ) -> Iterator[Union[Record, Blank]]:
    """Records and the end-of-file Blank of one commit-log file held in memory; raises
    StoreFormatError on the first damage."""
    import io

    for item in scan_commitlog(io.BytesIO(data), file_name, file_start_offset, len(data)):
        if isinstance(item, StoreFormatError):
            raise item
        if not isinstance(item, FileEnd):
            yield item


def encode_record(*, topic: str, queue_id: int, queue_offset: int, commitlog_offset: int,
                  body: Optional[bytes] = None, properties: Optional[Mapping[str, str]] = None,
                  properties_string: Optional[str] = None, stored_body: Optional[bytes] = None,
                  flag: int = 0, sys_flag: int = 0, born_timestamp: int = 0,
                  born_host: Union[str, bytes] = "127.0.0.1:0", store_timestamp: int = 0,
                  store_host: Union[str, bytes] = "127.0.0.1:10911", reconsume_times: int = 0,
                  prepared_transaction_offset: int = 0, body_crc_value: Optional[int] = None,
                  version: Optional[int] = None, **_ignored: Any) -> bytes:
    """Encode one record as ``MessageExtEncoder`` does (the inverse of :func:`decode_record`).

    Hosts are ``"ip:port"`` text or the stored IP+port bytes (8 or 20); the IPv6 sysflag bits
    follow the hosts. ``stored_body`` is written as is; otherwise ``body`` is compressed when
    sys_flag's bit 0 is set. ``properties_string`` wins over ``properties``. ``version`` None
    picks V1/V2 from the topic. ``body_crc_value`` overrides the CRC (to build damaged data).
    Extra keys are ignored, so a decoded record round-trips: ``encode_record(**record)``.
    """
    def host(h: Union[str, bytes]) -> bytes:
        if isinstance(h, str):
            ip, port = parse_host(h)
            return ip + _INT.pack(port)
        if len(h) not in (8, 20):
            raise ValueError(f"a stored host has 8 or 20 bytes, not {len(h)}")
        return bytes(h)

    born, store = host(born_host), host(store_host)
    sys_flag = (sys_flag & ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)
                | (SYSFLAG_BORNHOST_V6 if len(born) == 20 else 0)
                | (SYSFLAG_STOREHOST_V6 if len(store) == 20 else 0))
    if stored_body is None:
        stored_body = body or b""
        if sys_flag & SYSFLAG_COMPRESSED and stored_body:
            stored_body = compress_body(stored_body, sys_flag)
    if properties_string is None:
        properties_string = properties_to_string(properties)
    topic_bytes = java_utf8_bytes(topic)
    props_bytes = java_utf8_bytes(properties_string)
    version = version or record_message_version(topic)
    if len(topic_bytes) > (127 if version == 1 else 32767) or len(props_bytes) > 32767:
        raise ValueError("topic or properties too long for the record's length fields")
    v2 = version == 2
    size = record_size(len(stored_body), len(topic_bytes), len(props_bytes), v2=v2,
                       born_ipv6=len(born) == 20, store_ipv6=len(store) == 20)
    crc = body_crc(stored_body) if body_crc_value is None else body_crc_value
    return b"".join([
        _HEAD.pack(size, MESSAGE_MAGIC_CODE_V2 if v2 else MESSAGE_MAGIC_CODE_V1, crc, queue_id,
                   flag, queue_offset, commitlog_offset, sys_flag, born_timestamp),
        born, _LONG.pack(store_timestamp), store,
        struct.pack(">iqi", reconsume_times, prepared_transaction_offset, len(stored_body)),
        stored_body,
        _SHORT.pack(len(topic_bytes)) if v2 else bytes([len(topic_bytes)]), topic_bytes,
        _SHORT.pack(len(props_bytes)), props_bytes,
    ])


def encode_blank(total_size: int) -> bytes:
    """The 8-byte end-of-file marker covering ``total_size`` bytes (the rest stays zero)."""
    return struct.pack(">ii", total_size, BLANK_MAGIC_CODE)


def iter_consumequeue_file(data: bytes, file_name: str, file_start_offset: int,
                           ) -> Iterator[Dict[str, Any]]:
    """The units of one consume-queue file: ``queue_offset`` (file start / 20 + index),
    ``commitlog_offset``, ``size``, ``tags_code`` (None for a CQ-ext address), ``file``,
    ``file_position``. Stops at the first all-zero unit (the zeroed tail); skips
    pre-blank filler units; raises StoreFormatError on a partial or invalid unit."""
    if file_start_offset % CQ_UNIT_SIZE:
        raise StoreFormatError(file_name, 0, f"file start {file_start_offset} is not a multiple of {CQ_UNIT_SIZE}")
    first = file_start_offset // CQ_UNIT_SIZE
    for pos in range(0, len(data), CQ_UNIT_SIZE):
        if pos + CQ_UNIT_SIZE > len(data):
            if data[pos:].strip(b"\0"):
                raise StoreFormatError(file_name, pos, f"truncated unit: {len(data) - pos} of {CQ_UNIT_SIZE} bytes")
            return
        offset, size, tags = _CQ_UNIT.unpack_from(data, pos)
        if offset == 0 and size == 0 and tags == 0:
            return
        if offset == 0 and size == PRE_BLANK_SIZE and tags == 0:
            continue
        if offset < 0 or size <= 0:
            raise StoreFormatError(file_name, pos, f"invalid unit: commit-log offset {offset}, size {size}")
        yield {"queue_offset": first + pos // CQ_UNIT_SIZE, "commitlog_offset": offset, "size": size,
               "tags_code": None if tags <= CQ_EXT_MAX_ADDR else tags,
               "file": file_name, "file_position": pos}


def encode_cq_unit(commitlog_offset: int, size: int, tags_code: int) -> bytes:
    """One 20-byte consume-queue unit."""
    return _CQ_UNIT.pack(commitlog_offset, size, tags_code)


def check_cq_unit(unit: Mapping[str, Any], record: Optional[Mapping[str, Any]], *,
                  topic: str, queue_id: int, commitlog_end: int) -> Optional[str]:
    """Why a unit of queue (topic, queue_id) disagrees with the record at its commit-log offset
    (None when it agrees). ``record`` is None when no record starts there; ``commitlog_end``
    is where the commit log's data ends. Delayed-message queues store a delivery time in
    the tags slot, so the tags code is not compared for SCHEDULE_TOPIC_XXXX."""
    offset = unit["commitlog_offset"]
    if record is None:
        if offset >= commitlog_end:
            return f"points past the end of the commit log: offset {offset}, data ends at {commitlog_end}"
        return f"no record starts at commit-log offset {offset}"
    if unit["size"] != record["store_size"]:
        return f"size {unit['size']} disagrees with the record's TOTALSIZE {record['store_size']} at offset {offset}"
    if (record["topic"], record["queue_id"]) != (topic, queue_id):
        return (f"record at offset {offset} belongs to {record['topic']}/{record['queue_id']},"
                f" not {topic}/{queue_id}")
    if record["queue_offset"] != unit["queue_offset"]:
        return (f"queue offset {unit['queue_offset']} disagrees with the record's"
                f" QUEUEOFFSET {record['queue_offset']} at offset {offset}")
    expected = record.get("tags_code", _tags_code(record.get("tags")))
    if unit["tags_code"] is not None and topic != "SCHEDULE_TOPIC_XXXX" and unit["tags_code"] != expected:
        return f"tags code {unit['tags_code']} disagrees with the record's {expected} at offset {offset}"
    return None
