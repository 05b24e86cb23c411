"""``GetMessageStatus`` and ``GetMessageResult`` (SEMANTICS §12), with RocketMQ's names."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional


class GetMessageStatus(str, enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"
    OFFSET_RESET = "OFFSET_RESET"

    def __str__(self) -> str:
        return self.value


@dataclass
class FilterFunnel:
    """How many entries each filter stage let through, for "why did I not get it?"."""

    scanned: int = 0
    passed_tag_code: int = 0
    bitmap_passed: int = 0
    bitmap_skipped: int = 0
    commitlog_read: int = 0
    passed_sql92: int = 0
    found: int = 0


@dataclass
class GetMessageResult:
    """What ``DefaultMessageStore.getMessage`` answers.

    ``message_queue_offsets`` are the queue offsets of the found messages, in order; ``messages``
    holds them as MessageExt-like dicts and ``dataframe`` as a Spark DataFrame.
    """

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int = 0
    max_offset: int = 0
    suggest_pulling_from_slave: bool = False
    buffer_total_size: int = 0
    message_count: int = 0
    filter_message_count: int = 0
    message_queue_offsets: List[int] = field(default_factory=list)
    messages: List[dict] = field(default_factory=list)
    funnel: FilterFunnel = field(default_factory=FilterFunnel)
    spark_jobs: int = 0  # Spark queries this pull ran
    # Builds the DataFrame of the found messages on first use: most pulls never ask for it.
    dataframe_factory: Optional[Callable[[], Any]] = field(default=None, repr=False)

    @property
    def dataframe(self):
        """The found messages as a Spark DataFrame (commitlog table schema)."""
        return None if self.dataframe_factory is None else self.dataframe_factory()
