"""A consumer group as a JSON or YAML document (docs/consumer-groups.md shows the shape):

.. code-block:: yaml

    group: GID_orders
    messageModel: CLUSTERING                    # optional; or BROADCASTING
    allocateStrategy: {name: AVG}               # optional; or "AVG", {name: CONSISTENT_HASH, virtualNodeCnt: 10}, ...
    consumeFromWhere: CONSUME_FROM_LAST_OFFSET  # optional
    consumers:                                  # heartbeats are applied in this order
      - clientId: 10.0.0.1@app
        subscriptions: {OrderEvents: "paid || shipped"}      # topic -> TAG expression ("*": quote it in YAML)
      - clientId: 10.0.0.2@app
        subscriptions: {OrderEvents: {expression: "amount > 100", type: SQL92}}
        subVersion: 1700000000001                # optional: default now in ms, later consumers higher
        postSubscriptionWhenPull: true           # optional, default false
      - clientId: 10.0.0.3@app
        subscriptions: {Refunds: {expression: "*", subVersion: 1700000000005}}   # a topic's own version
        unregistered: true                       # optional: it left; its heartbeats still count
    heartbeats: [10.0.0.1@app, 10.0.0.2@app, 10.0.0.3@app, 10.0.0.1@app]   # optional: another order

This module reads and checks the document; every error names the file, the consumer and the
field. :class:`rocketfilter.consumer.group.ConsumerGroup` builds the group from it.
"""
from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

import yaml

from rocketfilter.conf_sources import ConfigError
from rocketfilter.consumer.allocate import AbstractAllocateMessageQueueStrategy
from rocketfilter.consumer.group_info import CONSUME_FROM_WHERE, MESSAGE_MODELS
from rocketfilter.consumer.strategies import allocate_strategy_from_config
from rocketfilter.consumer.subscriptions import build_subscription_spec, subscription_to_spec
from rocketfilter.javalang import LONG_MAX, LONG_MIN
from rocketfilter.naming import validate_group

GROUP_KEYS = ("group", "messageModel", "allocateStrategy", "consumeFromWhere", "consumers", "heartbeats")
CONSUMER_KEYS = ("clientId", "subscriptions", "subVersion", "postSubscriptionWhenPull", "unregistered")


class GroupFileError(ConfigError):
    """A group document that cannot be read; the message names the file, consumer and field."""


@dataclass
class ConsumerSpec:
    client_id: str
    subscriptions: Dict[str, Any]
    sub_version: Optional[int] = None
    post_subscription_when_pull: bool = False
    unregistered: bool = False


@dataclass
class GroupSpec:
    """A checked group document, ready for ``ConsumerGroup``."""

    group: str
    message_model: str = "CLUSTERING"
    allocate_strategy: Optional[AbstractAllocateMessageQueueStrategy] = None
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    consumers: List[ConsumerSpec] = field(default_factory=list)
    heartbeats: Optional[List[str]] = None


def _unknown_keys(data: Mapping, allowed: tuple, where: str) -> None:
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{where}unknown key {key!r}{hint}; allowed: {', '.join(allowed)}")


def _choice(data: Mapping, key: str, allowed: tuple, default: str) -> str:
    value = data.get(key, default)
    if value not in allowed:
        raise ValueError(f"{key}: must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _consumer(item: Any, index: int, seen: set) -> ConsumerSpec:
    where = f"consumers[{index}]"
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: expected a mapping with clientId and subscriptions, got {item!r}")
    cid = item.get("clientId")
    if not isinstance(cid, str) or not cid:
        raise ValueError(f"{where}: clientId: expected a non-empty string, got {cid!r}")
    where = f"{where} (clientId {cid!r})"
    _unknown_keys(item, CONSUMER_KEYS, f"{where}: ")
    if cid in seen:
        raise ValueError(f"{where}: clientId: listed twice (list a consumer once; repeat heartbeats in \"heartbeats\")")
    seen.add(cid)
    subs = item.get("subscriptions")
    if not isinstance(subs, Mapping):
        raise ValueError(f"{where}: subscriptions: expected a mapping of topic to expression, got {subs!r}")
    version = item.get("subVersion")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)
                                or not LONG_MIN <= version <= LONG_MAX):
        raise ValueError(f"{where}: subVersion: expected an integer (a Java long), got {version!r}")
    for topic, spec in subs.items():
        if not isinstance(spec, (str, Mapping)):
            raise ValueError(f"{where}: subscriptions.{topic}: expected a TAG expression string or "
                             f"{{expression, type}}, got {spec!r}")
        try:
            build_subscription_spec(topic, spec, 0)
        except ValueError as error:
            raise ValueError(f"{where}: subscriptions.{topic}: {error}") from None
    flags = {}
    for key in ("postSubscriptionWhenPull", "unregistered"):
        flags[key] = item.get(key, False)
        if not isinstance(flags[key], bool):
            raise ValueError(f"{where}: {key}: expected true or false, got {flags[key]!r}")
    return ConsumerSpec(cid, dict(subs), version, flags["postSubscriptionWhenPull"], flags["unregistered"])


def _heartbeats(value: Any, consumers: List[ConsumerSpec]) -> List[str]:
    ids = [c.client_id for c in consumers]
    if not isinstance(value, list) or not all(isinstance(cid, str) for cid in value):
        raise ValueError(f"heartbeats: expected a list of client ids, got {value!r}")
    for i, cid in enumerate(value):
        if cid not in ids:
            raise ValueError(f"heartbeats[{i}]: {cid!r} is not a consumer of the group (consumers: {ids})")
    missing = [cid for cid in ids if cid not in value]
    if missing:
        raise ValueError(f"heartbeats: consumers {missing} never heartbeat; list each at least once")
    return list(value)


def parse_group_dict(data: Any, source: Optional[str] = None) -> GroupSpec:
    """Check a group document; raises :class:`GroupFileError` naming ``source`` and the field."""
    prefix = f"{source}: " if source else ""
    try:
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a mapping with group and consumers, got {type(data).__name__}")
        _unknown_keys(data, GROUP_KEYS, "")
        if "group" not in data:
            raise ValueError("group: missing (the consumer group's name)")
        try:
            group = validate_group(data["group"])
        except ValueError as error:
            raise ValueError(f"group: {error}") from None
        spec = GroupSpec(group, _choice(data, "messageModel", MESSAGE_MODELS, "CLUSTERING"),
                         consume_from_where=_choice(data, "consumeFromWhere", CONSUME_FROM_WHERE,
                                                    "CONSUME_FROM_LAST_OFFSET"))
        try:
            spec.allocate_strategy = allocate_strategy_from_config(data.get("allocateStrategy", "AVG"))
        except ValueError as error:
            raise ValueError(f"allocateStrategy: {error}") from None
        consumers = data.get("consumers", [])
        if not isinstance(consumers, list):
            raise ValueError(f"consumers: expected a list, got {consumers!r}")
        seen: set = set()
        spec.consumers = [_consumer(item, i, seen) for i, item in enumerate(consumers)]
        if "heartbeats" in data:
            spec.heartbeats = _heartbeats(data["heartbeats"], spec.consumers)
        if spec.consumers and all(c.unregistered for c in spec.consumers):
            raise ValueError("consumers: every consumer is unregistered; when the last one leaves the broker "
                             "forgets the group, so list the group without consumers instead")
        return spec
    except ValueError as error:
        raise GroupFileError(f"{prefix}{error}") from None


def read_group_file(path: Union[str, os.PathLike]) -> Any:
    """The document in a ``.json``, ``.yaml`` or ``.yml`` file (YAML through PyYAML's safe loader)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise GroupFileError(f"{path}: a group file ends in .json, .yaml or .yml")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise GroupFileError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise GroupFileError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise GroupFileError(f"{path}: line {error.lineno} column {error.colno}: {error.msg}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        hint = ' (YAML reads an unquoted * as an alias: write "*")' if "alias" in str(error) else ""
        raise GroupFileError(f"{path}: {where}{problem}{hint}") from None


def group_to_dict(group) -> Dict[str, Any]:
    """A ``ConsumerGroup`` as a document that :func:`parse_group_dict` reads back to the same group."""
    consumers = []
    for consumer in group.consumers.values():
        item: Dict[str, Any] = {
            "clientId": consumer.client_id,
            "subscriptions": {t: subscription_to_spec(s, consumer.sub_version)
                              for t, s in consumer.subscriptions.items()},
            "subVersion": consumer.sub_version,
        }
        if consumer.post_subscription_when_pull:
            item["postSubscriptionWhenPull"] = True
        if consumer.client_id in group.departed:
            item["unregistered"] = True
        consumers.append(item)
    data = {"group": group.group, "messageModel": group.message_model,
            "allocateStrategy": group.allocate_strategy.to_config(),
            "consumeFromWhere": group.consume_from_where, "consumers": consumers}
    if group.heartbeats != list(group.consumers):
        data["heartbeats"] = group.heartbeats
    return data
