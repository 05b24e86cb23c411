"""Argument checks shared by the Python API and the command line, so both refuse the same input
with the same words.

>>> check_max_msg_nums(32)
32
>>> check_offset(-5, "commit offset")
Traceback (most recent call last):
  ...
ValueError: commit offset must be an integer >= 0, got -5
"""
from __future__ import annotations

from typing import Any

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


def _is_int(value: Any) -> bool:
    # bool is an int in Python, never in a RocketMQ request.
    return isinstance(value, int) and not isinstance(value, bool)


def check_max_msg_nums(value: Any, what: str = "max_msg_nums") -> int:
    """A pull's batch size: 1 .. 2^31-1 (RocketMQ's consumers refuse a batch size below 1)."""
    if not _is_int(value) or not 1 <= value <= INT_MAX:
        raise ValueError(f"{what} must be an integer from 1 to {INT_MAX}, got {value!r}")
    return value


def check_queue_id(value: Any, what: str = "queue_id") -> int:
    """A queue id: a Java int >= 0."""
    if not _is_int(value) or not 0 <= value <= INT_MAX:
        raise ValueError(f"{what} must be an integer from 0 to {INT_MAX}, got {value!r}")
    return value


def check_offset(value: Any, what: str = "offset") -> int:
    """A queue offset that is stored (a committed offset): a Java long >= 0. RocketMQ never keeps
    a negative committed offset; -1 only means "none" when read back."""
    if not _is_int(value) or not 0 <= value <= LONG_MAX:
        raise ValueError(f"{what} must be an integer >= 0, got {value!r}")
    return value


def check_pull_offset(value: Any, what: str = "offset") -> int:
    """A pull's request offset: any Java long (a negative one is answered OFFSET_TOO_SMALL, as a
    broker does)."""
    if not _is_int(value) or not -LONG_MAX - 1 <= value <= LONG_MAX:
        raise ValueError(f"{what} must be an integer (a Java long), got {value!r}")
    return value
