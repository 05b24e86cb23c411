"""The pull request/response protocol: ``ResponseCode``, the request's ``PullSysFlag`` bits,
``PullMessageRequestHeader``, the response, and ``composeResponseHeader``'s status -> code
table (SEMANTICS §12.3, §14).

Split out of :mod:`.broker` (the checks and state of a pull), which re-exports these names.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import List, Optional

from rocketfilter.pull.result import GetMessageResult, GetMessageStatus


class ResponseCode(enum.IntEnum):
    """``ResponseCode`` values a pull can answer (§14)."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    INVALID_PARAMETER = 29
    NOT_LEADER_FOR_QUEUE = 501


class PullSysFlag:
    """The pull request's ``sysFlag`` bits.

    >>> PullSysFlag.build_sys_flag(commit_offset=True, suspend=False, subscription=True, class_filter=False)
    5
    """

    FLAG_COMMIT_OFFSET = 0x1
    FLAG_SUSPEND = 0x1 << 1
    FLAG_SUBSCRIPTION = 0x1 << 2
    FLAG_CLASS_FILTER = 0x1 << 3
    FLAG_LITE_PULL_MESSAGE = 0x1 << 4

    @staticmethod
    def build_sys_flag(commit_offset: bool, suspend: bool, subscription: bool, class_filter: bool,
                       lite_pull: bool = False) -> int:
        return ((PullSysFlag.FLAG_COMMIT_OFFSET if commit_offset else 0) | (PullSysFlag.FLAG_SUSPEND if suspend else 0)
                | (PullSysFlag.FLAG_SUBSCRIPTION if subscription else 0)
                | (PullSysFlag.FLAG_CLASS_FILTER if class_filter else 0)
                | (PullSysFlag.FLAG_LITE_PULL_MESSAGE if lite_pull else 0))

    @staticmethod
    def has_commit_offset_flag(sys_flag: int) -> bool:
        return bool(sys_flag & PullSysFlag.FLAG_COMMIT_OFFSET)

    @staticmethod
    def has_suspend_flag(sys_flag: int) -> bool:
        return bool(sys_flag & PullSysFlag.FLAG_SUSPEND)

    @staticmethod
    def has_subscription_flag(sys_flag: int) -> bool:
        return bool(sys_flag & PullSysFlag.FLAG_SUBSCRIPTION)

    @staticmethod
    def has_class_filter_flag(sys_flag: int) -> bool:
        return bool(sys_flag & PullSysFlag.FLAG_CLASS_FILTER)


@dataclass
class PullMessageRequestHeader:
    """``PullMessageRequestHeader``. ``subscription``/``expression_type`` are only read when
    ``sys_flag`` has the subscription bit; ``sub_version`` is checked against the registration."""

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int = 32
    sys_flag: int = 0
    commit_offset: int = 0
    suspend_timeout_millis: int = 0
    subscription: Optional[str] = None
    sub_version: int = 0
    expression_type: Optional[str] = None


@dataclass
class PullMessageResponse:
    """The response command and its ``PullMessageResponseHeader``; ``messages`` and ``result``
    come from getMessage (empty / None when a check refused the pull)."""

    code: int
    remark: Optional[str] = None
    next_begin_offset: Optional[int] = None
    min_offset: Optional[int] = None
    max_offset: Optional[int] = None
    suggest_which_broker_id: Optional[int] = None
    messages: List[dict] = field(default_factory=list)
    result: Optional[GetMessageResult] = None

    @property
    def code_name(self) -> str:
        try:
            return ResponseCode(self.code).name
        except ValueError:
            return str(self.code)


def status_to_response_code(status: GetMessageStatus, request_offset: int) -> ResponseCode:
    """``composeResponseHeader``'s GetMessageStatus -> response code table (§12.3)."""
    status = GetMessageStatus(status)
    if status is GetMessageStatus.FOUND:
        return ResponseCode.SUCCESS
    if status in (GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.MESSAGE_WAS_REMOVING):
        return ResponseCode.PULL_RETRY_IMMEDIATELY
    if status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
        return ResponseCode.PULL_OFFSET_MOVED if request_offset != 0 else ResponseCode.PULL_NOT_FOUND
    if status in (GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.OFFSET_OVERFLOW_ONE):
        return ResponseCode.PULL_NOT_FOUND
    return ResponseCode.PULL_OFFSET_MOVED  # OFFSET_OVERFLOW_BADLY, OFFSET_TOO_SMALL, OFFSET_RESET
