"""A commit-log record's stored body: its CRC and its compression (SEMANTICS §9.2).

Split out of :mod:`.records`, which re-exports these names. Pure Python (zlib); pyarrow is
imported only for LZ4/zstd bodies.
"""
from __future__ import annotations

import zlib

from rocketfilter.message import (
    COMPRESSION_LZ4,
    COMPRESSION_ZLIB,
    COMPRESSION_ZSTD,
    SYSFLAG_COMPRESSION_TYPE_MASK,
)


def body_crc(stored_body: bytes) -> int:
    """``UtilAll.crc32``: java.util.zip.CRC32 of the stored body, masked to 31 bits."""
    return zlib.crc32(stored_body) & 0x7FFFFFFF


def compression_type(sys_flag: int) -> int:
    """``CompressionType.findByValue`` of sysflag bits 8-10; 0 (a 4.x producer) means zlib."""
    value = (sys_flag & SYSFLAG_COMPRESSION_TYPE_MASK) >> 8
    if value == 0:
        return COMPRESSION_ZLIB
    if value not in (COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_ZLIB):
        raise ValueError(f"unknown compression type {value}")
    return value


_ARROW_CODEC = {COMPRESSION_LZ4: "lz4", COMPRESSION_ZSTD: "zstd"}


def compress_body(body: bytes, sys_flag: int, level: int = 5) -> bytes:
    """Compress as the producer does: zlib (``ZlibCompressor``, level 5 by default), or an
    LZ4/zstd frame (the Java compressors write frames; pyarrow's stream codecs read them)."""
    kind = compression_type(sys_flag)
    if kind == COMPRESSION_ZLIB:
        return zlib.compress(body, level)
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, _ARROW_CODEC[kind]) as out:
        out.write(body)
    return sink.getvalue().to_pybytes()


def decompress_body(stored: bytes, sys_flag: int) -> bytes:
    """Inflate a compressed body (raises ValueError on an unknown type or bad data)."""
    kind = compression_type(sys_flag)
    try:
        if kind == COMPRESSION_ZLIB:
            return zlib.decompress(stored)
        import pyarrow as pa

        return pa.CompressedInputStream(pa.BufferReader(stored), _ARROW_CODEC[kind]).read()
    except (zlib.error, OSError) as exc:
        raise ValueError(f"body does not decompress: {exc}") from None
