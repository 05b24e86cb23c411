"""``AllocateMessageQueueAveragely`` (SEMANTICS §13): contiguous blocks of queues per consumer,
the first ``len(mq_all) % len(cid_all)`` consumers getting one extra."""
from __future__ import annotations

from typing import List, Optional, Sequence, TypeVar

Queue = TypeVar("Queue")


def allocate_averagely(
    group: Optional[str], current_cid: Optional[str], mq_all: Sequence[Queue], cid_all: Sequence[str]
) -> List[Queue]:
    """The queues of ``mq_all`` that consumer ``current_cid`` of ``group`` takes.

    Like the strategy, it does not sort: ``RebalanceImpl`` sorts ``mq_all`` (topic, broker name,
    queue id) and ``cid_all`` (as strings) before calling it, and so must the caller. Raises
    ValueError where RocketMQ throws IllegalArgumentException; a consumer not in ``cid_all`` gets
    nothing.

    >>> allocate_averagely("G", "c2", list(range(8)), ["c0", "c1", "c2"])
    [6, 7]
    """
    if not current_cid:
        raise ValueError(f"currentCID is empty (group {group!r})")
    if not mq_all:
        raise ValueError(f"mqAll is null or mqAll empty (group {group!r})")
    if not cid_all:
        raise ValueError(f"cidAll is null or cidAll empty (group {group!r})")
    if current_cid not in cid_all:
        return []
    index = list(cid_all).index(current_cid)
    n_queues, n_consumers = len(mq_all), len(cid_all)
    mod = n_queues % n_consumers
    gets_extra = mod > 0 and index < mod
    if n_queues <= n_consumers:
        average = 1
    else:
        average = n_queues // n_consumers + (1 if gets_extra else 0)
    start = index * average if gets_extra else index * average + mod
    take = min(average, n_queues - start)
    return list(mq_all[start:start + max(take, 0)])
