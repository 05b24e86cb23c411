"""The vectorised consume-queue parse (broker_files.cq_columns, import_parse.consumequeue_file_batch)
against the per-unit reference, iter_consumequeue_file, on files of every kind of unit."""
from __future__ import annotations

from typing import List

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketfilter.broker_files.import_parse import consumequeue_file_batch
from rocketfilter.broker_files.records import (CQ_EXT_MAX_ADDR, CQ_UNIT_SIZE, PRE_BLANK_SIZE, StoreFormatError,
                                               encode_cq_unit, iter_consumequeue_file)
from rocketfilter.store.importer import PARSED_CQ_SCHEMA
from rocketfilter.store.schema import arrow_schema

SCHEMA = arrow_schema(PARSED_CQ_SCHEMA)
LONG = st.integers(-2**63, 2**63 - 1)
UNITS = st.one_of(
    st.tuples(st.integers(0, 2**40), st.integers(1, 2**31 - 1), LONG),            # a unit
    st.tuples(st.integers(0, 2**40), st.integers(1, 4096), st.integers(-2**63, CQ_EXT_MAX_ADDR)),  # CQ-ext
    st.just((0, 0, 0)),                                                             # zeroed tail
    st.just((0, PRE_BLANK_SIZE, 0)),                                                # pre-blank filler
    st.tuples(st.integers(-2**63, -1), st.integers(-5, 100), LONG),                 # invalid offset
    st.tuples(st.integers(0, 100), st.integers(-2**31, 0), st.integers(1, 9)),      # invalid size
)


def reference(data: bytes, name: str, start: int, topic: str, queue_id: int, later_file: bool) -> List[dict]:
    """The rows the import made with the per-unit generator."""
    rows, end = [], 0
    blank = dict(topic=topic, queue_id=queue_id, _reason=None)
    try:
        for u in iter_consumequeue_file(data, name, start):
            rows.append({**blank, "queue_offset": u["queue_offset"], "commitlog_offset": u["commitlog_offset"],
                         "size": u["size"], "tags_code": u["tags_code"], "_kind": "unit", "_file": name,
                         "_file_position": u["file_position"]})
            end = u["file_position"] + CQ_UNIT_SIZE
    except StoreFormatError as exc:
        rows.append({**blank, "queue_offset": -1, "commitlog_offset": -1, "size": 0, "tags_code": None,
                     "_kind": "error", "_file": name, "_file_position": exc.byte_offset, "_reason": exc.reason})
    else:
        if later_file and end < len(data) and not data[-CQ_UNIT_SIZE:].strip(b"\0"):
            rows.append({**blank, "queue_offset": -1, "commitlog_offset": -1, "size": 0, "tags_code": None,
                         "_kind": "error", "_file": name, "_file_position": end,
                         "_reason": "consume-queue file ends here, but a later file of this queue exists"})
    return rows


def _clip(units):
    # Java ints for the size slot, longs for the others (encode_cq_unit packs >qiq).
    return [(o, max(-2**31, min(s, 2**31 - 1)), t) for o, s, t in units]


@settings(max_examples=400, deadline=None)
@given(units=st.lists(UNITS, max_size=40), tail=st.binary(max_size=CQ_UNIT_SIZE - 1),
       start_units=st.integers(0, 10**6), misaligned=st.integers(0, 20), later_file=st.booleans())
def test_the_columns_give_the_reference_rows(units, tail, start_units, misaligned, later_file):
    data = b"".join(encode_cq_unit(*u) for u in _clip(units)) + tail
    start = start_units * CQ_UNIT_SIZE + (misaligned if misaligned < 3 else 0)
    name = f"consumequeue/T/3/{start:020d}"
    got = consumequeue_file_batch(data, name, start, "T", 3, SCHEMA, later_file=later_file)
    assert got.schema == SCHEMA
    assert got.to_pylist() == reference(data, name, start, "T", 3, later_file)


def test_a_broker_file_with_its_zeroed_tail():
    units = [encode_cq_unit(i * 300, 300, 1000 + i) for i in range(5)] + [encode_cq_unit(0, PRE_BLANK_SIZE, 0)]
    data = b"".join(units) + bytes(20 * 10)
    last = consumequeue_file_batch(data, "q", 100, "T", 0, SCHEMA, later_file=False)
    assert last.column("queue_offset").to_pylist() == [5, 6, 7, 8, 9]
    assert last.column("_kind").to_pylist() == ["unit"] * 5       # the last file's zeroed tail
    # A zeroed tail in a file that a later one follows: the broker never leaves one there.
    early = consumequeue_file_batch(data, "q", 100, "T", 0, SCHEMA, later_file=True)
    assert early.column("_kind").to_pylist() == ["unit"] * 5 + ["error"]
    assert early.column("_file_position").to_pylist()[-1] == 100
    for batch, later in ((last, False), (early, True)):
        assert pa.RecordBatch.from_pylist(reference(data, "q", 100, "T", 0, later), SCHEMA).equals(batch)
