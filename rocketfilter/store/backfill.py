"""``backfill``: compute the exact subscription bits (:mod:`.sub_bits`) of the ConsumeQueue's
history, so a registered subscription's pulls and replays use them from the first entry on.

The topics' ConsumeQueue files are rewritten in one Delta commit on the version read
(``dataChange=false``), every slot recomputed: the TAG decisions from the entries' own tag
codes, the SQL92 ones from their CommitLog rows (promoted columns where the store has them).
The commit's slot table then says each slot covers its topic from offset 0. Progress is logged
(logger ``rocketfilter.store.backfill``).
"""
from __future__ import annotations

import logging
import time
from typing import Optional, Sequence

from pyspark.sql import functions as F

from rocketfilter.store import schema as S
from rocketfilter.store.dispatch import write_consumequeue
from rocketfilter.delta.retry import retry_on_conflict
from rocketfilter.store.sub_bits import bits_column, plan_slots
from rocketfilter.store.tables import StoreTables

log = logging.getLogger(__name__)


def backfill(tables: StoreTables, topics: Optional[Sequence[str]] = None) -> dict:
    """Compute every registered slot's bits over the whole ConsumeQueue of ``topics`` (default:
    every topic with registrations). Returns ``{topic: entries rewritten}``."""
    def attempt() -> dict:
        t0 = time.perf_counter()
        cq = tables.table(S.CONSUMEQUEUE)
        version = cq.version()
        state = tables.consumequeue_state()
        plan = plan_slots(tables, state)
        targets = sorted(plan if topics is None else set(topics) & set(plan))
        if not targets:
            return {}
        if S.SUB_BITS not in cq.schema.fieldNames():
            version = cq.add_columns([S.SUB_BITS_FIELD], expected_version=version)
        files = [f for f in cq.files() if not (f.min.get("topic") == f.max.get("topic") is not None
                                               and f.min["topic"] not in targets)]
        n = sum(max(f.num_records, 0) for f in files)
        log.info("backfill %s: recomputing %d slot(s) over %d ConsumeQueue file(s), %d entries",
                 targets, sum(len(plan[t]) for t in targets), len(files), n)
        rows = cq.read(tables.spark, files=files)
        slots = {t: plan[t] for t in targets}
        if any(k.startswith("SQL92:") for t in targets for k in plan[t]):
            promoted = tables.promoted_properties()
            wanted = ["commitlog_offset", "properties", *promoted.values()]
            messages = tables.commitlog.read(tables.spark, where=[("topic", "in", targets)]).select(*wanted)
            rows = rows.join(messages, "commitlog_offset", "left")
        else:
            promoted = {}
        bits = F.when(F.col("topic").isin(targets), bits_column(slots, promoted)) \
            .otherwise(F.col(S.SUB_BITS))
        out = rows.select(*[bits.alias(c) if c == S.SUB_BITS else F.col(c)
                            for c in cq.schema.fieldNames()])
        adds = cq._adds(write_consumequeue(tables, out, n), True)
        state.bits = {**state.bits, **{t: {k: {"slot": v["slot"], "from": {}} for k, v in plan[t].items()}
                                       for t in targets}}
        try:
            cq.commit(adds, files, expected_version=version, operation="BACKFILL", data_change=False,
                      custom_metadata=state.to_metadata())
        except BaseException:
            from rocketfilter.delta.write import delete_files

            delete_files(cq.uri, [a.path for a in adds])
            raise
        log.info("backfill %s: done in %.1f s", targets, time.perf_counter() - t0)
        return {t: n for t in targets}

    return retry_on_conflict(attempt, "backfill of subscription bits")
