"""Consumer groups on the client side: message queues, the allocation strategies that share a
topic's queues among a group's consumers, and groups as data (their subscriptions as the broker
sees them after every heartbeat). No module here imports rocketfilter.pull or the store; they
build on this.

``replay_group``, ``diagnose_group`` and ``GroupDiagnosis`` need the store and the pull loop, so
they live in :mod:`rocketfilter.groups` (``replay``, ``diagnosis``), two layers up; import them
from ``rocketfilter``. For code written before, this package still hands them out on first use
(``rocketfilter.consumer.replay_group``), by name, without importing them."""
from rocketfilter.consumer.allocate import (AbstractAllocateMessageQueueStrategy, AllocateMachineRoomNearby,
                                            AllocateMessageQueueAveragely, AllocateMessageQueueAveragelyByCircle,
                                            AllocateMessageQueueByConfig, AllocateMessageQueueByMachineRoom,
                                            MachineRoomMap, allocate_averagely)
from rocketfilter.consumer.consistent_hash import AllocateMessageQueueConsistentHash, ConsistentHashRouter, md5_hash
from rocketfilter.consumer.group import ConsumerData, ConsumerGroup, HeartbeatStep, PullSubscription
from rocketfilter.consumer.group_file import GroupFileError
from rocketfilter.consumer.group_info import ConsumerGroupInfo, SubVersionClock
from rocketfilter.consumer.message_queue import MessageQueue
from rocketfilter.consumer.strategies import STRATEGY_NAMES, allocate_strategy_from_config

__all__ = [
    "MessageQueue",
    "AbstractAllocateMessageQueueStrategy", "AllocateMessageQueueAveragely", "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueConsistentHash", "AllocateMessageQueueByConfig", "AllocateMessageQueueByMachineRoom",
    "AllocateMachineRoomNearby", "MachineRoomMap", "ConsistentHashRouter", "md5_hash", "allocate_averagely",
    "STRATEGY_NAMES", "allocate_strategy_from_config",
    "ConsumerGroup", "ConsumerData", "PullSubscription", "HeartbeatStep", "GroupFileError",
    "ConsumerGroupInfo", "SubVersionClock",
    "replay_group", "diagnose_group", "GroupDiagnosis",
]

# name -> the module above this package that defines it, looked up on first use only (old imports).
_LAZY = {"replay_group": "rocketfilter.groups.replay", "diagnose_group": "rocketfilter.groups.diagnosis",
         "GroupDiagnosis": "rocketfilter.groups.diagnosis"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
