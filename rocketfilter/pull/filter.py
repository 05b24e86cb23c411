"""The pull's message filters: ``ExpressionMessageFilter`` (SEMANTICS §7) and
``ExpressionForRetryMessageFilter`` (§8), each in Python (one entry at a time) and as Spark Columns
(every entry at once) for the store's getMessage.

Two checks per entry, in this order:

* ``is_matched_by_consume_queue(tags_code, cq_ext_unit)``: the TAG code test, or for SQL92 the
  bloom bitmap test. It only rejects what it can prove: a bitmap that exists, was computed after
  the filter was born, and lacks one of the group's bits.
* ``is_matched_by_commit_log(properties)``: the SQL92 selector on the decoded properties (TAG
  subscriptions always pass; their exact tag check is the client's, §2.4).

>>> from rocketfilter.tags import build_subscription
>>> f = ExpressionMessageFilter(build_subscription("T", "TagA || TagB"), None, None)
>>> f.is_matched_by_consume_queue(java_hash("TagA"), None), f.is_matched_by_consume_queue(java_hash("TagC"), None)
(True, False)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Union

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketfilter import tag_columns as TC
from rocketfilter import tags as T
from rocketfilter.bloom import BloomFilter, bitmap_hit_column, is_hit
from rocketfilter.config import RETRY_GROUP_TOPIC_PREFIX
from rocketfilter.spark_mode import column_cache_key
from rocketfilter.tags import SubscriptionData, is_tag_type, java_hash

ColumnOrName = Union[Column, str]
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
POP_RETRY_SEPARATOR_V2 = "+"
# Where Java's retry filter throws NullPointerException; the Broker turns it into SYSTEM_ERROR.
RETRY_FILTER_NPE = "rocketfilter: retry filter NullPointerException"

__all__ = ["CqExtUnit", "ExpressionMessageFilter", "ExpressionForRetryMessageFilter", "RetryFilterError",
           "parse_group", "java_hash"]


class RetryFilterError(RuntimeError):
    """``ExpressionForRetryMessageFilter`` met a retry-topic message without ``RETRY_TOPIC``
    (or without properties): RocketMQ throws NullPointerException out of getMessage there, so
    the whole pull fails (the broker answers SYSTEM_ERROR and the consumer retries the same
    offset). Raised instead of guessing a match."""


@dataclass(frozen=True)
class CqExtUnit:
    """The consume-queue extension unit the filter reads (§11.2): ``filter_bit_map`` is None when
    the unit has no bitmap (bitMapSize < 1)."""

    tags_code: Optional[int]
    msg_store_time: int
    filter_bit_map: Optional[bytes] = None


def parse_group(retry_topic: str) -> str:
    """``KeyBuilder.parseGroup``: the group of a retry topic (``%RETRY%G``, POP V1
    ``%RETRY%G_topic`` and V2 ``%RETRY%G+topic``).

    >>> parse_group("%RETRY%G"), parse_group("%RETRY%G+T"), parse_group("%RETRY%G_T")
    ('G', 'G', 'G_T')
    """
    body = retry_topic[len(RETRY_GROUP_TOPIC_PREFIX):] if retry_topic.startswith(RETRY_GROUP_TOPIC_PREFIX) \
        else retry_topic
    pieces = retry_topic.split(POP_RETRY_SEPARATOR_V2)
    while pieces and pieces[-1] == "":   # Java's split drops trailing empty pieces
        pieces.pop()
    if POP_RETRY_SEPARATOR_V2 in retry_topic and len(pieces) == 2:
        return body[:body.index(POP_RETRY_SEPARATOR_V2)]
    return body


def _as_mapping(properties) -> Optional[Mapping[str, object]]:
    """Properties as a mapping; Arrow's ``to_pylist`` gives a map column as ``(key, value)`` pairs."""
    return properties if properties is None or isinstance(properties, Mapping) else dict(properties)


def _col(col: ColumnOrName) -> Column:
    return F.col(col) if isinstance(col, str) else col


class ExpressionMessageFilter:
    """``ExpressionMessageFilter(subscriptionData, consumerFilterData, consumerFilterManager)``.

    ``bloom`` is the manager's BloomFilter, or the ConsumerFilterManager itself (its ``bloom`` is
    used), or None (no bitmap check). ``consumer_filter_data`` is None for TAG subscriptions, and
    for SQL92 pulls that carried a selector that does not compile (then everything matches, as in
    RocketMQ with assertions off).
    """

    def __init__(self, subscription_data: Optional[SubscriptionData], consumer_filter_data=None,
                 bloom: Union[BloomFilter, object, None] = None):
        self.subscription_data = subscription_data
        self.consumer_filter_data = consumer_filter_data
        self.filter_manager = None if bloom is None or isinstance(bloom, BloomFilter) else bloom
        self.bloom: Optional[BloomFilter] = bloom if isinstance(bloom, BloomFilter) else getattr(bloom, "bloom", None)
        fd = consumer_filter_data
        # Computed once, as the Java constructor does.
        self.bloom_data_valid = bool(fd is not None and self.bloom is not None
                                     and self.bloom.is_valid(fd.bloom_filter_data))

    def __repr__(self) -> str:
        sub, fd = self.subscription_data, self.consumer_filter_data
        what = None if sub is None else f"{sub.expression_type}:{sub.sub_string!r}"
        return (f"{type(self).__name__}(topic={getattr(sub, 'topic', None)!r}, subscription={what}, "
                f"filter_data={'none' if fd is None else fd.consumer_group}, bloom_data_valid={self.bloom_data_valid})")

    # -- Python, one entry -----------------------------------------------------------------
    def _passes_everything(self) -> bool:
        sub = self.subscription_data
        return sub is None or sub.class_filter_mode

    def _sql_data_usable(self, with_bloom: bool) -> bool:
        fd = self.consumer_filter_data
        return not (fd is None or fd.expression is None or fd.compiled is None
                    or (with_bloom and fd.bloom_filter_data is None))

    def is_matched_by_consume_queue(self, tags_code: Optional[int], cq_ext_unit: Optional[CqExtUnit] = None) -> bool:
        """The consume-queue check of one entry; ``tags_code`` None means an unreadable slot."""
        if self._passes_everything():
            return True
        sub = self.subscription_data
        if is_tag_type(sub.expression_type):
            return T.is_matched_by_consume_queue(sub, tags_code)
        if not self._sql_data_usable(with_bloom=True):
            return True
        fd = self.consumer_filter_data
        if cq_ext_unit is None or not fd.is_msg_in_live(cq_ext_unit.msg_store_time):
            return True
        bitmap = cq_ext_unit.filter_bit_map or None
        if bitmap is None or not self.bloom_data_valid or len(bitmap) * 8 != fd.bloom_filter_data.bit_num:
            return True
        try:
            return is_hit(bitmap, fd.bloom_filter_data.bit_pos)
        except (ValueError, TypeError, IndexError):  # Java: any exception -> match
            return True

    def is_matched_by_commit_log(self, properties: Optional[Mapping[str, object]]) -> bool:
        """The commit-log check of one entry, on its decoded properties (None = no properties)."""
        sub = self.subscription_data
        if self._passes_everything() or is_tag_type(sub.expression_type):
            return True
        if not self._sql_data_usable(with_bloom=False):
            return True
        return self.consumer_filter_data.compiled.matches(_as_mapping(properties) or {})

    # -- Spark, every entry ------------------------------------------------------------------
    def _cached(self, key: tuple, build) -> Column:
        """Columns by arguments, per filter and Spark context (or Spark Connect, see
        :func:`column_cache_key`): each costs JVM calls, a pull needs them every time."""
        mode = column_cache_key()
        cache = self.__dict__.setdefault("_columns", {})
        if cache.get("mode", mode) != mode:
            cache.clear()  # Columns of another context must not reach this one's DataFrames
        cache["mode"] = mode
        if key not in cache:
            cache[key] = build()
        return cache[key]

    def consume_queue_column(self, tags_code_col: ColumnOrName = "tags_code",
                             bitmap_col: ColumnOrName = "filter_bitmap",
                             store_timestamp_col: ColumnOrName = "store_timestamp") -> Column:
        """:meth:`is_matched_by_consume_queue` as a never-null boolean Column over consume-queue
        rows. A null ``store_timestamp`` stands for a missing ext unit, a null bitmap for a unit
        without one; both match."""
        args = (tags_code_col, bitmap_col, store_timestamp_col)
        if all(isinstance(a, str) for a in args):
            return self._cached(("cq",) + args, lambda: self._consume_queue_column(*args))
        return self._consume_queue_column(*args)

    def _consume_queue_column(self, tags_code_col: ColumnOrName, bitmap_col: ColumnOrName,
                              store_timestamp_col: ColumnOrName) -> Column:
        if self._passes_everything():
            return F.lit(True)
        sub = self.subscription_data
        if is_tag_type(sub.expression_type):
            return TC.tag_code_predicate(sub, tags_code_col)
        if not self._sql_data_usable(with_bloom=True) or not self.bloom_data_valid:
            return F.lit(True)
        fd = self.consumer_filter_data
        positions = list(fd.bloom_filter_data.bit_pos)
        if any(p < 0 or p >= fd.bloom_filter_data.bit_num for p in positions):
            return F.lit(True)  # BitsArray would throw for every checked entry -> match
        stored, bitmap = _col(store_timestamp_col), _col(bitmap_col)
        checked = (stored.isNotNull() & (stored > F.lit(fd.born_time)) & bitmap.isNotNull()
                   & (F.length(bitmap) * 8 == F.lit(fd.bloom_filter_data.bit_num)))
        return F.when(checked, F.coalesce(bitmap_hit_column(bitmap, positions), F.lit(True))).otherwise(F.lit(True))

    @property
    def uses_bitmap(self) -> bool:
        """Whether the consume-queue check of a SQL92 subscription can reject anything: only then
        does it save CommitLog reads."""
        sub = self.subscription_data
        return (not self._passes_everything() and not is_tag_type(sub.expression_type)
                and self._sql_data_usable(with_bloom=True) and self.bloom_data_valid)

    def exact_tag_column(self, tags_col: ColumnOrName = "tags") -> Column:
        """The client's exact tag re-check (§2.4) as a never-null boolean Column; true for
        non-TAG subscriptions. A pull uses it to read only the bodies a consumer could keep."""
        sub = self.subscription_data
        if self._passes_everything() or not is_tag_type(sub.expression_type):
            return F.lit(True)
        if isinstance(tags_col, str):
            return self._cached(("exact", tags_col), lambda: TC.tag_exact_predicate(sub, tags_col))
        return TC.tag_exact_predicate(sub, tags_col)

    def commit_log_column(self, properties_col: ColumnOrName = "properties", topic: Optional[str] = None,
                          promoted: Optional[Mapping[str, str]] = None) -> Column:
        """:meth:`is_matched_by_commit_log` as a never-null boolean Column over a
        ``map<string,string>`` properties column. ``topic`` is the pulled topic (defaults to the
        subscription's); only the retry filter looks at it. ``promoted`` maps property names to
        the CommitLog's promoted columns (``store.promoted_properties()``): same decision."""
        sub = self.subscription_data
        if self._passes_everything() or is_tag_type(sub.expression_type):
            return F.lit(True)
        if not self._sql_data_usable(with_bloom=False):
            return F.lit(True)
        return self.consumer_filter_data.compiled.to_column(properties_col, promoted=promoted)


class ExpressionForRetryMessageFilter(ExpressionMessageFilter):
    """``ExpressionForRetryMessageFilter`` (used when ``filterSupportRetry``): for a non-TAG
    subscription of a ``%RETRY%`` topic, each message is judged by the filter data its group
    registered for the message's original topic (its ``RETRY_TOPIC`` property); no such data means
    a match. A retry message without ``RETRY_TOPIC`` fails the pull (:class:`RetryFilterError`),
    where RocketMQ throws NullPointerException. Needs the ConsumerFilterManager as third argument.
    """

    def __init__(self, subscription_data: Optional[SubscriptionData], consumer_filter_data=None,
                 filter_manager=None):
        super().__init__(subscription_data, consumer_filter_data, filter_manager)
        if filter_manager is not None and not hasattr(filter_manager, "get_by_group"):
            raise TypeError("ExpressionForRetryMessageFilter needs the ConsumerFilterManager, "
                            f"not {type(filter_manager).__name__}")

    def _retry_group(self, topic: Optional[str]) -> Optional[str]:
        topic = topic if topic is not None else self.subscription_data.topic
        return parse_group(topic) if topic is not None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else None

    def _missing_retry_topic(self, group: str) -> str:
        return (f"{RETRY_FILTER_NPE}: a message of retry topic {self.subscription_data.topic!r} (group "
                f"{group!r}) has no {PROPERTY_RETRY_TOPIC} property; RocketMQ fails this pull the same way")

    def is_matched_by_commit_log(self, properties: Optional[Mapping[str, object]]) -> bool:
        sub = self.subscription_data
        if self._passes_everything() or is_tag_type(sub.expression_type):
            return True
        group = self._retry_group(None)
        if group is None:
            return super().is_matched_by_commit_log(properties)
        properties = _as_mapping(properties)
        real_topic = None if properties is None else properties.get(PROPERTY_RETRY_TOPIC)
        if real_topic is None:
            raise RetryFilterError(self._missing_retry_topic(group))
        real = None if self.filter_manager is None else self.filter_manager.get(real_topic, group)
        if real is None or real.expression is None or real.compiled is None:
            return True
        return real.compiled.matches(properties)

    def commit_log_column(self, properties_col: ColumnOrName = "properties", topic: Optional[str] = None,
                          promoted: Optional[Mapping[str, str]] = None) -> Column:
        sub = self.subscription_data
        if self._passes_everything() or is_tag_type(sub.expression_type):
            return F.lit(True)
        group = self._retry_group(topic)
        if group is None:
            return super().commit_log_column(properties_col, topic, promoted)
        props = _col(properties_col)
        real_topic = props.getItem(PROPERTY_RETRY_TOPIC)
        decision = F.when(real_topic.isNull(), F.raise_error(F.lit(self._missing_retry_topic(group))))
        datas = [] if self.filter_manager is None else self.filter_manager.get_by_group(group)
        for data in sorted(datas, key=lambda d: d.topic):
            if data.expression is not None and data.compiled is not None:
                decision = decision.when(real_topic == F.lit(data.topic),
                                         data.compiled.to_column(props, promoted=promoted))
        return decision.otherwise(F.lit(True))
