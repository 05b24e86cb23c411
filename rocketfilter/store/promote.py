"""Promoting properties on a store: the schema change, and the ``promote`` maintenance operation.

Readers trust a promoted column wherever the CommitLog's schema lists it, so a file holding the
property must never be visible without its column. Files without the property need no rewrite:
a column a file lacks reads as null, which is what an absent property is. So ``promote``:

1. finds the files whose messages carry any of the properties (one Spark job over the maps);
2. rewrites exactly those files with the new columns, in one Delta commit (``dataChange=false``,
   on the version it read; the CommitLog's high-water marks ride along);
3. adds the columns to the schema in a metadata-only commit on the very next version.

If another commit lands between 2 and 3 (a put written with the old schema may carry the
property), step 3 refuses and the loop goes round again over the files it has not rewritten.
Readers in between see the old schema, under which the rewritten files read as before.

Progress is logged (logger ``rocketfilter.store.promote``): a shared progress display is on
its way on another branch.
"""
from __future__ import annotations

import logging
import math
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import List, Sequence

from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from rocketfilter.delta import write as delta_write
from rocketfilter.store import schema as S
from rocketfilter.delta.table import ConcurrentCommitError
from rocketfilter.store.promoted import new_fields, with_promoted
from rocketfilter.store.tables import StoreTables

log = logging.getLogger(__name__)
MAX_ROUNDS = 20


@dataclass
class PromoteReport:
    """What ``promote`` did: the properties it added, the files it scanned and rewrote."""

    promoted: List[str] = field(default_factory=list)
    already: List[str] = field(default_factory=list)
    files_scanned: int = 0
    files_rewritten: int = 0
    messages_rewritten: int = 0
    seconds: float = 0.0


def configured(tables: StoreTables) -> List[str]:
    """The properties the store's settings name (``promotedProperties``, comma separated)."""
    text = tables.config.promoted_properties or ""
    return [p.strip() for p in text.split(",") if p.strip()]


def _name(path: str) -> str:
    return urllib.parse.unquote(path.rsplit("/", 1)[-1])


def affected_files(tables: StoreTables, files: list, names: Sequence[str]) -> list:
    """The ``files`` whose messages carry any of ``names``: one job reading only the maps."""
    if not files:
        return []
    df = tables.commitlog.read(tables.spark, files=files)
    wanted = F.array(*[F.lit(n) for n in names])
    hits = (df.where(F.arrays_overlap(F.map_keys("properties"), wanted))
            .select(F.col("_metadata.file_path").alias("path")).distinct().collect())
    found = {_name(r["path"]) for r in hits}
    return [f for f in files if _name(f.path) in found]


def _rewrite(tables: StoreTables, table, files: list, schema: StructType, version: int) -> int:
    """Rewrite ``files`` with ``schema``'s promoted columns in one commit on ``version``."""
    n = sum(max(f.num_records, 0) for f in files)
    parts = max(1, min(len(files), math.ceil(n / 1_000_000)))
    df = table.read(tables.spark, files=files).select(*S.COMMITLOG_SCHEMA.fieldNames())
    df = with_promoted(df, schema).repartitionByRange(parts, "commitlog_offset") \
        .sortWithinPartitions("commitlog_offset")
    rows = delta_write.write_dataframe(
        df, table.uri, S.arrow_schema(schema), table.stats_columns, max_rows_per_file=1_000_000,
        row_group_rows=tables.config.commit_log_row_group_rows, storage_options=table.storage_options)
    adds = table._adds(rows, False)
    state = tables.commitlog_state()
    try:
        return table.commit(adds, files, expected_version=version, operation="PROMOTE",
                            data_change=False, custom_metadata=state.to_metadata())
    except BaseException:
        delta_write.delete_files(table.uri, [a.path for a in adds])
        raise


def promote(tables: StoreTables, names: Sequence[str], *, rewrite: bool = True) -> PromoteReport:
    """Promote ``names`` (see the module docstring). With ``rewrite=False`` the schema changes
    only when no file holds the properties, else ValueError (what put and import use)."""
    t0 = time.perf_counter()
    names = list(dict.fromkeys(names))
    report = PromoteReport()
    done: set = set()   # files this call wrote: they hold the new columns already
    for _ in range(MAX_ROUNDS):
        table = tables.table(S.COMMITLOG)
        version = table.version()
        fields = new_fields(table.schema, names)
        wanted = [f.metadata["rocketfilter.property"] for f in fields]
        report.already = [n for n in names if n not in wanted + report.promoted]
        if not fields:
            break
        files = [f for f in table.files() if _name(f.path) not in done]
        log.info("promote %s: scanning %d CommitLog file(s) for them", wanted, len(files))
        report.files_scanned += len(files)
        hit = affected_files(tables, files, wanted)
        if hit and not rewrite:
            raise ValueError(f"store {tables.uri}: {len(hit)} CommitLog file(s) hold properties "
                             f"{wanted} already; promote them with MessageStore.promote() (or "
                             "`rocketfilter promote`), which rewrites those files")
        try:
            if hit:
                n = sum(max(f.num_records, 0) for f in hit)
                log.info("promote %s: rewriting %d of %d file(s), %d messages", wanted, len(hit),
                         len(files), n)
                new_schema = StructType(table.schema.fields + fields)
                before = {f.path for f in table.files()}
                version = _rewrite(tables, table, hit, new_schema, version)
                done |= {_name(f.path) for f in table.files() if f.path not in before}
                report.files_rewritten += len(hit)
                report.messages_rewritten += n
            table.add_columns(fields, expected_version=version, operation="PROMOTE")
        except ConcurrentCommitError:
            log.info("promote %s: another commit landed; going round again", wanted)
            continue
        report.promoted += wanted
        log.info("promote %s: done in %.1f s", wanted, time.perf_counter() - t0)
    else:
        raise ConcurrentCommitError(tables.uri, version, tables.table(S.COMMITLOG).version(),
                                    f"promote lost {MAX_ROUNDS} races in a row")
    report.seconds = time.perf_counter() - t0
    return report


def promote_configured(tables: StoreTables, extra: Sequence[str] = ()) -> None:
    """At put and import: promote what the settings (and ``extra``) name and the CommitLog does
    not have yet, when that needs no rewrite; otherwise warn once and write without them (reads
    stay right: the compiler falls back to the map)."""
    names = configured(tables) + list(extra)
    table = tables.table(S.COMMITLOG)
    if not names or not new_fields(table.schema, names):
        return
    try:
        if table.files():  # scanning every put for them would cost a full read each time
            raise ValueError(f"store {tables.uri}: the settings promote properties the CommitLog "
                             "does not have yet; run MessageStore.promote() (or `rocketfilter "
                             "promote`) to rewrite the files that hold them")
        promote(tables, names, rewrite=False)
    except ValueError as error:
        if not getattr(tables, "_promote_warned", False):
            log.warning("%s", error)
            tables._promote_warned = True
