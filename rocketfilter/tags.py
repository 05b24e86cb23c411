"""TAG filtering (SEMANTICS §2): tag codes, SubscriptionData, the broker's consume-queue check and
the client's re-check, in Python and as Spark Columns.

The Column predicates are built from literals and column references only (no Python UDF, no SQL
text), so user tag strings can never change the query's shape.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Union

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketfilter.javalang import string_hash_code

SUB_ALL = "*"
TAG = "TAG"
SQL92 = "SQL92"
_TAG_SEPARATOR = "||"

ColumnOrName = Union[Column, str]


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


def _column(col: ColumnOrName) -> Column:
    return F.col(col) if isinstance(col, str) else col


def _low_int_column(col: Column) -> Column:
    # Bit arithmetic rather than cast: with ANSI on, casting an out-of-range bigint raises.
    return col.bitwiseAND(F.lit(0xFFFFFFFF)).bitwiseXOR(F.lit(0x80000000)) - F.lit(0x80000000)


def _isin(col: Column, values: Iterable) -> Column:
    values = list(values)
    return col.isin(*values) if values else F.lit(False)


def tag_code_predicate(sub: Optional[SubscriptionData], tags_code: ColumnOrName = "tags_code") -> Column:
    """The broker's consume-queue tag check as a never-null boolean Column.

    >>> df.filter(tag_code_predicate(build_subscription("T", "TagA || TagC")))  # doctest: +SKIP
    """
    if sub is None or sub.class_filter_mode or not is_tag_type(sub.expression_type):
        return F.lit(True)
    if sub.is_sub_all:
        return F.lit(True)
    code = _column(tags_code)
    return code.isNull() | _isin(_low_int_column(code), sub.code_set)


def tag_exact_predicate(sub: Optional[SubscriptionData], tags: ColumnOrName = "tags") -> Column:
    """The client's exact-tag re-check as a never-null boolean Column."""
    if sub is None or sub.class_filter_mode or not sub.tags_set:
        return F.lit(True)
    tag = _column(tags)
    return tag.isNotNull() & _isin(tag, sub.tags_set)


def tags_code_column(tags: ColumnOrName = "tags") -> Column:
    """:func:`tags_code` as a Column: Java ``String.hashCode`` over the UTF-16 code units, as a
    signed int in a bigint; 0 for a null or empty tag string. Built-in functions only.

    >>> cq = cl.select(tags_code_column("tags").alias("tags_code"))  # doctest: +SKIP
    """
    units = F.hex(F.encode(_column(tags), "UTF-16BE"))  # 4 hex digits per UTF-16 unit
    n = F.length(units) / 4
    code = F.aggregate(
        F.sequence(F.lit(0), (n - 1).cast("int")),
        F.lit(0).cast("bigint"),
        lambda h, i: (h * 31 + F.conv(F.substring(units, i * 4 + 1, 4), 16, 10).cast("bigint"))
        % F.lit(1 << 32),
    )
    signed = F.when(code >= F.lit(1 << 31), code - F.lit(1 << 32)).otherwise(code)
    return F.when(F.coalesce(F.length(_column(tags)), F.lit(0)) == 0, F.lit(0).cast("bigint")) \
        .otherwise(signed)
