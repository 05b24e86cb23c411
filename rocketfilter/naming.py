"""Topic and group names (RocketMQ 5.x ``TopicValidator``) and permissions (``PermName``).

rocketfilter.config re-exports every name here, for its many importers.
"""
from __future__ import annotations

# Only ^[%|a-zA-Z0-9_-]+$, so a name can never leave the store directory it names ("..", "/"
# and "\" are all rejected).
TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 120
RETRY_OR_DLQ_TOPIC_MAX_LENGTH = 255
MAX_QUEUE_NUMS = 1024   # the most queues a topic of a store can have (read and write)
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
_VALID_CHARS = frozenset("%|_-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
SYSTEM_TOPICS = frozenset({
    "TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
    "CHECKPOINT_TOPIC", "RMQ_SYS_TOPIC_CONFIG_SYNC", "RMQ_SYS_CONSUMER_OFFSET_SYNC",
    "RMQ_SYS_DELAY_OFFSET_SYNC", "RMQ_SYS_SUBSCRIPTION_GROUP_SYNC", "RMQ_SYS_MESSAGE_MODE_SYNC",
    "RMQ_SYS_TIMER_METRICS_SYNC",
})
NOT_ALLOWED_SEND_TOPICS = SYSTEM_TOPICS - {"TBW102", "BenchmarkTest", "RMQ_SYS_TRACE_TOPIC", "CHECKPOINT_TOPIC"}


class InvalidNameError(ValueError):
    """A topic or group name RocketMQ's TopicValidator rejects."""


def _check_name(kind: str, name: object, max_length: int) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidNameError(f"The specified {kind} is blank: {name!r}")
    bad = sorted({c for c in name if c not in _VALID_CHARS})
    if bad:
        raise InvalidNameError(f"The specified {kind}: {name!r}, contains illegal characters {bad}, "
                               "allowing only ^[%|a-zA-Z0-9_-]+$")
    if len(name) > max_length:
        raise InvalidNameError(f"The specified {kind}: {name!r}, is longer than {kind} max length: "
                               f"{max_length} (it has {len(name)})")
    return name


def validate_topic(topic: str) -> str:
    """``TopicValidator.validateTopic``: returns the topic or raises InvalidNameError.

    >>> validate_topic("../etc")
    Traceback (most recent call last):
      ...
    rocketfilter.naming.InvalidNameError: The specified topic: '../etc', contains illegal characters ['.', '/'], allowing only ^[%|a-zA-Z0-9_-]+$
    """
    retry_or_dlq = isinstance(topic, str) and topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))
    return _check_name("topic", topic, RETRY_OR_DLQ_TOPIC_MAX_LENGTH if retry_or_dlq else TOPIC_MAX_LENGTH)


def validate_group(group: str) -> str:
    """``TopicValidator.validateGroup``: at most 120 characters of ``^[%|a-zA-Z0-9_-]+$``."""
    return _check_name("group", group, GROUP_MAX_LENGTH)


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def is_not_allowed_send_topic(topic: str) -> bool:
    return topic in NOT_ALLOWED_SEND_TOPICS


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


class PermName:
    """Topic and broker permissions (``PermName``): 6 = read + write.

    >>> PermName.perm2string(6), PermName.is_readable(2)
    ('RW-', False)
    """

    PERM_PRIORITY = 8
    PERM_READ = 4
    PERM_WRITE = 2
    PERM_INHERIT = 1

    @staticmethod
    def is_readable(perm: int) -> bool:
        return (perm & PermName.PERM_READ) == PermName.PERM_READ

    @staticmethod
    def is_writeable(perm: int) -> bool:
        return (perm & PermName.PERM_WRITE) == PermName.PERM_WRITE

    @staticmethod
    def is_inherited(perm: int) -> bool:
        return (perm & PermName.PERM_INHERIT) == PermName.PERM_INHERIT

    @staticmethod
    def is_valid(perm: int) -> bool:
        return 0 <= perm < PermName.PERM_PRIORITY

    @staticmethod
    def perm2string(perm: int) -> str:
        return ("R" if PermName.is_readable(perm) else "-") + ("W" if PermName.is_writeable(perm) else "-") + (
            "X" if PermName.is_inherited(perm) else "-")

