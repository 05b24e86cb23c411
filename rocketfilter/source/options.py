"""The ``rocketmq`` source's options, as Spark users give them to the Kafka source and to
rocketmq-spark, checked once where the query is planned (a bad one fails ``load()``).

==========================  =========================================================================
option                      meaning
==========================  =========================================================================
``store``                   the store's directory or URI (``path`` and ``load(path)`` work too)
``topic``                   the topic to read
``subExpression``           the subscription: tags (``TagA || TagB``, default ``*``) or a selector
``expressionType``          ``TAG`` (default) or ``SQL92`` (case-sensitive)
``consumerGroup``           streaming: start from the group's committed offsets and commit after
                            each batch
``startingOffsets``         ``earliest``, ``latest`` or ``{"TopicA": {"0": 23, "1": -2}}``
``endingOffsets``           batch only: ``latest`` (default), ``earliest`` or JSON (exclusive)
``startingTimestamp``       epoch ms or ISO-8601: each queue's first message stored at or after it;
                            takes precedence over ``startingOffsets``, as in the Kafka source
``maxOffsetsPerTrigger``    streaming: at most this many queue offsets per micro-batch
``failOnDataLoss``          ``true`` (default): fail when offsets were expired by retention;
                            ``false``: skip ahead to what is left, and log it
``includeProperties``       ``true`` (default): the ``properties`` column
``storage.<key>``           a delta-rs/object-store storage option (``storage.AWS_REGION``...)
==========================  =========================================================================
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Mapping, Optional

from rocketfilter.checks import LONG_MAX, _is_int
from rocketfilter.naming import validate_group, validate_topic
from rocketfilter.offsets_spec import parse_offsets
from rocketfilter.source.offsets import DataLossError
from rocketfilter.store.errors import StoreError
from rocketfilter.tags import SQL92, TAG, SubscriptionData, build_subscription, check_expression_type

_KNOWN = ("store", "path", "topic", "subexpression", "expressiontype", "consumergroup",
          "startingoffsets", "endingoffsets", "startingtimestamp", "maxoffsetspertrigger",
          "failondataloss", "includeproperties")
_STORAGE_PREFIX = "storage."


class SourceOptionError(ValueError):
    """An option of the ``rocketmq`` source that cannot work, named with the reason."""


def bad_input_in_one_frame(method):
    """Re-raise a bad-input error (ValueError, a missing store, lost data) of a planning method
    with its traceback cut: Spark puts the worker's traceback into the query's error, and the
    frames inside rocketfilter only bury the one line that names the option."""
    @functools.wraps(method)
    def planned(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (ValueError, StoreError, DataLossError) as error:
            raise error.with_traceback(None) from None

    return planned


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name.lower())
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise SourceOptionError(f"option {name}: expected true or false, got {value!r}")
    return text == "true"


@dataclass(frozen=True)
class SourceOptions:
    """Checked options of one ``spark.read``/``spark.readStream`` of the ``rocketmq`` format."""

    store: str
    topic: str
    sub_expression: str = "*"
    expression_type: str = TAG
    consumer_group: Optional[str] = None
    starting_offsets: Optional[str] = None
    ending_offsets: Optional[str] = None
    starting_timestamp: Optional[str] = None
    max_offsets_per_trigger: Optional[int] = None
    fail_on_data_loss: bool = True
    include_properties: bool = True
    storage_options: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "SourceOptions":
        """From Spark's (case-insensitive) options; SourceOptionError names the bad one.

        >>> SourceOptions.parse({"store": "/tmp/s", "topic": "T", "subExpression": "a > 1",
        ...                      "expressionType": "SQL92"}).expression_type
        'SQL92'
        """
        opts = {str(k).lower(): v for k, v in options.items()}
        unknown = sorted(k for k in opts if k not in _KNOWN and not k.startswith(_STORAGE_PREFIX))
        if unknown:
            raise SourceOptionError(f"unknown option(s) {unknown} for format rocketmq; the options are "
                                    "store, topic, subExpression, expressionType, consumerGroup, "
                                    "startingOffsets, endingOffsets, startingTimestamp, "
                                    "maxOffsetsPerTrigger, failOnDataLoss, includeProperties, storage.*")
        store = opts.get("store") or opts.get("path")
        if not store:
            raise SourceOptionError("option store is required: the store's directory or URI "
                                    "(.option(\"store\", ...) or .load(path))")
        topic = opts.get("topic")
        if not topic:
            raise SourceOptionError("option topic is required")
        try:
            validate_topic(topic)
        except ValueError as error:
            raise SourceOptionError(f"option topic: {error}") from None
        try:  # case-sensitive, as the broker's FilterFactory is
            expression_type = check_expression_type(opts.get("expressiontype"),
                                                    "option expressionType:")
        except ValueError as error:
            raise SourceOptionError(str(error)) from None
        group = opts.get("consumergroup") or None
        if group is not None:
            try:
                validate_group(group)
            except ValueError as error:
                raise SourceOptionError(f"option consumerGroup: {error}") from None
        limit = opts.get("maxoffsetspertrigger")
        if limit is not None:
            text = str(limit).strip()
            if not (text.isascii() and text.isdigit()) or not 0 < int(text) <= LONG_MAX:
                raise SourceOptionError(f"option maxOffsetsPerTrigger: expected a positive integer, "
                                        f"got {limit!r}")
            limit = int(text)
        parsed = cls(store=str(store), topic=topic,
                     sub_expression=opts.get("subexpression") or "*",
                     expression_type=expression_type, consumer_group=group,
                     starting_offsets=opts.get("startingoffsets"),
                     ending_offsets=opts.get("endingoffsets"),
                     starting_timestamp=opts.get("startingtimestamp"),
                     max_offsets_per_trigger=limit,
                     fail_on_data_loss=_flag(opts, "failOnDataLoss", True),
                     include_properties=_flag(opts, "includeProperties", True),
                     storage_options={k[len(_STORAGE_PREFIX):]: v for k, v in opts.items()
                                      if k.startswith(_STORAGE_PREFIX)})
        parsed.subscription()  # a subscription the consumer could not make fails here
        for name, spec in (("startingOffsets", parsed.starting_offsets),
                           ("endingOffsets", parsed.ending_offsets),
                           ("startingTimestamp", parsed.starting_timestamp)):
            if spec is not None:
                try:
                    kind = parse_offsets(spec, name).kind
                except ValueError as error:
                    raise SourceOptionError(str(error)) from None
                if name == "startingTimestamp" and kind != "timestamp":
                    raise SourceOptionError(f"option startingTimestamp: expected epoch milliseconds "
                                            f"or an ISO-8601 time, got {spec!r}")
        return parsed

    def subscription(self) -> SubscriptionData:
        """The consumer's SubscriptionData; a SQL92 selector is compiled (SourceOptionError, with
        the parser's message, where the broker would refuse it)."""
        try:
            sub = build_subscription(self.topic, self.sub_expression, self.expression_type)
            if self.expression_type == SQL92:
                from rocketfilter.selector import parse

                parse(self.sub_expression)
        except ValueError as error:
            raise SourceOptionError(f"option subExpression ({self.expression_type}): {error}") from None
        return sub

    def start_spec(self, streaming: bool):
        """Where reading starts: startingTimestamp, else startingOffsets, else None (the caller's
        default: earliest for batch; for streaming the group's start or latest)."""
        if self.starting_timestamp is not None:
            text = str(self.starting_timestamp).strip()
            return int(text) if _is_int(text) or (text.isascii() and text.isdigit()) else text
        return self.starting_offsets
