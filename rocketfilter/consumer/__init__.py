"""Consumer groups on the client side: message queues, the allocation strategies that share a
topic's queues among a group's consumers, and groups as data (their subscriptions as the broker
sees them after every heartbeat). Nothing here imports rocketfilter.pull; pull builds on this."""
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
]
