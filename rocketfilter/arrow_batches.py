"""Arrow batches to Python workers bounded by rows alone, for the bulk jobs that know their rows.

Spark 4 bounds each Arrow batch it sends to a Python worker (``mapInArrow``, ``applyInArrow``)
by rows (``spark.sql.execution.arrow.maxRecordsPerBatch``, 10,000) and by bytes
(``...maxBytesPerBatch``, 64 MiB). It checks the byte bound by measuring the whole batch after
every row, which walks every column vector: profiled on a put of 5M messages, that was 7% of all
JVM samples, and turning it off made the put 15% faster. A job that knows its widest row can
keep the same memory bound with a row count instead: :func:`rows_only` turns the byte check off
for the duration of a block and lowers the row bound so that ``widest_row_bytes`` rows still fit
the byte bound the session had.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator, Optional

from rocketfilter.spark_mode import get_conf, restore_conf, set_conf

MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
MAX_RECORDS = "spark.sql.execution.arrow.maxRecordsPerBatch"
# Spark's own defaults, for a session that has not set the keys.
DEFAULT_BYTES, DEFAULT_RECORDS = 64 << 20, 10_000
# The value at which Spark skips the byte check (``BatchedPythonArrowInput.writeSizedBatch``).
UNBOUNDED = 2**31 - 1
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_bytes(text: Optional[str], default: int) -> int:
    """A Spark byte-size setting (``67108864b``, ``64m``, ``1g``, ``1024``) in bytes; ``default``
    for None or a value Spark would not accept either.

    >>> parse_bytes("67108864b", 0), parse_bytes("64m", 0), parse_bytes(None, 7)
    (67108864, 67108864, 7)
    """
    found = re.fullmatch(r"\s*(\d+)\s*([bkmgtp]?)(?:i?b)?\s*", (text or "").lower())
    return int(found.group(1)) * _UNITS[found.group(2)] if found else default


def rows_per_batch(max_bytes: int, max_records: int, widest_row_bytes: int) -> int:
    """The row bound that keeps ``widest_row_bytes`` rows within ``max_bytes``, at most
    ``max_records`` (0 or less: no row bound), at least one row.

    >>> rows_per_batch(64 << 20, 10_000, 300), rows_per_batch(64 << 20, 10_000, 4 << 20)
    (10000, 16)
    """
    fit = max(1, max_bytes // max(1, widest_row_bytes))
    return min(fit, max_records) if max_records > 0 else fit


@contextmanager
def rows_only(spark, widest_row_bytes: int) -> Iterator[None]:
    """Within the block, Arrow batches sent to Python workers are bounded by a row count that
    keeps rows of ``widest_row_bytes`` within the session's byte bound, and the per-row byte
    check is off. The settings are read when a query is planned, so the block must hold the
    action (``collect``, ``save``). A session that refuses either setting (a Spark Connect
    server may) keeps both as they were: the block then only runs slower.

    >>> with rows_only(spark, widest_row_bytes=512):   # doctest: +SKIP
    ...     rows = df.mapInArrow(fn, schema).collect()
    """
    current = get_conf(spark, [MAX_BYTES, MAX_RECORDS])
    max_bytes = parse_bytes(current.get(MAX_BYTES), DEFAULT_BYTES)
    if max_bytes >= UNBOUNDED:  # the session has no byte bound already
        yield
        return
    try:
        max_records = int(current.get(MAX_RECORDS) or DEFAULT_RECORDS)
    except ValueError:
        max_records = DEFAULT_RECORDS
    wanted = {MAX_BYTES: str(UNBOUNDED),
              MAX_RECORDS: str(rows_per_batch(max_bytes, max_records, widest_row_bytes))}
    previous = set_conf(spark, wanted)
    if set(previous) != set(wanted):   # half set would lift the byte bound without a row bound
        restore_conf(spark, previous)
        previous = {}
    try:
        yield
    finally:
        restore_conf(spark, previous)
