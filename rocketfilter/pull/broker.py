"""The broker's side of a pull: consumer registration (heartbeat) and ``PullMessageProcessor``'s
checks, in RocketMQ's order (SEMANTICS §6, §12.3), around ``store.get_message``.

The store is anything with ``topic_config(topic)``, ``get_message(group, topic, queue_id, offset,
max_msg_nums, message_filter)``, ``commit_consumer_offset(group, topic, queue_id, offset)``,
``query_consumer_offset(group, topic, queue_id)`` and ``filter_manager``
(:class:`rocketfilter.store.MessageStore` is one). A store that also has ``record_heartbeat`` and
``record_unregister`` (a ``MessageStore`` does) gets every heartbeat and departure, so its
``consumer_groups`` table shows each group as its consumers left it. The request and response types are in
:mod:`.protocol`.

>>> broker = Broker(store)                                                    # doctest: +SKIP
>>> broker.register_consumer("G", "client-1", [("T", "a > 1", "SQL92")])      # doctest: +SKIP
>>> broker.pull_message(PullMessageRequestHeader("G", "T", 0, 0)).code        # doctest: +SKIP
0
"""
from __future__ import annotations

import threading
import time
from typing import Dict, Iterable, List, Optional, Tuple, Union

# The group table (ConsumerGroupInfo) is shared with rocketfilter.consumer.ConsumerGroup; it and its
# enum names are re-exported here for older imports.
from rocketfilter.consumer.group_info import (CONSUME_FROM_WHERE, CONSUME_TYPES, MESSAGE_MODELS,  # noqa: F401
                                              ConsumerGroupInfo, SubVersionClock, check_choice)
from rocketfilter.config import (MASTER_ID, BrokerConfig, InvalidNameError, MessageStoreConfig, PermName,
                                 SubscriptionGroupConfig, load_broker_conf, validate_group, validate_topic)
from rocketfilter.pull.filter import (RETRY_FILTER_NPE, ExpressionForRetryMessageFilter, ExpressionMessageFilter,
                                      RetryFilterError)
# The request/response types live in .protocol; re-exported here for the client and tests.
from rocketfilter.pull.protocol import (
    PullMessageRequestHeader,
    PullMessageResponse,
    PullSysFlag,
    ResponseCode,
    status_to_response_code,
)
from rocketfilter.pull.result import GetMessageResult, GetMessageStatus
from rocketfilter.tags import SubscriptionData, build_subscription, is_tag_type

CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
Subscription = Union[SubscriptionData, Tuple[str, Optional[str]], Tuple[str, Optional[str], Optional[str]]]


def _refuse(code: ResponseCode, remark: str) -> PullMessageResponse:
    return PullMessageResponse(code=int(code), remark=remark)


class Broker:
    """One broker over one store: subscription groups, registered consumers and pulls."""

    def __init__(self, store, broker_config: Optional[BrokerConfig] = None,
                 store_config: Optional[MessageStoreConfig] = None,
                 subscription_groups: Iterable[SubscriptionGroupConfig] = (), clock=None):
        self.store = store
        self.broker_config = broker_config or getattr(store, "broker_config", None) or BrokerConfig()
        self.store_config = store_config or getattr(store, "config", None) or MessageStoreConfig()
        self.subscription_groups: Dict[str, SubscriptionGroupConfig] = {g.group_name: g for g in subscription_groups}
        self.consumer_table: Dict[str, ConsumerGroupInfo] = {}
        # (group, topic) pairs whose reads are forbidden (SubscriptionGroupManager's forbidden table).
        self.read_forbidden: set = set()
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)
        self._sub_versions = SubVersionClock(self._clock)
        self._lock = threading.RLock()

    @classmethod
    def from_conf(cls, store, path, spark_conf=None, **kwargs) -> "Broker":
        """A broker configured by a ``broker.conf`` file (and ``spark.rocketfilter.*`` keys).

        The bloom filter and the bitmap switch belong to the store (its filter manager and
        dispatcher): open the store with the same settings, e.g.
        ``MessageStore.open(uri, config=store_config, broker_config=broker_config)``."""
        broker_config, store_config = load_broker_conf(path, spark_conf)
        return cls(store, broker_config, store_config, **kwargs)

    # -- subscription groups -----------------------------------------------------------------
    def update_subscription_group(self, config: SubscriptionGroupConfig) -> None:
        with self._lock:
            self.subscription_groups[config.group_name] = config

    def set_read_forbidden(self, group: str, topic: str, forbidden: bool = True) -> None:
        """Forbid (or allow again) the group to pull the topic: such pulls get NO_PERMISSION."""
        with self._lock:
            (self.read_forbidden.add if forbidden else self.read_forbidden.discard)((group, topic))

    def find_subscription_group_config(self, group: str) -> Optional[SubscriptionGroupConfig]:
        """The group's config; created on first use when ``autoCreateSubscriptionGroup`` is on
        (or for ``CID_RMQ_SYS_`` groups) and the name is valid."""
        with self._lock:
            config = self.subscription_groups.get(group)
            if config is None and (self.broker_config.auto_create_subscription_group
                                   or str(group).startswith(CID_RMQ_SYS_PREFIX)):
                try:
                    config = SubscriptionGroupConfig(group_name=group)
                except InvalidNameError:
                    return None
                self.subscription_groups[group] = config
            return config

    # -- heartbeat ---------------------------------------------------------------------------
    def next_sub_version(self) -> int:
        """A subVersion: the clock in ms, strictly increasing (the client's ``System.currentTimeMillis``)."""
        return self._sub_versions()

    def _subscription(self, item: Subscription, sub_version: Optional[int]) -> SubscriptionData:
        if isinstance(item, SubscriptionData):
            validate_topic(item.topic)
            return item
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise TypeError(f"a subscription is SubscriptionData or (topic, expression[, type]), got {item!r}")
        topic, expression = item[0], item[1]
        expression_type = item[2] if len(item) == 3 else "TAG"
        sub = build_subscription(validate_topic(topic), expression, expression_type)
        sub.sub_version = sub_version if sub_version is not None else self.next_sub_version()
        return sub

    def register_consumer(self, group: str, client_id: str, subscriptions: Iterable[Subscription],
                          message_model: str = "CLUSTERING", consume_from_where: str = "CONSUME_FROM_LAST_OFFSET",
                          sub_version: Optional[int] = None, consume_type: str = "CONSUME_PASSIVELY", *,
                          post_subscription_when_pull: Optional[bool] = None) -> bool:
        """A consumer's heartbeat (``ConsumerManager.registerConsumer``): records the client, sets
        the group's subscription table (per topic the later registration wins, by subVersion;
        topics this heartbeat leaves out are dropped) and registers SQL92 filter data. Returns
        whether the group changed (a new client, or a topic added or dropped), as RocketMQ does.
        Tuples get ``sub_version``, or a fresh one each. The store records the heartbeat too
        (``record_heartbeat``), with ``post_subscription_when_pull`` (not part of RocketMQ's
        heartbeat: whether this client's pulls carry its subscription; None keeps what is stored).

        Raises ValueError for a bad group/topic name or a tag list RocketMQ's client rejects; a
        SQL92 selector that does not compile is accepted here and fails the pulls
        (FILTER_DATA_NOT_EXIST), as in RocketMQ.
        """
        validate_group(group)
        if not client_id:
            raise ValueError(f"register_consumer({group!r}): client_id is empty")
        for name, value, allowed in (("message_model", message_model, MESSAGE_MODELS),
                                     ("consume_from_where", consume_from_where, CONSUME_FROM_WHERE),
                                     ("consume_type", consume_type, CONSUME_TYPES)):
            check_choice(f"register_consumer({group!r})", name, value, allowed)
        subs = [self._subscription(item, sub_version) for item in subscriptions]
        with self._lock:
            self.find_subscription_group_config(group)
            info = self.consumer_table.get(group)
            if info is None:
                info = self.consumer_table[group] = ConsumerGroupInfo(group)
            changed = info.register(client_id, subs, self._clock(), consume_type, message_model, consume_from_where)
            self.store.filter_manager.register_group(group, subs)
            record = getattr(self.store, "record_heartbeat", None)
            if record is not None:
                record(group, client_id, subs, message_model=message_model, consume_from_where=consume_from_where,
                       post_subscription_when_pull=post_subscription_when_pull)
            if self.broker_config.enable_calc_subscription_bits:
                self._register_bits(group, info)
            return changed

    def _register_bits(self, group: str, info: ConsumerGroupInfo) -> None:
        """The group's effective subscriptions become exact subscription bits of the store
        (``enableCalcSubscriptionBits``); one that RocketMQ would refuse at pull time is left out."""
        register = getattr(self.store, "register_subscription_bits", None)
        if register is None:
            return
        for topic in list(info.subscription_table):
            sub = info.find_subscription_data(topic)
            try:
                register(group, topic, sub.sub_string, sub.expression_type, sub.sub_version)
            except ValueError:
                pass  # a selector that does not compile: its pulls fail FILTER_DATA_NOT_EXIST

    def unregister_consumer(self, group: str, client_id: str) -> None:
        """A client leaves; when it was the group's last, the group's filter data dies."""
        with self._lock:
            info = self.consumer_table.get(group)
            if info is None:
                return
            info.unregister_client(client_id)
            if not info.clients:
                del self.consumer_table[group]
                self.store.filter_manager.unregister(group)
            record = getattr(self.store, "record_unregister", None)
            if record is not None:
                record(group, client_id)

    def consumer_group_info(self, group: str) -> Optional[ConsumerGroupInfo]:
        return self.consumer_table.get(group)

    def consumer_ids(self, group: str) -> List[str]:
        """The group's client ids (``getConsumerIdListByGroup``), in registration order."""
        info = self.consumer_table.get(group)
        return [] if info is None else info.all_client_ids()

    # -- offsets -----------------------------------------------------------------------------
    def update_consumer_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.store.commit_consumer_offset(group, topic, queue_id, offset)

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        return self.store.query_consumer_offset(group, topic, queue_id)

    # -- pull --------------------------------------------------------------------------------
    def pull_message(self, request: PullMessageRequestHeader) -> PullMessageResponse:
        """``PullMessageProcessor.processRequest`` without long polling (a PULL_NOT_FOUND is
        answered at once): the checks of §6 in order, then getMessage and §12.3's codes."""
        r, bc, sc = request, self.broker_config, self.store_config
        group, topic = r.consumer_group, r.topic
        if sc.broker_role == "SLAVE" and not bc.slave_read_enable:
            return _refuse(ResponseCode.SYSTEM_BUSY, "[REJECTREQUEST]system busy, start flow control for a while")
        if not PermName.is_readable(bc.broker_permission):
            return _refuse(ResponseCode.NO_PERMISSION, f"the broker[{bc.broker_ip1}] pulling message is forbidden")
        group_config = self.find_subscription_group_config(group)
        if group_config is None:
            return _refuse(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist")
        if not group_config.consume_enable:
            return _refuse(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        topic_config = self.store.topic_config(topic)
        if topic_config is None:
            return _refuse(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if not PermName.is_readable(topic_config.perm):
            return _refuse(ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
        if r.queue_id < 0 or r.queue_id >= topic_config.read_queue_nums:
            return _refuse(ResponseCode.INVALID_PARAMETER, f"queueId[{r.queue_id}] is illegal, topic:[{topic}] "
                           f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}]")
        checked = self._subscription_for_pull(r, group_config)
        if isinstance(checked, PullMessageResponse):
            return checked
        sub, filter_data = checked
        if not is_tag_type(sub.expression_type) and not bc.enable_property_filter:
            return _refuse(ResponseCode.SYSTEM_ERROR,
                           f"The broker does not support consumer to filter message by {sub.expression_type}")
        manager = self.store.filter_manager
        filter_cls = ExpressionForRetryMessageFilter if bc.filter_support_retry else ExpressionMessageFilter
        message_filter = filter_cls(sub, filter_data, manager)
        try:
            result = self.store.get_message(group, topic, r.queue_id, r.queue_offset, r.max_msg_nums, message_filter)
        except RetryFilterError as error:
            return _refuse(ResponseCode.SYSTEM_ERROR, f"java.lang.NullPointerException ({error})")
        except Exception as error:  # a Spark job failed on the retry filter's raise_error
            if RETRY_FILTER_NPE not in str(error):
                raise
            return _refuse(ResponseCode.SYSTEM_ERROR, "java.lang.NullPointerException (" + _npe_text(error) + ")")
        if result is None:
            return _refuse(ResponseCode.SYSTEM_ERROR, "store getMessage return null")
        response = self._compose(r, result, group_config)
        if PullSysFlag.has_commit_offset_flag(r.sys_flag):
            self.store.commit_consumer_offset(group, topic, r.queue_id, r.commit_offset)
        return response

    def _subscription_for_pull(self, r: PullMessageRequestHeader, group_config: SubscriptionGroupConfig):
        """The subscription and filter data to pull with, or the refusing response."""
        manager = self.store.filter_manager
        if PullSysFlag.has_subscription_flag(r.sys_flag):
            try:
                sub = build_subscription(r.topic, r.subscription, r.expression_type)
            except ValueError:
                return _refuse(ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
            sub.sub_version = r.sub_version
            filter_data = None
            if not is_tag_type(sub.expression_type):
                # May be None (no compile): then every message matches, as RocketMQ without -ea.
                filter_data = manager.build(r.topic, r.consumer_group, r.subscription, r.expression_type, r.sub_version)
            return sub, filter_data
        info = self.consumer_table.get(r.consumer_group)
        if info is None:
            return _refuse(ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist")
        if not group_config.consume_broadcast_enable and info.message_model == "BROADCASTING":
            return _refuse(ResponseCode.NO_PERMISSION,
                           f"the consumer group[{r.consumer_group}] can not consume by broadcast way")
        if (r.consumer_group, r.topic) in self.read_forbidden:
            return _refuse(ResponseCode.NO_PERMISSION,
                           f"the consumer group[{r.consumer_group}] is forbidden for topic[{r.topic}]")
        sub = info.find_subscription_data(r.topic)
        if sub is None:
            return _refuse(ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist")
        if sub.sub_version < r.sub_version:
            return _refuse(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        filter_data = None
        if not is_tag_type(sub.expression_type):
            filter_data = manager.get(r.topic, r.consumer_group)
            if filter_data is None:
                return _refuse(ResponseCode.FILTER_DATA_NOT_EXIST,
                               "The broker's consumer filter data is not exist!Your expression may be wrong!")
            if filter_data.client_version < r.sub_version:
                return _refuse(ResponseCode.FILTER_DATA_NOT_LATEST, "the consumer's consumer filter data not latest")
        return sub, filter_data

    def _compose(self, r: PullMessageRequestHeader, result: GetMessageResult,
                 group_config: SubscriptionGroupConfig) -> PullMessageResponse:
        """``composeResponseHeader`` and the OFFSET_MOVED handling of the result handler."""
        bc, sc = self.broker_config, self.store_config
        status = GetMessageStatus(result.status)
        code = status_to_response_code(status, r.queue_offset)
        if bc.slave_read_enable:
            suggest = (group_config.which_broker_when_consume_slowly if result.suggest_pulling_from_slave
                       else group_config.broker_id)
        else:
            suggest = MASTER_ID
        if bc.broker_id != MASTER_ID and not result.suggest_pulling_from_slave:
            # A slave sends the consumer back to its master (assumed present in the group).
            suggest = MASTER_ID
            if status is not GetMessageStatus.FOUND:
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
        if code == ResponseCode.PULL_OFFSET_MOVED and sc.broker_role == "SLAVE" and not sc.offset_check_in_slave:
            suggest = group_config.broker_id
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
        return PullMessageResponse(code=int(code), remark=status.name, next_begin_offset=result.next_begin_offset,
                                   min_offset=result.min_offset, max_offset=result.max_offset,
                                   suggest_which_broker_id=suggest, messages=list(result.messages), result=result)


def _npe_text(error: Exception) -> str:
    text = str(error)
    start = text.find(RETRY_FILTER_NPE)
    return text[start:].splitlines()[0] if start >= 0 else text
