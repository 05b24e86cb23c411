"""The peers of bench/scale.py's reads, DuckDB and Polars, over the promoted store's CommitLog
files: run in a child process (``scale.read_jobs``), so their memory is not the driver's."""
from __future__ import annotations

import os
from typing import Callable, Dict, List, Tuple

from _common import CORES

# {topic} is the bench's own topic name, formatted in so that DuckDB plans a constant as before.
DUCKDB_MAP = ("SELECT count(*) FROM read_parquet(?) WHERE topic = '{topic}' "
              "AND TRY_CAST(properties['age'] AS INTEGER) BETWEEN 6 AND 9 "
              "AND properties['name'] IS NOT NULL AND lower(properties['isGender']) = 'true'")
DUCKDB_TYPED = ("SELECT count(*) FROM read_parquet(?) WHERE topic = '{topic}' "
                "AND prop_age.as_int BETWEEN 6 AND 9 AND prop_name.value IS NOT NULL "
                "AND prop_isGender.as_boolean")


def _best(fn: Callable[[], int], repeat: int) -> Tuple[float, int]:
    """Best time of ``repeat`` runs after a warm-up, and the answer (checked stable)."""
    import time

    answer, times = fn(), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        again = fn()
        times.append(time.perf_counter() - t0)
        assert again == answer, (again, answer)
    return min(times), answer


def peer_reads(paths: List[str], topic: str, repeat: int) -> Dict[str, Tuple[float, int]]:
    """DuckDB over the map and over the typed columns, Polars over the typed columns, each
    counting the selector's matches: best time and count of each (a peer not installed is said
    so and left out)."""
    ways: Dict[str, Callable[[], int]] = {}
    try:
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET threads = {CORES}")
        by_map, typed_sql = DUCKDB_MAP.format(topic=topic), DUCKDB_TYPED.format(topic=topic)
        ways["DuckDB, map"] = lambda: con.execute(by_map, [paths]).fetchone()[0]
        ways["DuckDB, typed columns"] = lambda: con.execute(typed_sql, [paths]).fetchone()[0]
    except ImportError:
        print("  DuckDB not installed: pip install -e '.[bench]'", flush=True)
    try:
        os.environ.setdefault("POLARS_MAX_THREADS", str(CORES))
        import polars as pl

        def field(column, name):
            return pl.col(column).struct.field(name)

        typed = ((pl.col("topic") == topic) & field("prop_age", "as_int").is_between(6, 9)
                 & field("prop_name", "value").is_not_null() & field("prop_isGender", "as_boolean"))
        ways["Polars, typed columns"] = lambda: pl.scan_parquet(paths).filter(typed).select(pl.len()).collect().item()
    except ImportError:
        print("  Polars not installed: pip install -e '.[bench]'", flush=True)
    return {name: _best(fn, repeat) for name, fn in ways.items()}
