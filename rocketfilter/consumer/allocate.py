"""How a group's consumers share a topic's queues: RocketMQ's ``AllocateMessageQueueStrategy``
implementations (``client/.../consumer/rebalance``), same names, same results, same errors.

Every strategy answers ``allocate(consumer_group, current_cid, mq_all, cid_all)`` for one consumer.
None of them sorts: ``RebalanceImpl`` sorts ``mq_all`` (``MessageQueue.compareTo``) and ``cid_all``
(``String.compareTo``) before calling, and so must the caller (``ConsumerGroup.allocate`` does).
ValueError stands for Java's IllegalArgumentException and carries its message.

>>> from rocketfilter.consumer.message_queue import MessageQueue
>>> mqs = [MessageQueue("T", "broker-a", i) for i in range(5)]
>>> [q.queue_id for q in AllocateMessageQueueAveragely().allocate("G", "c1", mqs, ["c0", "c1"])]
[3, 4]
>>> [q.queue_id for q in AllocateMessageQueueAveragelyByCircle().allocate("G", "c1", mqs, ["c0", "c1"])]
[1, 3]

The consistent-hash strategy lives in :mod:`.consistent_hash`; names and parameters to
instances and back in :mod:`.strategies`.
"""
from __future__ import annotations

import abc
from typing import Dict, Iterable, List, Optional, Sequence, TypeVar

from rocketfilter.javalang import string_sort_key

Queue = TypeVar("Queue")


class AbstractAllocateMessageQueueStrategy(abc.ABC):
    """``AbstractAllocateMessageQueueStrategy``: the shared input check, and the interface."""

    @abc.abstractmethod
    def allocate(self, consumer_group: Optional[str], current_cid: Optional[str], mq_all: Sequence,
                 cid_all: Sequence[str]) -> list:
        """The queues of ``mq_all`` that consumer ``current_cid`` takes."""

    @abc.abstractmethod
    def get_name(self) -> str:
        """RocketMQ's name of the strategy (``getName``)."""

    @abc.abstractmethod
    def to_config(self) -> dict:
        """The strategy as a JSON-able dict; ``allocate_strategy_from_config`` reverses it."""

    def check(self, consumer_group: Optional[str], current_cid: Optional[str], mq_all: Sequence,
              cid_all: Sequence[str]) -> bool:
        """``check``: raises for an empty consumer id, queue list or consumer list; False (take
        nothing) when ``current_cid`` is not in ``cid_all``."""
        if not current_cid:
            raise ValueError("currentCID is empty")
        if not mq_all:
            raise ValueError("mqAll is null or mqAll empty")
        if not cid_all:
            raise ValueError("cidAll is null or cidAll empty")
        return current_cid in cid_all

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._state() == self._state()

    def __hash__(self) -> int:
        return hash((type(self), repr(self._state())))

    def _state(self) -> object:
        return self.to_config()

    def __repr__(self) -> str:
        params = {k: v for k, v in self.to_config().items() if k != "name"}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


class AllocateMessageQueueAveragely(AbstractAllocateMessageQueueStrategy):
    """``AVG``: contiguous blocks, the first ``len(mq_all) % len(cid_all)`` consumers one extra
    (SEMANTICS §13). N=8 queues over 3 consumers: [0,1,2], [3,4,5], [6,7]."""

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        n_queues, n_consumers = len(mq_all), len(cid_all)
        mod = n_queues % n_consumers
        gets_extra = mod > 0 and index < mod
        if n_queues <= n_consumers:
            average = 1
        else:
            average = n_queues // n_consumers + (1 if gets_extra else 0)
        start = index * average if gets_extra else index * average + mod
        take = min(average, n_queues - start)
        return [mq_all[start + i] for i in range(take)]

    def get_name(self) -> str:
        return "AVG"

    def to_config(self) -> dict:
        return {"name": self.get_name()}


class AllocateMessageQueueAveragelyByCircle(AbstractAllocateMessageQueueStrategy):
    """``AVG_BY_CIRCLE``: round robin; consumer ``i`` takes queues i, i+C, i+2C, ..."""

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        return [mq_all[i] for i in range(index, len(mq_all), len(cid_all))]

    def get_name(self) -> str:
        return "AVG_BY_CIRCLE"

    def to_config(self) -> dict:
        return {"name": self.get_name()}


class AllocateMessageQueueByConfig(AbstractAllocateMessageQueueStrategy):
    """``CONFIG``: every consumer takes the configured queues, whatever the arguments (RocketMQ
    does not even check them)."""

    def __init__(self, message_queue_list: Iterable):
        if message_queue_list is None:
            raise ValueError("AllocateMessageQueueByConfig needs a message_queue_list")
        self.message_queue_list = list(message_queue_list)

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        return list(self.message_queue_list)

    def get_name(self) -> str:
        return "CONFIG"

    def to_config(self) -> dict:
        return {"name": self.get_name(), "messageQueueList": [mq.to_dict() for mq in self.message_queue_list]}

    def _state(self) -> object:
        return tuple(self.message_queue_list)


def _java_split_at(s: str) -> List[str]:
    """Java ``s.split("@")``: trailing empty pieces dropped, the input itself when there is no "@"."""
    pieces = s.split("@")
    if len(pieces) == 1:
        return pieces
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


class AllocateMessageQueueByMachineRoom(AbstractAllocateMessageQueueStrategy):
    """``MACHINE_ROOM``: only queues of brokers named ``<room>@<name>`` whose room is in
    ``consumer_idcs``, shared out in blocks of ``len // C`` with the remainder dealt one each to
    the first consumers, from the end of the list."""

    def __init__(self, consumer_idcs: Iterable[str]):
        if consumer_idcs is None or isinstance(consumer_idcs, str):
            raise ValueError(f"AllocateMessageQueueByMachineRoom needs a collection of machine rooms "
                             f"(consumer_idcs), got {consumer_idcs!r}")
        self.consumer_idcs = frozenset(consumer_idcs)

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        current = list(cid_all).index(current_cid)
        in_rooms = []
        for mq in mq_all:
            parts = _java_split_at(mq.broker_name)
            if len(parts) == 2 and parts[0] in self.consumer_idcs:
                in_rooms.append(mq)
        block, rem = divmod(len(in_rooms), len(cid_all))
        result = in_rooms[block * current:block * current + block]
        if rem > current:
            result.append(in_rooms[current + block * len(cid_all)])
        return result

    def get_name(self) -> str:
        return "MACHINE_ROOM"

    def to_config(self) -> dict:
        return {"name": self.get_name(), "consumerIdcs": sorted(self.consumer_idcs, key=string_sort_key)}


class MachineRoomMap:
    """A ``MachineRoomResolver`` from two tables: broker name -> room and client id -> room.
    Anything missing resolves to None, which ``AllocateMachineRoomNearby`` refuses."""

    def __init__(self, broker_rooms: Dict[str, str], consumer_rooms: Dict[str, str]):
        self.broker_rooms = dict(broker_rooms)
        self.consumer_rooms = dict(consumer_rooms)

    def broker_deploy_in(self, mq) -> Optional[str]:
        return self.broker_rooms.get(mq.broker_name)

    def consumer_deploy_in(self, client_id: str) -> Optional[str]:
        return self.consumer_rooms.get(client_id)

    def to_config(self) -> dict:
        return {"brokerRooms": dict(self.broker_rooms), "consumerRooms": dict(self.consumer_rooms)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MachineRoomMap) and other.to_config() == self.to_config()

    def __repr__(self) -> str:
        return f"MachineRoomMap(broker_rooms={self.broker_rooms!r}, consumer_rooms={self.consumer_rooms!r})"


class AllocateMachineRoomNearby(AbstractAllocateMessageQueueStrategy):
    """``MACHINE_ROOM_NEARBY-<inner>``: a consumer shares its own room's queues with the consumers
    of its room (by ``strategy``); the queues of rooms without any consumer are shared by everyone
    (by ``strategy`` again, room by room in Java's string order of room names).

    ``resolver`` has ``broker_deploy_in(mq)`` and ``consumer_deploy_in(client_id)``
    (:class:`MachineRoomMap` is one); a room that resolves to None or "" is an error.
    """

    def __init__(self, strategy: AbstractAllocateMessageQueueStrategy, resolver):
        if strategy is None:
            raise ValueError("allocateMessageQueueStrategy is null")
        if resolver is None:
            raise ValueError("machineRoomResolver is null")
        self.strategy = strategy
        self.resolver = resolver

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        queues_by_room: Dict[str, list] = {}
        for mq in mq_all:
            room = self.resolver.broker_deploy_in(mq)
            if not room:
                raise ValueError(f"Machine room is null for mq {mq}")
            queues_by_room.setdefault(room, []).append(mq)
        consumers_by_room: Dict[str, List[str]] = {}
        for cid in cid_all:
            room = self.resolver.consumer_deploy_in(cid)
            if not room:
                raise ValueError(f"Machine room is null for consumer id {cid}")
            consumers_by_room.setdefault(room, []).append(cid)

        result = []
        my_room = self.resolver.consumer_deploy_in(current_cid)
        mine = queues_by_room.pop(my_room, None)
        if mine:
            result += self.strategy.allocate(consumer_group, current_cid, mine, consumers_by_room.get(my_room))
        for room in sorted(queues_by_room, key=string_sort_key):  # Java's TreeMap order
            if room not in consumers_by_room:
                result += self.strategy.allocate(consumer_group, current_cid, queues_by_room[room], cid_all)
        return result

    def get_name(self) -> str:
        return "MACHINE_ROOM_NEARBY-" + self.strategy.get_name()

    def to_config(self) -> dict:
        to_config = getattr(self.resolver, "to_config", None)
        if to_config is None:
            raise ValueError(f"{self.get_name()}: the resolver {self.resolver!r} cannot be saved "
                             "(use a MachineRoomMap)")
        return {"name": "MACHINE_ROOM_NEARBY", "inner": self.strategy.to_config(), **to_config()}

    def _state(self) -> object:
        return (self.strategy, self.resolver)

    def __repr__(self) -> str:
        return f"AllocateMachineRoomNearby({self.strategy!r}, {self.resolver!r})"


_AVERAGELY = AllocateMessageQueueAveragely()


def allocate_averagely(group: Optional[str], current_cid: Optional[str], mq_all: Sequence[Queue],
                       cid_all: Sequence[str]) -> List[Queue]:
    """``AllocateMessageQueueAveragely().allocate(...)``: any kind of queue items.

    >>> allocate_averagely("G", "c2", list(range(8)), ["c0", "c1", "c2"])
    [6, 7]
    """
    return _AVERAGELY.allocate(group, current_cid, mq_all, cid_all)

