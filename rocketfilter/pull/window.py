"""One pull of one queue: ``DefaultMessageStore.getMessage``'s loop (SEMANTICS §12.2), vectorised.

The lead's ``get_message`` computes three per-entry flags with Spark Columns (``cq_match`` =
isMatchedByConsumeQueue, ``cl_present`` = the commit-log row still exists, ``cl_match`` =
isMatchedByCommitLog) and hands the CQ rows of one queue to :func:`get_message_window`, which is
the single definition of the batch limit. No Python code runs per entry: every per-entry quantity
(skip state, buffered bytes and messages before the entry, the break test) is a numpy array over
the entries the loop may reach, and the loop's end is the first ``True`` of the break mask.

Per entry (per row, numpy): ``in_mem`` and the tier limits, "found unless skipped", prefix sums
(:class:`PreparedQueue`, once per queue); per pull, over its window only: ``skipped``, the
exclusive running ``bufferTotal``/``messageCount``, the break mask. Per pull (scalars): the break
index, the status, ``next_begin_offset``. The limits themselves are :mod:`.limits`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

import numpy as np

# The limits are re-exported: the pull modules import them with the loop.
from rocketfilter.pull.limits import (CQ_STORE_UNIT_SIZE, DEFAULT_LIMITS, MAX_PULL_MSG_SIZE,  # noqa: F401
                                      PullLimits, is_the_batch_full)
from rocketfilter.pull.result import FilterFunnel, GetMessageResult, GetMessageStatus

@dataclass
class WindowResult:
    """One pull's answer. ``found_index`` indexes the arrays passed to :func:`get_message_window`."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int = 0
    max_offset: int = 0
    found_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    found_queue_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    buffer_total_size: int = 0
    message_count: int = 0
    filter_message_count: int = 0
    suggest_pulling_from_slave: bool = False
    max_phy_offset_pulling: int = 0
    scanned: int = 0          # entries the loop advanced `next` over
    skipped: int = 0          # of those, passed over by skipUntilPhy
    passed_cq: int = 0        # isMatchedByConsumeQueue true (tag code / bitmap)
    removed: int = 0          # passed the CQ check but the commit-log record is gone
    commitlog_read: int = 0   # commit-log records actually read
    passed_sql92: int = 0     # isMatchedByCommitLog true

    @property
    def funnel(self) -> FilterFunnel:
        """Counters for :class:`FilterFunnel`; the caller splits tag code from bitmap."""
        return FilterFunnel(scanned=self.scanned, passed_tag_code=self.passed_cq,
                            commitlog_read=self.commitlog_read,
                            passed_sql92=self.passed_sql92, found=self.message_count)

    def to_get_message_result(self) -> GetMessageResult:
        return GetMessageResult(
            status=self.status, next_begin_offset=self.next_begin_offset,
            min_offset=self.min_offset, max_offset=self.max_offset,
            suggest_pulling_from_slave=self.suggest_pulling_from_slave,
            buffer_total_size=self.buffer_total_size, message_count=self.message_count,
            filter_message_count=self.filter_message_count,
            message_queue_offsets=[int(q) for q in self.found_queue_offsets],
            funnel=self.funnel)


def no_matched_logic_queue(offset: int, limits: PullLimits = DEFAULT_LIMITS) -> WindowResult:
    """The answer when findConsumeQueue returns null. DefaultMessageStore never does (it creates
    the queue: :func:`no_message_in_queue`); only other MessageStore implementations answer this."""
    return WindowResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
                        limits.next_offset_correction(offset, 0))


def no_message_in_queue(offset: int, limits: PullLimits = DEFAULT_LIMITS) -> WindowResult:
    """The answer for a queue that holds no entry (maxOffset 0), e.g. one that never received a
    message: findOrCreateConsumeQueue made it empty."""
    return WindowResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE,
                        limits.next_offset_correction(offset, 0))


def _prefix(values: np.ndarray) -> np.ndarray:
    """``out[i] = values[:i].sum()`` (length n + 1), so a range sum is two lookups."""
    out = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=out[1:])
    return out


def _prefix_property(flags: str) -> cached_property:
    """A cached :func:`_prefix` of the attribute ``flags``."""
    return cached_property(lambda self: _prefix(getattr(self, flags)))


class PreparedQueue:
    """One queue's sorted CQ entries with everything that does not depend on where a pull starts.

    Per entry, computed once: the tier's byte/count limits (``in_mem`` folded with maxPullSize
    and maxMsgNums), "found unless skipped", "rejected by SQL92 unless skipped", removal
    candidates, and prefix sums of sizes and counts. A pull then costs about fifteen numpy
    operations on its window, or about thirty when a removed record makes skipUntilPhy matter.
    """

    def __init__(self, queue_offset: np.ndarray, commitlog_offset: np.ndarray, size: np.ndarray,
                 cq_match: np.ndarray, cl_present: np.ndarray, cl_match: np.ndarray, *,
                 max_msg_nums: int, max_offset_py: int, limits: PullLimits = DEFAULT_LIMITS):
        qo = np.asarray(queue_offset, dtype=np.int64)
        n = len(qo)
        if n > 1 and np.any(qo[1:] <= qo[:-1]):
            raise ValueError("queue_offset must be strictly increasing")
        self.queue_offset = qo
        self.pos = pos = np.asarray(commitlog_offset, dtype=np.int64)
        self.size = np.asarray(size, dtype=np.int64)
        cq = np.asarray(cq_match, dtype=bool)
        present = np.asarray(cl_present, dtype=bool)
        clm = np.asarray(cl_match, dtype=bool)
        self.cq, self.present = cq, present
        self.max_msg_nums, self.max_offset_py, self.limits = max_msg_nums, max_offset_py, limits
        self.memory = limits.memory_threshold
        self.max_pull_size = mps = limits.max_pull_size
        in_mem = (max_offset_py - pos) <= self.memory
        # total > maxPullSize or > the tier's bytes  <=>  total > the smaller of the two; and
        # messageTotal + 1 > maxMsgNums or >= the tier's count  <=>  >= the smaller.
        self.bytes_limit = np.where(
            in_mem, min(limits.max_transfer_bytes_on_message_in_memory, mps),
            min(limits.max_transfer_bytes_on_message_in_disk, mps))
        self.count_limit = np.where(
            in_mem, min(limits.max_transfer_count_on_message_in_memory, max_msg_nums),
            min(limits.max_transfer_count_on_message_in_disk, max_msg_nums))
        self.read_ok = read_ok = cq & present
        self.found0 = read_ok & clm
        self.cl_rejected0 = read_ok & ~clm
        self.cand = cq & ~present            # a removed record: may set skipUntilPhy
        self.ordered = n < 2 or not np.any(pos[1:] < pos[:-1])
        self._prev_cand: Optional[np.ndarray] = None   # built on the first skipping pull
        self._skip_until: Optional[np.ndarray] = None

    # Built when first used: the pull chain (.chain) needs found_count alone.
    @cached_property
    def run_key(self) -> np.ndarray:
        """Constant along a run without holes, non-decreasing: a run's end is one searchsorted."""
        return self.queue_offset - np.arange(len(self.queue_offset), dtype=np.int64)

    # ``count[i]``: the flag's entries before entry i (a range's count is two lookups).
    found_count = _prefix_property("found0")
    cand_count = _prefix_property("cand")
    cq_count = _prefix_property("cq")
    read_count = _prefix_property("read_ok")
    rejected_count = _prefix_property("cl_rejected0")

    @cached_property
    def found_bytes(self) -> np.ndarray:
        return _prefix(np.where(self.found0, self.size, 0))

    @cached_property
    def count_bound(self) -> Optional[int]:
        """With positive sizes, an entry that sees this many messages already always breaks."""
        if np.any(self.found0 & (self.size <= 0)):
            return None
        return max(1, int(self.count_limit.max()) if len(self.size) else 1)

    def get_message(self, offset: int, *, min_offset: int, max_offset: int) -> WindowResult:
        """One pull from ``offset`` (SEMANTICS §12.2); ``found_index`` indexes this queue."""
        limits = self.limits
        corr = limits.next_offset_correction
        if max_offset == 0:
            return WindowResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, corr(offset, 0),
                                min_offset, max_offset)
        if offset < min_offset:
            return WindowResult(GetMessageStatus.OFFSET_TOO_SMALL, corr(offset, min_offset),
                                min_offset, max_offset)
        if offset == max_offset:
            return WindowResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset,
                                min_offset, max_offset)
        if offset > max_offset:
            return WindowResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, corr(offset, max_offset),
                                min_offset, max_offset)
        qo = self.queue_offset
        i0 = int(np.searchsorted(qo, offset))
        if i0 >= len(qo) or int(qo[i0]) != offset:
            # cq.iterateFrom(offset) == null: go on at the next CQ file.
            return WindowResult(GetMessageStatus.OFFSET_FOUND_NULL,
                                corr(offset, limits.roll_next_consume_queue_file(offset)),
                                min_offset, max_offset,
                                suggest_pulling_from_slave=self.max_offset_py > self.memory)
        # Reachable: the scan window, the rest of this CQ file, `next < maxOffset`, up to a hole.
        limit = min(limits.window_entries(self.max_msg_nums),
                    limits.roll_next_consume_queue_file(offset) - offset, max_offset - offset)
        run_end = int(np.searchsorted(self.run_key, self.run_key[i0], side="right"))
        res = self._scan(i0, min(limit, run_end - i0), offset)
        res.min_offset, res.max_offset = min_offset, max_offset
        return res

    def _scan(self, i0: int, n: int, offset: int) -> WindowResult:
        e = i0 + n
        sz = self.size[i0:e]
        skipping = self.cand_count[e] != self.cand_count[i0]
        if skipping:
            skipped = self._skipped(i0, e)
            found = self.found0[i0:e] & ~skipped
            found_size = np.where(found, sz, 0)
            bt = np.cumsum(found_size) - found_size
            mc = np.cumsum(found, dtype=np.int64) - found
        else:  # no removed record within reach: nothing is skipped, use the prefix sums
            if self.count_bound is not None:
                # The break comes at the latest at the entry after the count_bound-th message:
                # scan ~33 entries rather than the whole window when messages are dense.
                j = int(np.searchsorted(self.found_count,
                                        self.found_count[i0] + self.count_bound))
                if j < e:
                    e = j + 1
                    n = e - i0
                    sz = sz[:n]
            found = self.found0[i0:e]
            bt = self.found_bytes[i0:e] - self.found_bytes[i0]
            mc = self.found_count[i0:e] - self.found_count[i0]
        total = bt + sz
        brk = (((mc >= self.count_limit[i0:e]) | (total > self.bytes_limit[i0:e]))
               & (bt != 0) & (mc != 0)) | (bt >= self.max_pull_size)
        b = int(np.argmax(brk)) if n else 0
        if not n or not brk[b]:
            b = n                                  # entries [0, b) are scanned
        found_rel = np.flatnonzero(found[:b])
        max_phy = int(self.pos[i0 + b - 1]) if b else 0
        res = WindowResult(
            GetMessageStatus.NO_MATCHED_MESSAGE, offset + b, found_index=found_rel + i0,
            found_queue_offsets=found_rel + offset, message_count=len(found_rel),
            suggest_pulling_from_slave=(self.max_offset_py - max_phy) > self.memory,
            max_phy_offset_pulling=max_phy, scanned=b, passed_sql92=len(found_rel))
        if not skipping:
            eb = i0 + b
            res.buffer_total_size = int(self.found_bytes[eb] - self.found_bytes[i0])
            res.filter_message_count = int(self.rejected_count[eb] - self.rejected_count[i0])
            res.passed_cq = int(self.cq_count[eb] - self.cq_count[i0])
            res.commitlog_read = int(self.read_count[eb] - self.read_count[i0])
            # Once bufferTotal > 0 only FOUND sets the status; before, every entry does.
            if b and (res.buffer_total_size > 0 or found[b - 1]):
                res.status = GetMessageStatus.FOUND
            return res
        eb = i0 + b
        skipped, bt, found = skipped[:b], bt[:b], found[:b]
        removed = ~skipped & self.cand[i0:eb]
        rejected = ~skipped & ~found & ~removed
        res.buffer_total_size = int(np.sum(found_size[:b]))
        res.filter_message_count = int(np.count_nonzero(rejected & self.cl_rejected0[i0:eb]))
        res.skipped = int(np.count_nonzero(skipped))
        res.passed_cq = int(np.count_nonzero(~skipped & self.cq[i0:eb]))
        res.removed = int(np.count_nonzero(removed))
        res.commitlog_read = res.passed_cq - res.removed
        # The status is set by the last event: a FOUND, or a rejection/removal at bufferTotal 0.
        events = found | ((rejected | removed) & (bt == 0))
        if events.any():
            last = b - 1 - int(np.argmax(events[::-1]))
            if found[last]:
                res.status = GetMessageStatus.FOUND
            elif removed[last]:
                res.status = GetMessageStatus.MESSAGE_WAS_REMOVING
        return res

    def _skipped(self, i0: int, e: int) -> np.ndarray:
        """Per entry of [i0, e): passed over by ``skipUntilPhy`` (reset at each pull's start).

        With non-decreasing ``pos`` this needs no loop: an entry is skipped iff the last removal
        candidate before it, within this pull, lies in its commit-log file. (If that candidate
        was itself skipped, the one that set the skip is in the same file; a FOUND entry that
        would reset the skip has ``pos`` past it already, and so has everything after it.)
        """
        if not self.ordered:
            return _skipped_unordered(self.pos[i0:e], self.cq[i0:e], self.present[i0:e],
                                      self.found0[i0:e], self.cand[i0:e], self.limits)
        if self._prev_cand is None:
            n = len(self.pos)
            last = np.maximum.accumulate(np.where(self.cand, np.arange(n), -1))
            prev = np.concatenate(([-1], last[:-1]))
            self._prev_cand = prev
            self._skip_until = self.limits.roll_next_commitlog_file(self.pos[np.maximum(prev, 0)])
        return (self._prev_cand[i0:e] >= i0) & (self.pos[i0:e] < self._skip_until[i0:e])


def _skipped_unordered(pos: np.ndarray, cq: np.ndarray, present: np.ndarray, found0: np.ndarray,
                       cand: np.ndarray, limits: PullLimits) -> np.ndarray:
    """Exact skip state for unordered ``pos`` (never produced by dispatch): a loop over the
    removal candidates, each segment between two of them vectorised."""
    n = len(pos)
    skipped = np.zeros(n, dtype=bool)
    skip_until: Optional[int] = None
    start = 0
    for c in [*np.flatnonzero(cand).tolist(), n]:
        if skip_until is not None and c > start:
            sk = pos[start:c] < skip_until
            hits = np.flatnonzero(~sk & found0[start:c])
            if len(hits):  # a FOUND message resets the skip
                sk[hits[0] + 1:] = False
                skip_until = None
            skipped[start:c] = sk
        if c == n:
            break
        if skip_until is not None and pos[c] < skip_until:
            skipped[c] = True
        else:
            skip_until = int(limits.roll_next_commitlog_file(int(pos[c])))
        start = c + 1
    return skipped


def get_message_window(queue_offset: np.ndarray, commitlog_offset: np.ndarray, size: np.ndarray,
                       cq_match: np.ndarray, cl_present: np.ndarray, cl_match: np.ndarray, *,
                       offset: int, max_msg_nums: int, min_offset: int, max_offset: int,
                       max_offset_py: int, limits: PullLimits = DEFAULT_LIMITS) -> WindowResult:
    """``getMessage(group, topic, queueId, offset, maxMsgNums, filter)`` over one queue's entries.

    The arrays describe CQ entries of one queue sorted by strictly increasing ``queue_offset``;
    they must include every entry from ``offset`` up to ``min(offset + window, end of offset's CQ
    file, max_offset)`` (rows before or after are ignored). A missing ``offset`` is a missing CQ
    file (OFFSET_FOUND_NULL); a gap further on ends the iteration there, as the end of a CQ
    file's written data does. ``commitlog_offset`` should be non-decreasing, as dispatch makes
    it; otherwise a loop over the removed entries computes skipUntilPhy exactly.
    ``min_offset``/``max_offset`` are the CQ's (max = one past the last entry); ``max_offset_py``
    is commitLog.maxOffset. ``found_index`` indexes the arrays passed in.
    """
    i0 = end = 0                     # out of range: the status needs no entry
    if min_offset <= offset < max_offset and max_offset != 0:
        # Only the reachable slice is prepared (~800 entries at most), whatever was passed.
        i0 = int(np.searchsorted(queue_offset, offset))
        reach = min(limits.window_entries(max_msg_nums), max_offset - offset,
                    limits.roll_next_consume_queue_file(offset) - offset)
        end = min(len(queue_offset), i0 + max(1, reach))
    prepared = PreparedQueue(queue_offset[i0:end], commitlog_offset[i0:end], size[i0:end],
                             cq_match[i0:end], cl_present[i0:end], cl_match[i0:end],
                             max_msg_nums=max_msg_nums, max_offset_py=max_offset_py,
                             limits=limits)
    res = prepared.get_message(offset, min_offset=min_offset, max_offset=max_offset)
    res.found_index = res.found_index + i0
    return res
