"""The limits of one pull (SEMANTICS §12.1, §12.2): the ``MessageStoreConfig`` / ``StoreUtil``
values ``getMessage``'s loop reads, and ``isTheBatchFull`` in its scalar form. The vectorised
loop that applies them is :mod:`.window`.

>>> PullLimits(max_filter_message_size=16000).window_entries(32)
800
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

CQ_STORE_UNIT_SIZE = 20
MAX_PULL_MSG_SIZE = 128 * 1024 * 1024
_FALLBACK_PHYSICAL_MEMORY = 24 * 1024 ** 3


def _physical_memory() -> int:
    """StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE: this machine's RAM, else 24 GiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return int(total) if total > 0 else _FALLBACK_PHYSICAL_MEMORY
    except (ValueError, OSError, AttributeError):
        return _FALLBACK_PHYSICAL_MEMORY


@dataclass(frozen=True)
class PullLimits:
    """MessageStoreConfig / StoreUtil values the pull loop reads (§12.1), in snake_case."""

    max_transfer_bytes_on_message_in_memory: int = 262144
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 65536
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    total_physical_memory: int = field(default_factory=_physical_memory)
    max_filter_message_size: int = 16000
    # A pull never crosses a multiple of mapped_file_size_consume_queue / 20 (one CQ file).
    mapped_file_size_consume_queue: int = 300000 * CQ_STORE_UNIT_SIZE
    mapped_file_size_commitlog: int = 1024 * 1024 * 1024
    max_pull_msg_size: int = MAX_PULL_MSG_SIZE
    # getMessage's maxTotalMsgSize argument; the plain pull entry point passes MAX_PULL_MSG_SIZE.
    max_total_msg_size: int = MAX_PULL_MSG_SIZE
    broker_role: str = "ASYNC_MASTER"
    offset_check_in_slave: bool = False

    @property
    def memory_threshold(self) -> int:
        """``(long) (TOTAL_PHYSICAL_MEMORY_SIZE * (ratio / 100.0))``, as Java computes it."""
        return int(self.total_physical_memory * (self.access_message_in_memory_max_ratio / 100.0))

    @property
    def max_pull_size(self) -> int:
        """``min(max(maxTotalMsgSize, 100), MAX_PULL_MSG_SIZE)``."""
        return min(max(self.max_total_msg_size, 100), self.max_pull_msg_size)

    @property
    def consume_queue_units_per_file(self) -> int:
        return max(1, self.mapped_file_size_consume_queue // CQ_STORE_UNIT_SIZE)

    def window_entries(self, max_msg_nums: int) -> int:
        """How many entries from ``offset`` pass ``(qo - offset) * 20 >= maxFilterBytes``."""
        max_filter_bytes = max(self.max_filter_message_size, max_msg_nums * CQ_STORE_UNIT_SIZE)
        return max(0, -(-max_filter_bytes // CQ_STORE_UNIT_SIZE))

    def roll_next_consume_queue_file(self, queue_offset: int) -> int:
        """ConsumeQueue.rollNextFile: the first queue offset of the next CQ file."""
        units = self.consume_queue_units_per_file
        return queue_offset + units - queue_offset % units

    def roll_next_commitlog_file(self, pos):
        """CommitLog.rollNextFile: the first physical offset of the next commit-log file."""
        size = self.mapped_file_size_commitlog
        return pos + size - pos % size

    def next_offset_correction(self, old_offset: int, new_offset: int) -> int:
        """nextOffsetCorrection: a slave without offsetCheckInSlave keeps the old offset."""
        if self.broker_role == "SLAVE" and not self.offset_check_in_slave:
            return old_offset
        return new_offset


DEFAULT_LIMITS = PullLimits()


def is_the_batch_full(size_py: int, batch_num: int, max_msg_nums: int, max_bytes: int,
                      buffer_total: int, message_total: int, in_mem: bool,
                      config: PullLimits = DEFAULT_LIMITS) -> bool:
    """DefaultMessageStore.isTheBatchFull, scalar form (§12.2)."""
    if buffer_total == 0 or message_total == 0:
        return False  # the first message is always taken, however big
    if message_total + batch_num > max_msg_nums:
        return True
    if buffer_total + size_py > max_bytes:
        return True
    if in_mem:
        if buffer_total + size_py > config.max_transfer_bytes_on_message_in_memory:
            return True
        return message_total > config.max_transfer_count_on_message_in_memory - 1
    if buffer_total + size_py > config.max_transfer_bytes_on_message_in_disk:
        return True
    return message_total > config.max_transfer_count_on_message_in_disk - 1
