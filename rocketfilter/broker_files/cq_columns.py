"""A consume-queue file decoded at once into numpy columns: the import's fast path.

:func:`consumequeue_columns` gives the units :func:`.records.iter_consumequeue_file` yields, in
the same order, and the error it would raise after them; the per-unit generator stays the
reference (tests/store/test_cq_columns.py holds the two together). Profiled at 10M units:
the per-unit loop was 24 s of Python in an import of 134 s.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from rocketfilter.broker_files.records import CQ_EXT_MAX_ADDR, CQ_UNIT_SIZE, PRE_BLANK_SIZE, StoreFormatError

_UNIT = np.dtype([("commitlog_offset", ">i8"), ("size", ">i4"), ("tags_code", ">i8")])
assert _UNIT.itemsize == CQ_UNIT_SIZE


def _first(mask: np.ndarray) -> int:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else len(mask)


def consumequeue_columns(data: bytes, file_name: str, file_start_offset: int,
                         ) -> Tuple[Dict[str, np.ndarray], Optional[StoreFormatError]]:
    """The units of one consume-queue file as numpy columns (int64 ``queue_offset``,
    ``commitlog_offset``, ``size``, ``tags_code``, ``file_position``; bool ``tags_is_ext``: the
    tags slot holds a CQ-ext address), and the StoreFormatError that ends them, if any."""
    names = ("queue_offset", "commitlog_offset", "size", "tags_code", "tags_is_ext", "file_position")
    if file_start_offset % CQ_UNIT_SIZE:
        empty = {k: np.empty(0, bool if k == "tags_is_ext" else np.int64) for k in names}
        return empty, StoreFormatError(file_name, 0, f"file start {file_start_offset} is not a "
                                                     f"multiple of {CQ_UNIT_SIZE}")
    whole = len(data) // CQ_UNIT_SIZE
    units = np.frombuffer(data, _UNIT, whole)
    offset = units["commitlog_offset"].astype(np.int64)
    size = units["size"].astype(np.int64)
    tags = units["tags_code"].astype(np.int64)
    zero = (offset == 0) & (size == 0) & (tags == 0)
    filler = (offset == 0) & (size == PRE_BLANK_SIZE) & (tags == 0)
    invalid = ~zero & ~filler & ((offset < 0) | (size <= 0))
    end, bad = _first(zero), _first(invalid)
    error = None
    if bad < end:      # an invalid unit before the zeroed tail
        end = bad
        error = StoreFormatError(file_name, bad * CQ_UNIT_SIZE, f"invalid unit: commit-log offset "
                                                                f"{int(offset[bad])}, size {int(size[bad])}")
    elif end == whole and data[whole * CQ_UNIT_SIZE:].strip(b"\0"):
        position = whole * CQ_UNIT_SIZE
        error = StoreFormatError(file_name, position, f"truncated unit: {len(data) - position} of "
                                                      f"{CQ_UNIT_SIZE} bytes")
    keep = np.flatnonzero(~filler[:end])
    return {"queue_offset": file_start_offset // CQ_UNIT_SIZE + keep,
            "commitlog_offset": offset[keep], "size": size[keep], "tags_code": tags[keep],
            "tags_is_ext": tags[keep] <= CQ_EXT_MAX_ADDR,
            "file_position": keep * CQ_UNIT_SIZE}, error
