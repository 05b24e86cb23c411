"""Allocation strategies by name: a JSON-able config to an instance and back (for group files and
for persisting groups).

The config is a dict with RocketMQ's strategy name and its parameters in camelCase, or just the
name for a strategy without parameters:

=============================  ==========================================================
``"AVG"``                      ``AllocateMessageQueueAveragely()``
``"AVG_BY_CIRCLE"``            ``AllocateMessageQueueAveragelyByCircle()``
``{"name": "CONSISTENT_HASH",  ``AllocateMessageQueueConsistentHash(10)``
"virtualNodeCnt": 10}``        (``virtualNodeCnt`` is optional, default 10)
``{"name": "CONFIG",           ``AllocateMessageQueueByConfig([...])``
"messageQueueList": [...]}``   (each queue ``{"topic", "brokerName", "queueId"}``)
``{"name": "MACHINE_ROOM",     ``AllocateMessageQueueByMachineRoom({"room1"})``
"consumerIdcs": ["room1"]}``
``{"name":                     ``AllocateMachineRoomNearby(AVG, MachineRoomMap(...))``; the
"MACHINE_ROOM_NEARBY",         name may also be ``get_name()``'s ``"MACHINE_ROOM_NEARBY-AVG"``
"inner": "AVG", "brokerRooms": instead of giving ``inner``
{...}, "consumerRooms": {...}}``
=============================  ==========================================================

>>> strategy = allocate_strategy_from_config({"name": "CONSISTENT_HASH", "virtualNodeCnt": 3})
>>> strategy.get_name(), strategy.to_config()
('CONSISTENT_HASH', {'name': 'CONSISTENT_HASH', 'virtualNodeCnt': 3})
"""
from __future__ import annotations

import difflib
from typing import Any, Dict, Mapping, Union

from rocketfilter.consumer.allocate import (AbstractAllocateMessageQueueStrategy, AllocateMachineRoomNearby,
                                            AllocateMessageQueueAveragely, AllocateMessageQueueAveragelyByCircle,
                                            AllocateMessageQueueByConfig, AllocateMessageQueueByMachineRoom,
                                            MachineRoomMap)
from rocketfilter.consumer.consistent_hash import AllocateMessageQueueConsistentHash
from rocketfilter.consumer.message_queue import MessageQueue

NEARBY = "MACHINE_ROOM_NEARBY"
StrategyConfig = Union[str, Mapping[str, Any]]


def _str_map(config: Mapping[str, Any], key: str) -> Dict[str, str]:
    value = config.get(key)
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in value.items()):
        raise ValueError(f"{key} must map names to machine rooms (strings), got {value!r}")
    return dict(value)


def _queue_list(config: Mapping[str, Any]) -> AllocateMessageQueueByConfig:
    queues = config.get("messageQueueList")
    if not isinstance(queues, list):
        raise ValueError(f"messageQueueList must be a list of queues, got {queues!r}")
    parsed = []
    for i, item in enumerate(queues):
        try:
            parsed.append(MessageQueue.from_dict(item))
        except (TypeError, ValueError) as error:
            raise ValueError(f"messageQueueList[{i}]: {error}") from None
    return AllocateMessageQueueByConfig(parsed)


def _machine_room(config: Mapping[str, Any]) -> AllocateMessageQueueByMachineRoom:
    rooms = config.get("consumerIdcs")
    if not isinstance(rooms, list) or not all(isinstance(r, str) for r in rooms):
        raise ValueError(f"consumerIdcs must be a list of machine rooms (strings), got {rooms!r}")
    return AllocateMessageQueueByMachineRoom(rooms)


def _consistent_hash(config: Mapping[str, Any]) -> AllocateMessageQueueConsistentHash:
    count = config.get("virtualNodeCnt", 10)
    if isinstance(count, bool) or not isinstance(count, int):
        raise ValueError(f"virtualNodeCnt must be an integer, got {count!r}")
    return AllocateMessageQueueConsistentHash(count)


def _nearby(config: Mapping[str, Any]) -> AllocateMachineRoomNearby:
    if "inner" not in config:
        raise ValueError(f"{NEARBY} needs an inner strategy: \"inner\": \"AVG\" or a name like \"{NEARBY}-AVG\"")
    try:
        inner = allocate_strategy_from_config(config["inner"])
    except ValueError as error:
        raise ValueError(f"inner: {error}") from None
    resolver = MachineRoomMap(_str_map(config, "brokerRooms"), _str_map(config, "consumerRooms"))
    return AllocateMachineRoomNearby(inner, resolver)


# name -> (the keys it takes besides "name", its builder)
_BUILDERS: Dict[str, tuple] = {
    "AVG": ((), lambda c: AllocateMessageQueueAveragely()),
    "AVG_BY_CIRCLE": ((), lambda c: AllocateMessageQueueAveragelyByCircle()),
    "CONSISTENT_HASH": (("virtualNodeCnt",), _consistent_hash),
    "CONFIG": (("messageQueueList",), _queue_list),
    "MACHINE_ROOM": (("consumerIdcs",), _machine_room),
    NEARBY: (("inner", "brokerRooms", "consumerRooms"), _nearby),
}
STRATEGY_NAMES = tuple(_BUILDERS)


def allocate_strategy_from_config(config: StrategyConfig) -> AbstractAllocateMessageQueueStrategy:
    """An allocation strategy from its name, or from ``{"name": ..., <parameters>}``.

    Raises ValueError naming the unknown strategy, key or bad parameter.

    >>> allocate_strategy_from_config("AVG")
    AllocateMessageQueueAveragely()
    >>> allocate_strategy_from_config({"name": "MACHINE_ROOM_NEARBY-AVG", "brokerRooms": {"broker-a": "room1"},
    ...                                "consumerRooms": {"c0": "room1"}}).get_name()
    'MACHINE_ROOM_NEARBY-AVG'
    """
    if isinstance(config, AbstractAllocateMessageQueueStrategy):
        return config
    if isinstance(config, str):
        config = {"name": config}
    if not isinstance(config, Mapping):
        raise ValueError(f"an allocation strategy is a name or {{\"name\": ..., ...}}, got {config!r}")
    name = config.get("name")
    if not isinstance(name, str):
        raise ValueError(f"an allocation strategy needs a \"name\", one of {list(STRATEGY_NAMES)}; "
                         f"got {dict(config)!r}")
    if name.startswith(NEARBY + "-"):
        inner = name[len(NEARBY) + 1:]
        if "inner" in config and allocate_strategy_from_config(config["inner"]).get_name() != inner:
            raise ValueError(f"strategy {name!r} does not match its inner strategy {config['inner']!r}")
        config, name = {**config, "name": NEARBY, "inner": config.get("inner", inner)}, NEARBY
    if name not in _BUILDERS:
        close = difflib.get_close_matches(name.upper(), STRATEGY_NAMES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown allocation strategy {name!r}{hint}; known: {', '.join(STRATEGY_NAMES)}")
    keys, build = _BUILDERS[name]
    unknown = sorted(set(config) - {"name", *keys})
    if unknown:
        allowed = ", ".join(keys) or "no parameters"
        raise ValueError(f"allocation strategy {name} does not take {unknown} (it takes {allowed})")
    return build(config)


def allocate_strategy_to_config(strategy: AbstractAllocateMessageQueueStrategy) -> Dict[str, Any]:
    """``strategy.to_config()``, for symmetry with :func:`allocate_strategy_from_config`."""
    return strategy.to_config()

