"""A plain, sequential model of ``DefaultMessageStore.getMessage`` (SEMANTICS §12.2).

Written line by line from the spec's pseudocode, one entry at a time, over an in-memory queue.
It deliberately shares no code with ``rocketfilter.pull`` (only the status enum), so the tests
compare two independent readings of the spec.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional

from rocketfilter.pull.result import GetMessageStatus as S

UNIT = 20


@dataclass
class Entry:
    queue_offset: int
    pos: int
    size: int
    cq_match: bool = True      # isMatchedByConsumeQueue
    cl_match: bool = True      # isMatchedByCommitLog
    removed: bool = False      # commit-log record deleted


@dataclass
class Config:
    """The same knobs as PullLimits, by name (filled from ``dataclasses.asdict(limits)``)."""

    max_transfer_bytes_on_message_in_memory: int = 262144
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 65536
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    total_physical_memory: int = 24 * 1024 ** 3
    max_filter_message_size: int = 16000
    mapped_file_size_consume_queue: int = 300000 * 20
    mapped_file_size_commitlog: int = 1024 ** 3
    max_pull_msg_size: int = 128 * 1024 * 1024
    max_total_msg_size: int = 128 * 1024 * 1024
    broker_role: str = "ASYNC_MASTER"
    offset_check_in_slave: bool = False


@dataclass
class Queue:
    """One consume queue: entries by offset (missing offsets are holes), its min and max."""

    entries: Dict[int, Entry]
    min_offset: int
    max_offset: int

    def iterate_from(self, start: int, cfg: Config) -> Optional[Iterator[Entry]]:
        """cq.iterateFrom: None if `start` is missing, else entries up to the file end / a hole."""
        if start not in self.entries:
            return None
        units = max(1, cfg.mapped_file_size_consume_queue // UNIT)
        file_end = start + units - start % units

        def gen() -> Iterator[Entry]:
            q = start
            while q < file_end and q in self.entries:
                yield self.entries[q]
                q += 1
        return gen()


@dataclass
class Result:
    status: S
    next_begin_offset: int
    min_offset: int = 0
    max_offset: int = 0
    found: List[int] = field(default_factory=list)
    buffer_total: int = 0
    message_count: int = 0
    filtered: int = 0
    suggest_pulling_from_slave: bool = False


def batch_full(size_py, batch_num, max_msg_nums, max_bytes, buffer_total, message_total,
               in_mem, cfg: Config) -> bool:
    if buffer_total == 0 or message_total == 0:
        return False
    if message_total + batch_num > max_msg_nums:
        return True
    if buffer_total + size_py > max_bytes:
        return True
    if in_mem:
        if buffer_total + size_py > cfg.max_transfer_bytes_on_message_in_memory:
            return True
        return message_total >= cfg.max_transfer_count_on_message_in_memory
    if buffer_total + size_py > cfg.max_transfer_bytes_on_message_in_disk:
        return True
    return message_total >= cfg.max_transfer_count_on_message_in_disk


def find_or_create_consume_queue(queue: Optional[Queue]) -> Queue:
    """DefaultMessageStore's findConsumeQueue is findOrCreateConsumeQueue (5.x; 4.x creates the
    queue too): a queue that never received a message is an empty queue, never null."""
    return queue if queue is not None else Queue({}, 0, 0)


def get_message(queue: Optional[Queue], offset: int, max_msg_nums: int, max_offset_py: int,
                cfg: Config) -> Result:
    """``getMessage``. ``queue=None`` is findConsumeQueue returning null, which only MessageStore
    implementations other than DefaultMessageStore do (NO_MATCHED_LOGIC_QUEUE); model the broker
    with :func:`find_or_create_consume_queue`."""
    def corr(old, new):
        if cfg.broker_role == "SLAVE" and not cfg.offset_check_in_slave:
            return old
        return new

    memory = cfg.total_physical_memory * cfg.access_message_in_memory_max_ratio // 100
    status = S.NO_MESSAGE_IN_QUEUE
    nxt = offset
    min_offset = max_offset = 0
    filtered = 0
    r = Result(status, nxt)
    if queue is None:
        status = S.NO_MATCHED_LOGIC_QUEUE
        nxt = corr(offset, 0)
    else:
        min_offset, max_offset = queue.min_offset, queue.max_offset
        if max_offset == 0:
            status, nxt = S.NO_MESSAGE_IN_QUEUE, corr(offset, 0)
        elif offset < min_offset:
            status, nxt = S.OFFSET_TOO_SMALL, corr(offset, min_offset)
        elif offset == max_offset:
            status, nxt = S.OFFSET_OVERFLOW_ONE, offset
        elif offset > max_offset:
            status, nxt = S.OFFSET_OVERFLOW_BADLY, corr(offset, max_offset)
        else:
            max_filter_bytes = max(cfg.max_filter_message_size, max_msg_nums * UNIT)
            max_pull_size = min(max(cfg.max_total_msg_size, 100), cfg.max_pull_msg_size)
            status = S.NO_MATCHED_MESSAGE
            max_phy_offset_pulling = 0
            files = 0
            while r.buffer_total <= 0 and nxt < max_offset and files < 1:
                files += 1
                it = queue.iterate_from(nxt, cfg)
                if it is None:
                    status = S.OFFSET_FOUND_NULL
                    units = max(1, cfg.mapped_file_size_consume_queue // UNIT)
                    nxt = corr(nxt, nxt + units - nxt % units)
                    break
                skip_until_phy = None
                for u in it:
                    if not nxt < max_offset:
                        break
                    in_mem = (max_offset_py - u.pos) <= memory
                    if (u.queue_offset - offset) * UNIT >= max_filter_bytes:
                        break
                    if batch_full(u.size, 1, max_msg_nums, max_pull_size, r.buffer_total,
                                  r.message_count, in_mem, cfg):
                        break
                    if r.buffer_total >= max_pull_size:
                        break
                    max_phy_offset_pulling = u.pos
                    nxt = u.queue_offset + 1
                    if skip_until_phy is not None and u.pos < skip_until_phy:
                        continue
                    if not u.cq_match:
                        if r.buffer_total == 0:
                            status = S.NO_MATCHED_MESSAGE
                        continue
                    if u.removed:
                        if r.buffer_total == 0:
                            status = S.MESSAGE_WAS_REMOVING
                        cl = cfg.mapped_file_size_commitlog
                        skip_until_phy = u.pos + cl - u.pos % cl
                        continue
                    if not u.cl_match:
                        if r.buffer_total == 0:
                            status = S.NO_MATCHED_MESSAGE
                        filtered += 1
                        continue
                    r.found.append(u.queue_offset)
                    r.buffer_total += u.size
                    r.message_count += 1
                    status = S.FOUND
                    skip_until_phy = None
            r.suggest_pulling_from_slave = (max_offset_py - max_phy_offset_pulling) > memory
    r.status, r.next_begin_offset = status, nxt
    r.min_offset, r.max_offset = min_offset, max_offset
    r.filtered = filtered
    return r


def pull_sequence(queue: Queue, start_offset: int, end_offset: Optional[int], max_msg_nums: int,
                  max_offset_py: int, cfg: Config, max_pulls: Optional[int] = None
                  ) -> List[tuple]:
    """Successive pulls; returns [(offset, Result)]. Stops as pull_sequence_arrays documents."""
    out = []
    offset = start_offset
    stop_at = queue.max_offset if end_offset is None else min(end_offset, queue.max_offset)
    while max_pulls is None or len(out) < max_pulls:
        res = get_message(queue, offset, max_msg_nums, max_offset_py, cfg)
        out.append((offset, res))
        if res.status in (S.OFFSET_OVERFLOW_ONE, S.NO_MESSAGE_IN_QUEUE, S.NO_MATCHED_LOGIC_QUEUE):
            break
        if res.next_begin_offset <= offset or res.next_begin_offset >= stop_at:
            break
        offset = res.next_begin_offset
    return out


def to_arrays(queue: Queue) -> dict:
    """The queue as the column arrays rocketfilter.pull takes (sorted by queue offset)."""
    import numpy as np

    es = [queue.entries[q] for q in sorted(queue.entries)]
    return dict(
        queue_offset=np.array([e.queue_offset for e in es], dtype=np.int64),
        commitlog_offset=np.array([e.pos for e in es], dtype=np.int64),
        size=np.array([e.size for e in es], dtype=np.int64),
        cq_match=np.array([e.cq_match for e in es], dtype=bool),
        cl_present=np.array([not e.removed for e in es], dtype=bool),
        cl_match=np.array([e.cl_match for e in es], dtype=bool),
    )


def make_queue(sizes, start: int = 0, pos0: int = 0, cq=None, cl=None, removed=None,
               min_offset: Optional[int] = None, max_offset: Optional[int] = None) -> Queue:
    """Contiguous entries from `start`, laid out back to back in the commit log from `pos0`."""
    entries = {}
    pos = pos0
    for i, s in enumerate(sizes):
        q = start + i
        entries[q] = Entry(q, pos, s, True if cq is None else bool(cq[i]),
                           True if cl is None else bool(cl[i]),
                           False if removed is None else bool(removed[i]))
        pos += s
    return Queue(entries, start if min_offset is None else min_offset,
                 start + len(sizes) if max_offset is None else max_offset)
