"""The message properties string (SEMANTICS §9.1) both ways, in Python (as Spark Columns:
:mod:`rocketfilter.message_columns`), and the commit-log record helpers.

The broker never sees a producer's property map directly: the map is serialised, stored as UTF-8
and parsed back. :func:`normalize_properties` reproduces that trip, which is what a selector
evaluated on the broker actually sees.
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Union

NAME_VALUE_SEPARATOR = "\u0001"
PROPERTY_SEPARATOR = "\u0002"


def java_utf8_bytes(s: str) -> bytes:
    """Java ``s.getBytes(UTF_8)``: surrogate pairs become one 4-byte character (even when Python
    holds them as two code points) and each lone surrogate becomes ``?``."""
    units = s.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
    return units.encode("utf-8", "replace")


def properties_to_string(mapping: Optional[Mapping[Optional[str], Optional[str]]]) -> str:
    """``MessageDecoder.messageProperties2String``: ``name U+0001 value U+0002`` for every entry
    with a non-None value, in the mapping's iteration order (Java follows its HashMap's)."""
    if not mapping:
        return ""
    parts = []
    for name, value in mapping.items():
        if value is None:
            continue
        # StringBuilder.append(null) writes "null".
        parts.append(f"{'null' if name is None else name}{NAME_VALUE_SEPARATOR}{value}{PROPERTY_SEPARATOR}")
    return "".join(parts)


def string_to_properties(s: Optional[str]) -> Dict[str, str]:
    """``MessageDecoder.string2messageProperties``: the exact scan of §9.1.

    Java indexes UTF-16 units and Python code points, but only the separators (both BMP) are
    located, and the ``j - i >= 3`` length rule is implied by ``i < kv < j - 1`` (a non-empty key,
    the separator and a non-empty value), so the scan is exact on code points.

    >>> string_to_properties("a\\u00011\\u0002b\\u0001\\u0002")
    {'a': '1'}
    """
    # Each item between PROPERTY_SEPARATORs holds a pair when a NAME_VALUE_SEPARATOR splits it
    # into a non-empty key and value (the scan's i < kv < j - 1); a later duplicate replaces the
    # value in place, as the scan's dict assignment does. One split is ~5x faster than the scan.
    if not s:
        return {}
    return {k: v for k, _, v in (item.partition(NAME_VALUE_SEPARATOR) for item in s.split(PROPERTY_SEPARATOR))
            if k and v}


def normalize_properties(mapping: Optional[Mapping[Optional[str], Optional[str]]]) -> Dict[str, str]:
    """The broker's view of a producer's properties: serialise, store as UTF-8, parse back.

    Keys or values holding the separators corrupt neighbouring entries exactly as in RocketMQ;
    None values vanish; lone surrogates become ``?``. An empty result means "no properties".

    >>> normalize_properties({"n": "a\\u0002b\\u0001c", "gone": None})
    {'n': 'a', 'b': 'c'}
    """
    wire = java_utf8_bytes(properties_to_string(mapping)).decode("utf-8")
    return string_to_properties(wire)


# ---------------------------------------------------------------------------------------------
# Commit-log record helpers (SEMANTICS §9.2): record size, message version, hosts, offset msgId.
# Shared by the store importer (rocketfilter.broker_files.records) and the put path.

import ipaddress as _ipaddress  # noqa: E402  (this section's own imports)
import struct as _struct  # noqa: E402

MESSAGE_MAGIC_CODE_V1 = -626843481  # 0xDAA320A7: 1-byte topic length
MESSAGE_MAGIC_CODE_V2 = -626843477  # 0xDAA320AB: 2-byte topic length
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194: end-of-file blank
END_FILE_MIN_BLANK_LENGTH = 8

SYSFLAG_COMPRESSED = 0x1
SYSFLAG_MULTI_TAGS = 0x2
SYSFLAG_BORNHOST_V6 = 0x10
SYSFLAG_STOREHOST_V6 = 0x20
SYSFLAG_COMPRESSION_TYPE_MASK = 0x7 << 8
COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_ZLIB = 1, 2, 3  # CompressionType values (bits 8-10)

_RECORD_FIXED_SIZE = 91  # V1, two IPv4 hosts, no body/topic/properties bytes
_IPV4_MAPPED_PREFIX = b"\x00" * 10 + b"\xff\xff"


def record_size(body_len: int, topic_len: int, properties_len: int, *, v2: bool = False,
                born_ipv6: bool = False, store_ipv6: bool = False) -> int:
    """``MessageExtEncoder.calMsgLength``: the TOTALSIZE of a record. Lengths are stored byte
    counts (the body as stored, i.e. compressed when it is). V1 with IPv4 hosts is
    ``91 + B + T + P``; V2 adds one topic-length byte, each IPv6 host 12 bytes.

    >>> record_size(92, 9, 113)
    305
    """
    return (_RECORD_FIXED_SIZE + body_len + topic_len + properties_len + (1 if v2 else 0)
            + (12 if born_ipv6 else 0) + (12 if store_ipv6 else 0))


def java_string_length(s: str) -> int:
    """Java ``String.length()``: UTF-16 code units (an astral character counts 2)."""
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def uses_message_version_v2(topic: str, *, auto_message_version_on_topic_len: bool = True) -> bool:
    """The broker's V2 rule (``CommitLog.DefaultAppendMessageCallback``): V2 when the switch is on
    (the default) and ``topic.length() > Byte.MAX_VALUE``. Java counts UTF-16 units, not bytes:
    a V1 topic of 128..255 UTF-8 bytes would overflow its signed length byte, which only
    TopicValidator's ASCII-only rule prevents; :func:`record_message_version` guards it."""
    return auto_message_version_on_topic_len and java_string_length(topic) > 127


def record_message_version(topic: str, *, auto_message_version_on_topic_len: bool = True) -> int:
    """The version (1 or 2) to write a record of ``topic`` with: the broker's rule, and V2 as
    well where V1's one signed length byte cannot hold the UTF-8 topic (Java would write a
    record no reader can decode; for broker-valid ASCII topics the two rules agree)."""
    if uses_message_version_v2(topic, auto_message_version_on_topic_len=auto_message_version_on_topic_len):
        return 2
    return 2 if len(java_utf8_bytes(topic)) > 127 else 1


def _java_ip(ip: bytes) -> bytes:
    """``InetAddress.getByAddress``: an IPv4-mapped IPv6 address (``::ffff:a.b.c.d``) becomes an
    Inet4Address, so Java prints it, and builds msgIds from it, as 4 bytes."""
    if len(ip) == 16 and ip.startswith(_IPV4_MAPPED_PREFIX):
        return ip[12:]
    if len(ip) not in (4, 16):
        raise ValueError(f"an IP address has 4 or 16 bytes, not {len(ip)}")
    return ip


def format_ip(ip: bytes) -> str:
    """Java ``InetAddress.getHostAddress``: dotted IPv4, or eight lower-case hex groups without
    leading zeros and without ``::`` compression (``2001:db8:0:0:0:0:0:a``)."""
    ip = _java_ip(ip)
    if len(ip) == 4:
        return ".".join(str(b) for b in ip)
    return ":".join(f"{(ip[i] << 8) | ip[i + 1]:x}" for i in range(0, 16, 2))


def format_host(ip: bytes, port: int) -> str:
    """A stored host as ``ip:port``, IPv6 in brackets: ``192.168.1.10:10911``,
    ``[2001:db8:0:0:0:0:0:a]:10911``. This is Java 17's ``InetSocketAddress.toString()`` without
    the leading ``/`` (what ``RemotingHelper.parseSocketAddressAddr`` gives); the IP text is
    ``getHostAddress``, as in the sample store's manifest."""
    ip = _java_ip(ip)
    text = format_ip(ip)
    return f"{text}:{port}" if len(ip) == 4 else f"[{text}]:{port}"


def parse_host(host: str, port: Optional[int] = None) -> tuple:
    """``"ip:port"`` / ``"[ipv6]:port"`` (or a bare IP with ``port`` given) to
    ``(ip_bytes, port)``, with Java's IPv4-mapped rule applied. Inverse of :func:`format_host`."""
    text = host.strip()
    if port is None:
        if text.startswith("["):
            close = text.find("]")
            if close < 0 or text[close + 1:close + 2] != ":":
                raise ValueError(f"not an [ipv6]:port host: {host!r}")
            text, port_text = text[1:close], text[close + 2:]
        else:
            text, sep, port_text = text.rpartition(":")
            if not sep or ":" in text:
                raise ValueError(f"not an ip:port host: {host!r}")
        port = int(port_text)
    elif text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not 0 <= port <= 0xFFFF:
        raise ValueError(f"port out of range: {port}")
    return _java_ip(_ipaddress.ip_address(text).packed), port


def host_bytes(ip: bytes, port: int) -> bytes:
    """The stored host field: the IP bytes as given (4 or 16) and the port as a big-endian int."""
    if len(ip) not in (4, 16):
        raise ValueError(f"an IP address has 4 or 16 bytes, not {len(ip)}")
    return bytes(ip) + _struct.pack(">i", port)


def offset_msg_id(host: Union[bytes, str], port: Optional[int], commitlog_offset: int) -> str:
    """``MessageDecoder.createMessageId``: upper-case hex of store-host IP bytes, port (int32)
    and commit-log offset (int64); 32 hex digits for IPv4, 56 for IPv6.

    ``host`` is the IP's bytes (``port`` required), or text: ``"ip:port"``, ``"[ipv6]:port"``,
    or a bare IP with ``port``. The address goes through Java's ``InetAddress`` first, so an
    IPv4-mapped IPv6 store host gives the 4-byte form, as the Java decoder does.

    >>> offset_msg_id("192.168.1.10:10911", None, 15348)
    'C0A8010A00002A9F0000000000003BF4'
    """
    if isinstance(host, str):
        ip, port = parse_host(host, port)
    else:
        if port is None:
            raise ValueError("port is required with IP bytes")
        ip = _java_ip(bytes(host))
    return (ip + _struct.pack(">iq", port, commitlog_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple:
    """Inverse of :func:`offset_msg_id`: ``(host "ip:port", commitlog_offset)``
    (``MessageDecoder.decodeMessageId``; 32 or 56 hex digits)."""
    raw = bytes.fromhex(msg_id)
    if len(raw) not in (16, 28):
        raise ValueError(f"an offset msgId has 32 or 56 hex digits, not {len(msg_id)}")
    ip_len = len(raw) - 12
    port, offset = _struct.unpack(">iq", raw[ip_len:])
    return format_host(raw[:ip_len], port), offset
