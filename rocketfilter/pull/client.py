"""The consumer's side of a pull: response code -> ``PullStatus``, the exact-tag re-check
(``PullAPIWrapper.processPullResult``, SEMANTICS §2.4) and a small pull consumer for notebooks.

>>> broker = Broker(store)                                               # doctest: +SKIP
>>> consumer = PullConsumer(broker, "G", client_id="nb-1")               # doctest: +SKIP
>>> consumer.subscribe("TopicTest", "TagA || TagB")                      # doctest: +SKIP
>>> queue = consumer.allocate("TopicTest")[0]                            # doctest: +SKIP
>>> result = consumer.pull(queue, consumer.committed(queue, default=0))  # doctest: +SKIP
>>> consumer.commit(queue, result.next_begin_offset)                     # doctest: +SKIP
"""
from __future__ import annotations

import enum
import os
import socket
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Union

from rocketfilter.config import validate_group, validate_topic
from rocketfilter.consumer.allocate import AbstractAllocateMessageQueueStrategy, AllocateMessageQueueAveragely
# MessageQueue lives in rocketfilter.consumer; re-exported here, where it used to be.
from rocketfilter.consumer.message_queue import MessageQueue  # noqa: F401
from rocketfilter.consumer.strategies import StrategyConfig, allocate_strategy_from_config
from rocketfilter.javalang import string_sort_key
from rocketfilter.pull.broker import Broker, PullMessageRequestHeader, PullMessageResponse, PullSysFlag, ResponseCode
from rocketfilter.tags import (TAG, SubscriptionData, build_subscription, check_expression_type,
                               client_accepts, is_tag_type)

PROPERTY_MIN_OFFSET = "MIN_OFFSET"
PROPERTY_MAX_OFFSET = "MAX_OFFSET"


class PullStatus(str, enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"

    def __str__(self) -> str:
        return self.value


_STATUS_BY_CODE = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


class MQBrokerError(RuntimeError):
    """Any other response code: ``MQBrokerException(code, remark)`` on the client."""

    def __init__(self, code: int, remark: Optional[str]):
        self.code, self.remark = code, remark
        try:
            name = ResponseCode(code).name
        except ValueError:
            name = "UNKNOWN"
        super().__init__(f"CODE: {code} ({name})  DESC: {remark}")


@dataclass
class PullResult:
    """``PullResult``: what one pull delivers to the application after the client's re-check.

    ``msg_found_list`` can be empty with status FOUND when every message the broker found failed
    the exact-tag check; ``next_begin_offset`` still moves past them.
    """

    pull_status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    msg_found_list: List[dict] = field(default_factory=list)
    suggest_which_broker_id: int = 0
    response: Optional[PullMessageResponse] = field(default=None, repr=False)


def _properties_of(message: dict) -> Dict[str, str]:
    """A message's properties as a dict (Arrow hands a map column over as a list of pairs)."""
    props = message.get("properties") or {}
    return dict(props) if not isinstance(props, dict) else props


def _tags_of(message: dict) -> Optional[str]:
    if "tags" in message:
        return message["tags"]
    return _properties_of(message).get("TAGS")


def process_pull_result(response: PullMessageResponse, subscription_data: SubscriptionData) -> PullResult:
    """``MQClientAPIImpl.processPullResponse`` + ``PullAPIWrapper.processPullResult``.

    SUCCESS/PULL_NOT_FOUND/PULL_RETRY_IMMEDIATELY/PULL_OFFSET_MOVED become FOUND/NO_NEW_MSG/
    NO_MATCHED_MSG/OFFSET_ILLEGAL; any other code raises :class:`MQBrokerError`. Found messages
    of a TAG subscription with tags are kept only if their ``TAGS`` is exactly a subscribed tag
    (hash collisions such as "Aa"/"BB" are dropped here); SQL92 results are not re-filtered. Each
    kept message is a copy whose properties gain ``MIN_OFFSET``/``MAX_OFFSET``.
    """
    try:
        status = _STATUS_BY_CODE[ResponseCode(response.code)]
    except (KeyError, ValueError):
        raise MQBrokerError(response.code, response.remark) from None
    result = PullResult(pull_status=status, next_begin_offset=response.next_begin_offset,
                        min_offset=response.min_offset, max_offset=response.max_offset,
                        suggest_which_broker_id=response.suggest_which_broker_id or 0, response=response)
    if status is PullStatus.FOUND:
        kept = [m for m in response.messages if client_accepts(subscription_data, _tags_of(m))]
        extra = {PROPERTY_MIN_OFFSET: str(response.min_offset), PROPERTY_MAX_OFFSET: str(response.max_offset)}
        result.msg_found_list = [{**m, "properties": {**_properties_of(m), **extra}} for m in kept]
    return result


def _warn_findings(selector: str) -> None:
    """``warnings.warn`` each lint finding of ``selector``, attributed to subscribe's caller."""
    from rocketfilter.selector import SelectorSyntaxError, parse

    try:
        findings = parse(selector).lint()
    except SelectorSyntaxError:
        return
    for finding in findings:
        warnings.warn(finding, stacklevel=3)


def default_client_id() -> str:
    """RocketMQ's ``ip@instanceName`` shape, with the pid as instance name."""
    try:
        host = socket.gethostbyname(socket.gethostname())
    except OSError:
        host = "127.0.0.1"
    return f"{host}@{os.getpid()}"


class PullConsumer:
    """A pull consumer for notebooks and jobs: subscribe, see the queues, take a share of them,
    pull and commit offsets. Subscribing registers the client with the broker (a heartbeat), and
    pulls then use that registration, as push consumers do (``post_subscription_when_pull=False``);
    set it to True to send the expression with every pull as ``DefaultMQPullConsumer`` does (SQL92
    pulls then skip the bloom bitmaps, and a selector that does not compile matches everything).
    """

    def __init__(self, broker: Broker, group: str, client_id: Optional[str] = None, *,
                 message_model: str = "CLUSTERING", consume_from_where: str = "CONSUME_FROM_LAST_OFFSET",
                 post_subscription_when_pull: bool = False):
        self.broker = broker
        self.group = validate_group(group)
        self.client_id = client_id or default_client_id()
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.post_subscription_when_pull = post_subscription_when_pull
        self.subscriptions: Dict[str, SubscriptionData] = {}

    def __repr__(self) -> str:
        return f"PullConsumer(group={self.group!r}, client_id={self.client_id!r}, topics={sorted(self.subscriptions)})"

    # -- subscriptions -----------------------------------------------------------------------
    def subscribe(self, topic: str, expression: Optional[str] = "*", expression_type: str = TAG) -> SubscriptionData:
        """Subscribe (or re-subscribe) to a topic and send a heartbeat. Raises ValueError for an
        expression the client refuses (``"||"``, an empty SQL92 expression).

        Each lint finding of an SQL92 selector (``Selector.lint``: text RocketMQ ignores, a bare
        property, ...) is emitted with ``warnings.warn`` as a ``SelectorWarning``; a selector that
        does not compile is the broker's to refuse, as before.
        """
        check_expression_type(expression_type)
        sub = build_subscription(validate_topic(topic), expression, expression_type)
        if not is_tag_type(sub.expression_type):
            _warn_findings(sub.sub_string)
        sub.sub_version = self.broker.next_sub_version()
        self.subscriptions[topic] = sub
        self.heartbeat()
        return sub

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)
        self.heartbeat()

    def heartbeat(self) -> bool:
        """Register this client and its subscriptions with the broker."""
        return self.broker.register_consumer(self.group, self.client_id, list(self.subscriptions.values()),
                                             message_model=self.message_model,
                                             consume_from_where=self.consume_from_where,
                                             post_subscription_when_pull=self.post_subscription_when_pull)

    def shutdown(self) -> None:
        """Leave the group (the broker forgets the client; the last one out kills the group's
        filter data)."""
        self.broker.unregister_consumer(self.group, self.client_id)

    # -- queues ------------------------------------------------------------------------------
    def fetch_subscribe_message_queues(self, topic: str) -> List[MessageQueue]:
        """The topic's readable queues on this broker, sorted."""
        config = self.broker.store.topic_config(topic)
        if config is None:
            raise MQBrokerError(int(ResponseCode.TOPIC_NOT_EXIST), f"topic[{topic}] not exist")
        name = self.broker.broker_config.broker_name
        return [MessageQueue(topic, name, q) for q in range(config.read_queue_nums)]

    def allocate(self, topic: str, all_client_ids: Optional[Sequence[str]] = None,
                 client_id: Optional[str] = None,
                 strategy: Union[AbstractAllocateMessageQueueStrategy, StrategyConfig, None] = None
                 ) -> List[MessageQueue]:
        """The queues of ``topic`` that ``client_id`` (this client by default) takes among
        ``all_client_ids`` (the group's registered clients by default), by ``strategy``
        (``AllocateMessageQueueAveragely`` by default; a strategy or its config such as
        ``"AVG_BY_CIRCLE"``). Queues and client ids are sorted first, as ``RebalanceImpl`` does;
        BROADCASTING takes every queue."""
        strategy = AllocateMessageQueueAveragely() if strategy is None else allocate_strategy_from_config(strategy)
        cids = list(all_client_ids) if all_client_ids is not None else self.broker.consumer_ids(self.group)
        if self.message_model == "BROADCASTING":
            return self.fetch_subscribe_message_queues(topic)
        return strategy.allocate(self.group, client_id or self.client_id,
                                 sorted(self.fetch_subscribe_message_queues(topic)),
                                 sorted(cids, key=string_sort_key))

    # -- pulling and offsets -----------------------------------------------------------------
    def pull(self, queue: MessageQueue, offset: int, max_nums: int = 32, *,
             commit_offset: Optional[int] = None) -> PullResult:
        """Pull up to ``max_nums`` messages of ``queue`` from ``offset``; with ``commit_offset``
        the broker also stores that offset for the group (the commit-offset flag)."""
        sub = self.subscriptions.get(queue.topic)
        if sub is None:
            raise ValueError(f"{self!r} is not subscribed to {queue.topic!r}: call subscribe() first")
        sys_flag = PullSysFlag.build_sys_flag(commit_offset=commit_offset is not None, suspend=False,
                                              subscription=self.post_subscription_when_pull, class_filter=False)
        request = PullMessageRequestHeader(
            consumer_group=self.group, topic=queue.topic, queue_id=queue.queue_id, queue_offset=offset,
            max_msg_nums=max_nums, sys_flag=sys_flag, commit_offset=commit_offset or 0,
            subscription=sub.sub_string, expression_type=sub.expression_type,
            # The pull consumer sends 0 for tag subscriptions (no version check needed).
            sub_version=sub.sub_version if not (self.post_subscription_when_pull and is_tag_type(sub.expression_type))
            else 0)
        return process_pull_result(self.broker.pull_message(request), sub)

    def commit(self, queue: MessageQueue, offset: int) -> None:
        """Store the group's consume offset of ``queue`` (the next offset to consume)."""
        self.broker.update_consumer_offset(self.group, queue.topic, queue.queue_id, offset)

    def committed(self, queue: MessageQueue, default: int = -1) -> int:
        """The group's stored offset of ``queue``, or ``default`` when none is stored."""
        offset = self.broker.query_consumer_offset(self.group, queue.topic, queue.queue_id)
        return default if offset is None or offset < 0 else offset
