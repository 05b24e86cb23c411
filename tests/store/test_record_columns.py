"""The import's fast commit-log decoder (runs of records into Arrow columns) gives the very rows
of the per-record decoder, the reference, on good files and on every kind of damage."""
from __future__ import annotations

import io
import random
import struct
import zlib

import pyarrow as pa
import pytest

from rocketfilter.broker_files import record_columns
from rocketfilter.broker_files.import_parse import commitlog_batches
from rocketfilter.broker_files.records import encode_blank, encode_record
from rocketfilter.message import MESSAGE_MAGIC_CODE_V2, NAME_VALUE_SEPARATOR as KV, PROPERTY_SEPARATOR as SEP
from rocketfilter.store.importer import PARSED_COMMITLOG_SCHEMA
from rocketfilter.store.schema import arrow_schema

SCHEMA = arrow_schema(PARSED_COMMITLOG_SCHEMA)
START = 1 << 20   # the file's global offset
LZ4 = 2 << 8      # sys_flag's compression-type bits


def _rows(data: bytes, fast: bool, size: int = None) -> pa.Table:
    batches = list(commitlog_batches(io.BytesIO(data), "commitlog/f", START, len(data) if size is None else size,
                                     SCHEMA, fast=fast))
    return pa.Table.from_batches(batches, SCHEMA)


def _assert_same(data: bytes, size: int = None) -> pa.Table:
    fast, slow = _rows(data, True, size), _rows(data, False, size)
    assert fast.schema == slow.schema
    for name in slow.column_names:
        assert fast[name].to_pylist() == slow[name].to_pylist(), name
    return fast


def _properties(rng: random.Random) -> str:
    """A properties string, odd ones included: no pairs, empty keys or values, a value holding
    the pair separator, non-ASCII text; a key twice in one in five files (a file's chunk with
    one takes another way)."""
    items = []
    names = ["TAGS", "KEYS", "a", "ä", "", "dup", "UNIQ_KEY"]
    picked = [rng.choice(names) for _ in range(6)] if rng.random() < 0.2 else rng.sample(names, 6)
    for key in picked[:rng.randint(0, 6)]:
        value = rng.choice(["x", "", f"v{rng.randint(0, 9)}", f"p{KV}q", "😀", "Tag1||Tag2"])
        items.append(rng.choice([f"{key}{KV}{value}", key, f"{key}{KV}"]))
    return SEP.join(items) + rng.choice(["", SEP])


def _record(rng: random.Random, position: int, n: int, **overrides) -> bytes:
    sys_flag = rng.choice([0, 0, 0x1, 0x1 | LZ4, 0x10, 0x20, 0x30])
    args = dict(
        topic=rng.choice(["T", "TopicA", "%RETRY%G", "ü" * 3, "x" * 130]), queue_id=rng.randint(0, 7),
        queue_offset=n, commitlog_offset=START + position, flag=rng.randint(-2, 9), sys_flag=sys_flag,
        body=rng.choice([b"", b"body", bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))]),
        properties_string=_properties(rng), born_timestamp=rng.randint(0, 2 ** 41),
        store_timestamp=rng.randint(0, 2 ** 41), reconsume_times=rng.randint(0, 3),
        prepared_transaction_offset=rng.randint(-1, 10 ** 6),
        born_host=rng.choice(["10.0.0.1:12345", "[2001:db8:0:0:0:0:0:1]:7", "127.0.0.1:-5"]),
        store_host=rng.choice(["192.168.1.10:10911", "[fe80:0:0:0:0:0:0:1]:10911"]))
    if sys_flag & 0x30:   # the IPv6 bits follow the hosts
        args.update(born_host="[2001:db8:0:0:0:0:0:1]:7", store_host="[fe80:0:0:0:0:0:0:1]:10911")
    else:
        args.update(born_host="10.0.0.1:12345", store_host="192.168.1.10:10911")
    args.update(overrides)
    return encode_record(**args)


def _file(rng: random.Random, count: int, tail: str = "blank", file_size: int = None) -> bytes:
    out, position = [], 0
    for n in range(count):
        rec = _record(rng, position, n)
        out.append(rec)
        position += len(rec)
    data = b"".join(out)
    if tail == "blank":
        size = file_size or position + 64
        return data + encode_blank(size - position) + bytes(size - position - 8)
    if tail == "zeros":
        return data + bytes(32)
    return data


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("tail", ["blank", "zeros", "eof"])
def test_good_files_decode_alike(seed, tail, monkeypatch):
    """Records of every shape, across chunk ends (small chunks), and each way a file ends."""
    monkeypatch.setattr(record_columns, "CHUNK_BYTES", 1 + seed * 700)
    rng = random.Random(seed)
    table = _assert_same(_file(rng, 60, tail))
    assert table.column("_kind").to_pylist().count("record") == 60


def test_properties_with_duplicate_keys_keep_first_place_and_last_value():
    rng = random.Random(7)
    props = f"b{KV}1{SEP}a{KV}2{SEP}b{KV}3"
    data = _record(rng, 0, 0, properties_string=props, sys_flag=0)
    table = _assert_same(data)
    assert table.column("properties").to_pylist()[0] == [("b", "3"), ("a", "2")]


def test_invalid_utf8_in_topic_and_properties_is_replaced_alike():
    rng = random.Random(3)
    rec = bytearray(_record(rng, 0, 0, topic="TT", properties_string=f"k{KV}vv", sys_flag=0, body=b""))
    at = rec.index(b"TT")
    rec[at] = 0xFF                          # the topic
    rec[rec.index(b"vv")] = 0xC3            # a truncated two-byte sequence in a value
    table = _assert_same(bytes(rec))
    assert table.column("topic").to_pylist()[0] == "\ufffdT"


@pytest.mark.parametrize("seed", range(4))
def test_uncompressed_ipv4_runs_are_built_from_buffers_alike(seed, monkeypatch):
    """A chunk with no compressed body and only IPv4 hosts builds bodies, topics, properties and
    message ids from the file's bytes in one go; empty bodies and properties are null, a key
    twice in a record and invalid UTF-8 are still read as the per-record decoder reads them."""
    rng = random.Random(seed)
    records, position = [], 0
    for n in range(300):
        extra = dict(sys_flag=0, born_host="10.0.0.1:12345", store_host=rng.choice(["192.168.1.10:10911", "10.1.2.3:1"]))
        if n % 50 == 7:
            extra.update(body=b"", properties_string="")
        rec = bytearray(_record(rng, position, n, **extra))
        if seed == 3 and n == 123:
            rec[-3] = 0xFF      # inside the properties: invalid UTF-8
        records.append(bytes(rec))
        position += len(rec)
    built = []
    batch = record_columns._batch
    monkeypatch.setattr(record_columns, "_batch", lambda *a: built.append(a[4] is None) or batch(*a))
    table = _assert_same(b"".join(records) + encode_blank(64) + bytes(56))
    assert built == [True]   # one chunk, its bodies taken from the buffer
    assert table.column("_kind").to_pylist().count("record") == 300
    assert table.column("body").to_pylist()[7] is None


def test_spans_out_of_order_are_cut_one_by_one():
    """Spans not in buffer order (never so for decoded records) are still cut right."""
    import numpy as np

    cut = record_columns._spans(b"abcdef", [(np.array([3, 0]), np.array([2, 2])), (np.array([5, 1]), np.array([1, 0]))])
    assert [c.to_pylist() for c in cut] == [[b"de", b"ab"], [b"f", b""]]


def _damaged(kind: str) -> bytes:
    """Twenty good records with damage of ``kind`` at the eleventh."""
    rng = random.Random(kind)
    out, position = [], 0
    for n in range(20):
        extra = dict(body=b"body-ten", sys_flag=0) if n == 10 else {}
        if n == 10 and kind == "crc":
            extra = dict(body_crc_value=12345)
        if n == 10 and kind == "physical":
            extra = dict(commitlog_offset=START + position + 1)
        if n == 10 and kind == "inflate":
            extra = dict(sys_flag=0x1, stored_body=b"not zlib data")
        rec = bytearray(_record(rng, position, n, **extra))
        if n == 10 and kind == "lengths":
            struct.pack_into(">i", rec, 0, len(rec) + 4)   # TOTALSIZE 4 bytes more than its fields
            rec += bytes(4)
        if n == 10 and kind == "magic":
            struct.pack_into(">i", rec, 4, 0x12345678)
        if n == 10 and kind == "body_length":
            body_at = rec.index(b"body-ten") - 4
            struct.pack_into(">i", rec, body_at, 10 ** 6)
        if n == 10 and kind == "v2_topic_length":
            struct.pack_into(">i", rec, 4, MESSAGE_MAGIC_CODE_V2)
        out.append(bytes(rec))
        position += len(rec)
        if n == 10 and kind == "truncated":
            return b"".join(out)[:-7]
    return b"".join(out) + encode_blank(64) + bytes(56)


@pytest.mark.parametrize("kind", ["crc", "physical", "inflate", "lengths", "magic", "body_length",
                                  "v2_topic_length", "truncated"])
def test_damage_is_reported_alike(kind, monkeypatch):
    """The first record the fast path cannot vouch for, and the rest of the file, go to the
    per-record decoder: the same damage rows, the same records after recoverable damage."""
    monkeypatch.setattr(record_columns, "CHUNK_BYTES", 2000)
    table = _assert_same(_damaged(kind))
    assert "error" in table.column("_kind").to_pylist()


def test_a_record_running_past_the_listed_file_size_is_damage_alike():
    data = _file(random.Random(5), 8, "eof")
    _assert_same(data, size=len(data) - 10)


def test_a_record_larger_than_a_chunk(monkeypatch):
    monkeypatch.setattr(record_columns, "CHUNK_BYTES", 64)
    rng = random.Random(11)
    big = _record(rng, 0, 0, body=bytes(range(256)) * 40, sys_flag=0)
    rest = _record(rng, len(big), 1, sys_flag=0)
    table = _assert_same(big + rest + bytes(16))
    assert table.column("body").to_pylist()[0] == bytes(range(256)) * 40
    assert zlib.crc32(table.column("body").to_pylist()[0]) & 0x7FFFFFFF == table.column("body_crc").to_pylist()[0]
