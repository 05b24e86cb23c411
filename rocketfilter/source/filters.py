"""A subscription's decision on Arrow data: what a consumer of it receives (SEMANTICS §2, §7).

TAG: the broker's consume-queue check (the low 32 bits of the entry's tag code in the
subscription's code set; an entry without a code passes), then the client's exact re-check
(``PullAPIWrapper.processPullResult``: the message's TAGS is one of the subscribed tags), so a
hash collision the broker lets through never reaches the application. SQL92: the selector on
each message's properties (:mod:`rocketfilter.selector.arrow`), delivered only on TRUE.

Picklable: the readers build one on the driver and Spark ships it to each task.

>>> f = SubscriptionFilter.build("T", "TagA || TagB", "TAG")
>>> f.consume_queue(pa.array([java_hash("TagA"), java_hash("TagC"), None], pa.int64())).tolist()
[True, False, True]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rocketfilter.tags import SQL92, build_subscription, java_hash  # noqa: F401  (doctest)


@dataclass(frozen=True)
class SubscriptionFilter:
    """One subscription, as the two checks a delivered message passes."""

    topic: str
    sub_string: str
    expression_type: str
    code_set: Tuple[int, ...] = ()
    tags_set: Tuple[str, ...] = ()
    selector: Optional[object] = None   # rocketfilter.selector.arrow.ArrowSelector for SQL92

    @classmethod
    def build(cls, topic: str, sub_string: str, expression_type: str) -> "SubscriptionFilter":
        """From the consumer's subscription (``FilterAPI.build``; a SQL92 selector is compiled,
        raising SelectorSyntaxError where the broker would refuse it)."""
        sub = build_subscription(topic, sub_string, expression_type)
        if expression_type == SQL92:
            from rocketfilter.selector import parse

            return cls(topic, sub_string, expression_type, selector=parse(sub_string).to_arrow())
        codes = () if sub.is_sub_all else tuple(sub.code_set)
        return cls(topic, sub.sub_string, expression_type, codes, tuple(sub.tags_set))

    @property
    def is_tag(self) -> bool:
        return self.selector is None

    @property
    def checks_tags(self) -> bool:
        """Whether the consume-queue tag codes (and the exact tag re-check) can reject anything."""
        return self.is_tag and bool(self.code_set or self.tags_set)

    def consume_queue(self, tags_code: pa.Array) -> np.ndarray:
        """``isMatchedByConsumeQueue`` for each entry's tag code (SQL92 without bitmaps: all pass)."""
        n = len(tags_code)
        if not self.checks_tags:
            return np.ones(n, bool)
        valid = np.asarray(tags_code.is_valid().to_numpy(zero_copy_only=False), bool)
        code = np.asarray(pc.fill_null(tags_code, 0).to_numpy(zero_copy_only=False), np.int64)
        low = ((code & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000   # Java's Long.intValue
        return ~valid | np.isin(low, np.array(self.code_set, np.int64))

    @property
    def commit_log_columns(self) -> Tuple[str, ...]:
        """The CommitLog columns :meth:`commit_log` reads."""
        if self.selector is not None:
            return ("properties",)
        return ("tags",) if self.tags_set else ()

    def commit_log(self, rows: pa.Table) -> np.ndarray:
        """The rest of the decision on CommitLog rows: the selector (SQL92) or the client's exact
        tag re-check (TAG)."""
        if self.selector is not None:
            return self.selector.matches(rows.column("properties"))
        if not self.tags_set:
            return np.ones(rows.num_rows, bool)
        hit = pc.is_in(rows.column("tags"), value_set=pa.array(list(self.tags_set), pa.string()))
        return np.asarray(pc.fill_null(hit, False).to_numpy(zero_copy_only=False), bool)
