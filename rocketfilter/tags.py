"""TAG filtering (SEMANTICS §2): tag codes, SubscriptionData, the broker's consume-queue check and
the client's re-check, in Python. The same checks as Spark Columns are in
:mod:`rocketfilter.tag_columns`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import List, Optional

from rocketfilter.javalang import string_hash_code

SUB_ALL = "*"
TAG = "TAG"
SQL92 = "SQL92"
_TAG_SEPARATOR = "||"


def java_hash(s: str) -> int:
    """Java ``String.hashCode`` of ``s`` (a signed 32-bit int)."""
    return string_hash_code(s)


def tags_code(tags: Optional[str]) -> int:
    """The tag code the broker stores for a message's ``TAGS`` value: 0 when absent or empty,
    else the hash of the whole string (``"a||b"`` is one tag)."""
    return string_hash_code(tags) if tags else 0


def is_tag_type(expression_type: Optional[str]) -> bool:
    """``ExpressionType.isTagType``: null, ``""`` and ``"TAG"`` (case-sensitive)."""
    return expression_type is None or expression_type == "" or expression_type == TAG


def check_expression_type(expression_type: Optional[str], where: str = "expression type") -> str:
    """The expression type a consumer may subscribe with, as RocketMQ accepts it: ``TAG`` (also
    null or ``""``, ``ExpressionType.isTagType``) or ``SQL92``, case-sensitive (the broker's
    ``FilterFactory`` has no filter for any other name, so its filter data is never built and
    every pull is refused). Returns ``"TAG"`` or ``"SQL92"``; raises ValueError otherwise.

    >>> check_expression_type(None), check_expression_type("SQL92")
    ('TAG', 'SQL92')
    >>> check_expression_type("sql92")
    Traceback (most recent call last):
    ValueError: expression type 'sql92' is not one RocketMQ accepts: 'TAG' (or null/empty) or 'SQL92', case-sensitive
    """
    if is_tag_type(expression_type):
        return TAG
    if expression_type == SQL92:
        return SQL92
    raise ValueError(f"{where} {expression_type!r} is not one RocketMQ accepts: 'TAG' (or "
                     "null/empty) or 'SQL92', case-sensitive")


def java_trim(s: str) -> str:
    """Java ``String.trim``: strip characters <= U+0020 (not Unicode whitespace) at both ends."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


def java_split_tags(sub_string: str) -> List[str]:
    """Java ``subString.split("\\\\|\\\\|")``: non-overlapping ``||`` from the left, with trailing
    empty pieces dropped (a leading empty piece stays)."""
    pieces = sub_string.split(_TAG_SEPARATOR)
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


@dataclass
class SubscriptionData:
    """A consumer's subscription to one topic, as RocketMQ's ``SubscriptionData`` holds it.

    ``tags_set`` and ``code_set`` are lists kept in insertion order without duplicates (Java uses
    HashSets; only membership matters).
    """

    topic: Optional[str]
    sub_string: str
    tags_set: List[str] = field(default_factory=list)
    code_set: List[int] = field(default_factory=list)
    expression_type: Optional[str] = TAG
    sub_version: int = field(default_factory=lambda: time.time_ns() // 1_000_000)
    class_filter_mode: bool = False

    @property
    def is_sub_all(self) -> bool:
        return self.sub_string == SUB_ALL


def _build_tag_subscription(topic: Optional[str], sub_string: Optional[str]) -> SubscriptionData:
    """``FilterAPI.buildSubscriptionData``."""
    if not sub_string or sub_string == SUB_ALL:
        return SubscriptionData(topic=topic, sub_string=SUB_ALL)
    pieces = java_split_tags(sub_string)
    if not pieces:
        raise ValueError(f"subString split error: {sub_string!r} has no tag between '||' separators")
    sub = SubscriptionData(topic=topic, sub_string=sub_string)
    for piece in pieces:
        tag = java_trim(piece)
        if tag and tag not in sub.tags_set:
            sub.tags_set.append(tag)
            code = string_hash_code(tag)
            if code not in sub.code_set:
                sub.code_set.append(code)
    return sub


def build_subscription(
    topic: Optional[str], sub_string: Optional[str], expression_type: Optional[str] = TAG
) -> SubscriptionData:
    """``FilterAPI.build(topic, subString, type)``.

    TAG (or ``None``) parses the tag list; any other type, even ``""`` or ``"tag"``, keeps the
    expression as is with empty tag and code sets. Raises ValueError where RocketMQ throws.

    >>> build_subscription("T", "TagA || TagB").tags_set
    ['TagA', 'TagB']
    >>> build_subscription("T", " * ").code_set      # only the exact "*" subscribes to all
    [42]
    >>> build_subscription("T", "a > 1", "SQL92").tags_set
    []
    """
    if expression_type is None or expression_type == TAG:
        return _build_tag_subscription(topic, sub_string)
    if not sub_string:
        raise ValueError(f"Expression can't be null! {expression_type}")
    return SubscriptionData(topic=topic, sub_string=sub_string, expression_type=expression_type)


def _low_int(value: int) -> int:
    """Java ``Long.intValue``: the low 32 bits as a signed int."""
    return ((value & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000


def is_matched_by_consume_queue(sub: Optional[SubscriptionData], tags_code: Optional[int]) -> bool:
    """The TAG branch of ``ExpressionMessageFilter.isMatchedByConsumeQueue`` (§2.3).

    ``tags_code`` is the CQ slot value (``None`` when unreadable, which matches). Non-tag
    subscriptions pass here; their bitmap check needs filter data and lives with the pull.
    """
    if sub is None or sub.class_filter_mode or not is_tag_type(sub.expression_type):
        return True
    if tags_code is None or sub.is_sub_all:
        return True
    return _low_int(tags_code) in sub.code_set


def client_accepts(sub: Optional[SubscriptionData], tags: Optional[str]) -> bool:
    """The client re-filter of ``PullAPIWrapper.processPullResult`` (§2.4): with a non-empty tag
    set, keep only messages whose ``TAGS`` is exactly one of the subscribed tags."""
    if sub is None or sub.class_filter_mode or not sub.tags_set:
        return True
    return tags is not None and tags in sub.tags_set


def delivered(sub: Optional[SubscriptionData], tags: Optional[str]) -> bool:
    """Whether a message tagged ``tags`` reaches the consumer: broker check, then client check."""
    return is_matched_by_consume_queue(sub, tags_code(tags)) and client_accepts(sub, tags)
