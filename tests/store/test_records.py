"""The pure-Python store codec against the real-format sample store (tests/data) and its manifest."""
from __future__ import annotations

import base64
import io
import struct
from typing import Dict, List

import pytest

from rocketfilter.message import (
    decode_offset_msg_id,
    format_host,
    offset_msg_id,
    parse_host,
    record_message_version,
    record_size,
    uses_message_version_v2,
)
from rocketfilter.broker_files.records import (
    Blank,
    FileEnd,
    StoreFormatError,
    check_cq_unit,
    decode_record,
    encode_blank,
    encode_cq_unit,
    encode_record,
    iter_commitlog_file,
    iter_consumequeue_file,
    scan_commitlog,
)



@pytest.fixture(scope="module")
def records(sample) -> Dict[int, dict]:
    """Every record of the sample, by commit-log offset."""
    out = {}
    for path in sorted((sample / "commitlog").iterdir()):
        for item in iter_commitlog_file(path.read_bytes(), f"commitlog/{path.name}", int(path.name)):
            if isinstance(item, dict):
                out[item["commitlog_offset"]] = item
    return out


def expected_fields(m: dict) -> dict:
    """A manifest message in the decoder's field names (sys_flag as stored, body inflated)."""
    host = lambda h: f"{h['ip']}:{h['port']}" if not h["ipv6"] else f"[{h['ip']}]:{h['port']}"  # noqa: E731
    return {
        "file": m["file"], "file_position": m["filePosition"], "magic_code": m["magicCode"],
        "commitlog_offset": m["commitLogOffset"], "store_size": m["storeSize"], "topic": m["topic"],
        "queue_id": m["queueId"], "queue_offset": m["queueOffset"], "tags": m["tags"], "keys": m["keys"],
        "properties": m["properties"], "properties_string": m["propertiesString"],
        "body": base64.b64decode(m["body_b64"]) if m["body_b64"] is not None else None,
        "body_crc": m["bodyCRC"], "flag": m["flag"], "sys_flag": m["storedSysFlag"],
        "born_timestamp": m["bornTimestamp"], "born_host": host(m["bornHost"]),
        "store_timestamp": m["storeTimestamp"], "store_host": host(m["storeHost"]),
        "reconsume_times": m["reconsumeTimes"], "prepared_transaction_offset": m["preparedTransactionOffset"],
        "msg_id": m["msgId"], "tags_code": m["cq_tagsCode"],
    }


def test_every_manifest_message_decodes_to_its_fields(manifest, records):
    messages = manifest["message"]
    assert len(messages) == len(records) == 2997
    wrong: List[str] = []
    for m in messages:
        rec = records[m["commitLogOffset"]]
        for key, value in expected_fields(m).items():
            if rec[key] != value:
                wrong.append(f"{m['commitLogOffset']} {key}: {rec[key]!r} != {value!r}")
        if rec["born_host_bytes"].hex().upper() != m["bornHost"]["bytes_hex"]:
            wrong.append(f"{m['commitLogOffset']} born_host_bytes")
        if rec["store_host_bytes"].hex().upper() != m["storeHost"]["bytes_hex"]:
            wrong.append(f"{m['commitLogOffset']} store_host_bytes")
        stored = m.get("storedBody_b64")
        if stored is not None and rec["stored_body"] != base64.b64decode(stored):
            wrong.append(f"{m['commitLogOffset']} stored_body")
        if m["msgId"] != m["offsetMsgId"] or len(rec["stored_body"]) != m["storedBodyLength"]:
            wrong.append(f"{m['commitLogOffset']} msgId/storedBodyLength")
    assert not wrong, wrong[:20]
    # The sample's special cases really were exercised.
    assert sum(1 for m in messages if m["storedSysFlag"] & 1) == 30
    assert any(m["bornHost"]["ipv6"] for m in messages) and any(m["storeHost"]["ipv6"] for m in messages)
    assert any(m["body_b64"] is None for m in messages)


def test_blanks_and_file_ends_match_the_manifest(sample, manifest):
    blanks = {(b["file"], b["filePosition"]): b["totalSize"] for b in manifest["blank"]}
    files = {f["file"]: f for f in manifest["commitlog_file"]}
    found = {}
    for path in sorted((sample / "commitlog").iterdir()):
        name, data = f"commitlog/{path.name}", path.read_bytes()
        items = list(scan_commitlog(io.BytesIO(data), name, int(path.name), len(data)))
        end = items[-1]
        assert isinstance(end, FileEnd) and not any(isinstance(i, StoreFormatError) for i in items)
        want = files[name]
        assert (end.data_end, end.ends_with) == (want["dataEnd"], want["ends_with"])
        assert sum(isinstance(i, dict) for i in items) == want["messages"]
        found.update({(b.file, b.file_position): b.total_size for b in items if isinstance(b, Blank)})
    assert found == blanks and len(found) == 95


def test_records_round_trip_byte_for_byte(sample, records):
    by_file: Dict[str, bytes] = {}
    for rec in records.values():
        data = by_file.setdefault(rec["file"], (sample / rec["file"]).read_bytes())
        raw = data[rec["file_position"]:rec["file_position"] + rec["store_size"]]
        assert encode_record(**rec) == raw, rec["commitlog_offset"]


@pytest.mark.parametrize("case", [
    dict(topic="T" * 200, born_host="[2001:db8::1]:5", store_host="[::1]:10911"),  # V2, two IPv6 hosts
    dict(topic="t", body=b"x" * 5000, sys_flag=0x301, properties={"TAGS": "a", "KEYS": "k1 k2"}),  # zlib
    dict(topic="t", body=b"lz4 body " * 300, sys_flag=0x101),
    dict(topic="t", body=b"zstd body " * 300, sys_flag=0x201),
    dict(topic="t", body=b"4.x zlib " * 50, sys_flag=0x1),  # compression type 0 = zlib
    dict(topic="t", body=b"", properties=None),
    dict(topic="温度" * 30, properties={"温": "度"}, born_host="[::ffff:10.1.2.3]:7"),
], ids=["v2-ipv6", "zlib", "lz4", "zstd", "zlib-4x", "empty", "utf8-topic-mapped-v4"])
def test_synthetic_records_round_trip(case):
    raw = encode_record(queue_id=3, queue_offset=7, commitlog_offset=1000, born_timestamp=1,
                        store_timestamp=2, **case)
    rec = decode_record(raw, "commitlog/x", 1000, 0)
    assert rec["topic"] == case["topic"] and rec["store_size"] == len(raw)
    assert rec["body"] == (case.get("body") or None)
    assert rec["properties"] == (case.get("properties") or None)
    assert encode_record(**rec) == raw
    assert rec["version"] == record_message_version(case["topic"])


def test_consume_queue_units_match_the_manifest(sample, manifest, records):
    expected = {(e["file"], e["filePosition"]): e for e in manifest["cq_entry"]}
    end = max(r["commitlog_offset"] + r["store_size"] for r in records.values())
    seen = 0
    for path in sorted(p for p in (sample / "consumequeue").rglob("*") if p.is_file()):
        name = path.relative_to(sample).as_posix()
        _, topic, queue_id, _ = name.split("/")
        for unit in iter_consumequeue_file(path.read_bytes(), name, int(path.name)):
            e = expected[(name, unit["file_position"])]
            assert (unit["queue_offset"], unit["commitlog_offset"], unit["size"], unit["tags_code"]) == (
                e["queueOffset"], e["commitLogOffset"], e["size"], e["tagsCode"])
            assert (e["topic"], e["queueId"]) == (topic, int(queue_id))
            assert check_cq_unit(unit, records.get(unit["commitlog_offset"]), topic=topic,
                                 queue_id=int(queue_id), commitlog_end=end) is None
            seen += 1
    assert seen == len(expected) == 2997


# ----------------------------------------------------------------------------- damage

def first_error(data: bytes, name: str, start: int) -> StoreFormatError:
    with pytest.raises(StoreFormatError) as info:
        list(iter_commitlog_file(data, name, start))
    return info.value


@pytest.fixture(scope="module")
def victim(sample, records):
    """A record in the middle of a file: (name, start, data, record)."""
    rec = next(r for r in records.values() if r["file_position"] > 0 and r["file"].endswith("0065536"))
    return rec["file"], 65536, bytearray((sample / rec["file"]).read_bytes()), rec


def test_flipped_magic_byte_names_file_and_record_offset(victim):
    name, start, data, rec = victim
    data = bytearray(data)
    data[rec["file_position"] + 5] ^= 0xFF
    err = first_error(bytes(data), name, start)
    assert (err.file, err.byte_offset) == (name, rec["file_position"])
    assert "bad magic code" in err.reason and name in str(err) and str(rec["file_position"]) in str(err)


def test_truncated_file_names_the_cut_record(victim):
    name, start, data, rec = victim
    cut = bytes(data[:rec["file_position"] + rec["store_size"] // 2])
    err = first_error(cut, name, start)
    assert (err.file, err.byte_offset) == (name, rec["file_position"])
    assert err.reason.startswith("truncated record")


def test_corrupt_body_byte_is_a_crc_mismatch(victim):
    name, start, data, rec = victim
    data = bytearray(data)
    body_at = rec["store_size"] - 2 - len(rec["properties_string"].encode()) - 1 - len(rec["topic"]) - 1
    data[rec["file_position"] + body_at] ^= 0x01  # the stored body's last byte
    err = first_error(bytes(data), name, start)
    assert (err.file, err.byte_offset) == (name, rec["file_position"])
    assert "CRC mismatch" in err.reason
    # The walk goes on past a CRC mismatch: every other record of the file still decodes.
    items = list(scan_commitlog(io.BytesIO(bytes(data)), name, start, len(data)))
    assert sum(isinstance(i, StoreFormatError) for i in items) == 1
    assert isinstance(items[-1], FileEnd) and items[-1].ends_with == "blank"


def test_physical_offset_must_match_the_position(victim):
    name, start, data, rec = victim
    err = first_error(bytes(data), name, start + 8)  # the file claims another start offset
    assert err.byte_offset == 0 and "PHYSICALOFFSET" in err.reason


def test_inconsistent_lengths_and_bad_blank():
    raw = encode_record(topic="t", queue_id=0, queue_offset=0, commitlog_offset=0, body=b"abc")
    bad = bytearray(raw)
    struct.pack_into(">i", bad, 84, 4)  # body length 4 instead of 3
    err = first_error(bytes(bad) + bytes(64), "commitlog/0", 0)
    assert err.byte_offset == 0 and err.reason.startswith("inconsistent lengths")
    short_blank = raw + encode_blank(50) + bytes(100 - 8)  # says 50 bytes, 100 are left
    err = first_error(short_blank, "commitlog/0", 0)
    assert err.byte_offset == len(raw) and "does not reach the end" in err.reason


def test_consume_queue_damage():
    rec = {"store_size": 120, "topic": "T", "queue_id": 1, "queue_offset": 4, "tags_code": 7}
    unit = {"commitlog_offset": 500, "size": 120, "tags_code": 7, "queue_offset": 4}
    assert check_cq_unit(unit, rec, topic="T", queue_id=1, commitlog_end=1000) is None
    assert "past the end" in check_cq_unit({**unit, "commitlog_offset": 5000}, None, topic="T",
                                           queue_id=1, commitlog_end=1000)
    assert "no record starts" in check_cq_unit(unit, None, topic="T", queue_id=1, commitlog_end=1000)
    assert "size" in check_cq_unit({**unit, "size": 121}, rec, topic="T", queue_id=1, commitlog_end=1000)
    assert "tags code" in check_cq_unit({**unit, "tags_code": 8}, rec, topic="T", queue_id=1, commitlog_end=1000)
    assert "belongs to" in check_cq_unit(unit, rec, topic="T", queue_id=2, commitlog_end=1000)
    assert check_cq_unit({**unit, "tags_code": 8}, {**rec, "topic": "SCHEDULE_TOPIC_XXXX"},
                         topic="SCHEDULE_TOPIC_XXXX", queue_id=1, commitlog_end=1000) is None
    data = encode_cq_unit(0, 2147483647, 0) + encode_cq_unit(500, 120, 7) + bytes(5)
    units = []
    with pytest.raises(StoreFormatError) as info:
        units.extend(iter_consumequeue_file(data + b"\x01", "consumequeue/T/1/00000000000000000060", 60))
    assert [u["queue_offset"] for u in units] == [4]  # the pre-blank unit at offset 3 is skipped
    assert info.value.byte_offset == 40 and "truncated unit" in info.value.reason
    with pytest.raises(StoreFormatError, match="invalid unit"):
        list(iter_consumequeue_file(encode_cq_unit(-1, 5, 0), "q", 0))


# ----------------------------------------------------------------------------- message helpers

def test_record_size_and_version_rule():
    assert record_size(92, 9, 113) == 305
    assert record_size(0, 200, 0, v2=True, born_ipv6=True, store_ipv6=True) == 91 + 200 + 1 + 24
    assert not uses_message_version_v2("a" * 127) and uses_message_version_v2("a" * 128)
    assert uses_message_version_v2("😀" * 64)  # 128 UTF-16 units: Java's length()
    assert not uses_message_version_v2("a" * 200, auto_message_version_on_topic_len=False)
    assert not uses_message_version_v2("é" * 100) and record_message_version("é" * 100) == 2
    assert record_message_version("TopicTest") == 1


def test_hosts_and_offset_msg_ids(manifest):
    for m in manifest["message"][:400]:
        h = m["storeHost"]
        ip = bytes.fromhex(h["bytes_hex"])[:-4]
        assert offset_msg_id(ip, h["port"], m["commitLogOffset"]) == m["msgId"]
        text = format_host(ip, h["port"])
        assert offset_msg_id(text, None, m["commitLogOffset"]) == m["msgId"]
        assert parse_host(text) == (ip, h["port"])
        assert decode_offset_msg_id(m["msgId"]) == (text, m["commitLogOffset"])
    ipv6 = bytes.fromhex("20010DB800000000000000000000000A")
    assert format_host(ipv6, 10911) == "[2001:db8:0:0:0:0:0:a]:10911"
    assert parse_host("[2001:db8::a]:10911") == (ipv6, 10911) == parse_host("2001:db8::a", 10911)
    assert format_host(bytes(10) + b"\xff\xff\x0a\x00\x00\x01", 80) == "10.0.0.1:80"  # Java's Inet4Address
    assert len(offset_msg_id("[::1]:1", None, 0)) == 56
    with pytest.raises(ValueError):
        parse_host("2001:db8::a")  # no port
