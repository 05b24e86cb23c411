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
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Dict, Iterator, Optional

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


@dataclass
class _Hold:
    """One session's settings while blocks are open on it: what to put back, and the row bound."""
    previous: Dict[str, Optional[str]]
    max_bytes: int
    max_records: int
    rows: int
    users: int = 1


# Threads that share a session (puts from a thread pool) share its conf: the first block in
# saves and sets it, the last one out restores it. Without this, two blocks that read the conf
# before either set it each restored what the other had set, and the session kept no byte bound.
_LOCK = threading.Lock()
_HOLDS: Dict[int, _Hold] = {}


def _take(spark, widest_row_bytes: int) -> Optional[_Hold]:
    current = get_conf(spark, [MAX_BYTES, MAX_RECORDS])
    max_bytes = parse_bytes(current.get(MAX_BYTES), DEFAULT_BYTES)
    if max_bytes >= UNBOUNDED:  # the session has no byte bound already
        return None
    try:
        max_records = int(current.get(MAX_RECORDS) or DEFAULT_RECORDS)
    except ValueError:
        max_records = DEFAULT_RECORDS
    rows = rows_per_batch(max_bytes, max_records, widest_row_bytes)
    wanted = {MAX_BYTES: str(UNBOUNDED), MAX_RECORDS: str(rows)}
    previous = set_conf(spark, wanted)
    if set(previous) != set(wanted):   # half set would lift the byte bound without a row bound
        restore_conf(spark, previous)
        return None
    return _Hold(previous, max_bytes, max_records, rows)


def _join(spark, hold: _Hold, widest_row_bytes: int) -> None:
    """A further block on a held session: the row bound is the lowest any open block needs."""
    rows = rows_per_batch(hold.max_bytes, hold.max_records, widest_row_bytes)
    if rows < hold.rows:
        set_conf(spark, {MAX_RECORDS: str(rows)})
        hold.rows = rows
    hold.users += 1


@contextmanager
def rows_only(spark, widest_row_bytes: int) -> Iterator[None]:
    """Within the block, Arrow batches sent to Python workers are bounded by a row count that
    keeps rows of ``widest_row_bytes`` within the session's byte bound, and the per-row byte
    check is off. The settings are read when a query is planned, so the block must hold the
    action (``collect``, ``save``). A session that refuses either setting (a Spark Connect
    server may) keeps both as they were: the block then only runs slower.

    Blocks may overlap on one session from several threads: while any is open the row bound is
    the lowest they need, and the last to close puts the session's own settings back.

    >>> with rows_only(spark, widest_row_bytes=512):   # doctest: +SKIP
    ...     rows = df.mapInArrow(fn, schema).collect()
    """
    key = id(spark)
    with _LOCK:
        hold = _HOLDS.get(key)
        if hold is not None:
            _join(spark, hold, widest_row_bytes)
        else:
            hold = _take(spark, widest_row_bytes)
            if hold is not None:
                _HOLDS[key] = hold
    try:
        yield
    finally:
        if hold is not None:
            with _LOCK:
                hold.users -= 1
                if hold.users == 0:
                    del _HOLDS[key]
                    restore_conf(spark, hold.previous)
