"""``AllocateMessageQueueConsistentHash`` and the ring it builds (``ConsistentHashRouter``).

Each consumer id puts ``virtual_node_cnt`` points on a ring, at the hash of ``"<cid>-<i>"``; a
queue goes to the first point at or after the hash of its ``toString()``
(``MessageQueue [topic=T, brokerName=B, queueId=0]``), wrapping around. The default hash is
RocketMQ's ``MD5Hash``: the first four bytes of the MD5 of the UTF-8 key, as an unsigned number.
Points that collide overwrite each other, later consumers winning, as in Java's TreeMap.

>>> from rocketfilter.consumer.message_queue import MessageQueue
>>> mqs = [MessageQueue("T", "broker-a", i) for i in range(4)]
>>> strategy = AllocateMessageQueueConsistentHash(virtual_node_cnt=10)
>>> {cid: [q.queue_id for q in strategy.allocate("G", cid, mqs, ["c0", "c1"])] for cid in ("c0", "c1")}
{'c0': [0, 1], 'c1': [2, 3]}
"""
from __future__ import annotations

import bisect
import hashlib
from typing import Callable, Dict, Generic, Iterable, List, Optional, Sequence, TypeVar

from rocketfilter.consumer.allocate import AbstractAllocateMessageQueueStrategy
from rocketfilter.javalang import LONG_MAX, LONG_MIN

HashFunction = Callable[[str], int]
Node = TypeVar("Node")


def md5_hash(key: str) -> int:
    """``ConsistentHashRouter.MD5Hash.hash``: the first 4 MD5 bytes of the UTF-8 key, big-endian,
    unsigned (0 .. 2^32-1). A lone surrogate encodes as "?", as Java's encoder replaces it."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8", "replace")).digest()[:4], "big")


class ConsistentHashRouter(Generic[Node]):
    """``ConsistentHashRouter``: physical nodes (keyed by ``key(node)``) on a hash ring."""

    def __init__(self, nodes: Iterable[Node], virtual_node_count: int,
                 hash_function: Optional[HashFunction] = None, key: Callable[[Node], str] = str):
        self.hash_function = hash_function or md5_hash
        self.key = key
        self._ring: Dict[int, Node] = {}
        self._points: Optional[List[int]] = None
        for node in nodes or ():
            self.add_node(node, virtual_node_count)

    def _hash(self, key: str) -> int:
        value = self.hash_function(key)
        if isinstance(value, bool) or not isinstance(value, int) or not LONG_MIN <= value <= LONG_MAX:
            raise ValueError(f"the hash function must return a Java long, got {value!r} for {key!r}")
        return value

    def add_node(self, node: Node, virtual_node_count: int) -> None:
        """``addNode``: replicas are numbered on from the node's replicas already on the ring."""
        if virtual_node_count < 0:
            raise ValueError(f"illegal virtual node counts :{virtual_node_count}")
        existing = self.existing_replicas(node)
        for i in range(virtual_node_count):
            self._ring[self._hash(f"{self.key(node)}-{i + existing}")] = node
        self._points = None

    def existing_replicas(self, node: Node) -> int:
        """``getExistingReplicas``: the node's points still on the ring."""
        key = self.key(node)
        return sum(1 for other in self._ring.values() if self.key(other) == key)

    def route_node(self, object_key: str) -> Optional[Node]:
        """``routeNode``: the node of the first point at or after the key's hash (None: empty ring)."""
        if not self._ring:
            return None
        if self._points is None:
            self._points = sorted(self._ring)
        at = bisect.bisect_left(self._points, self._hash(object_key))
        return self._ring[self._points[at if at < len(self._points) else 0]]


class AllocateMessageQueueConsistentHash(AbstractAllocateMessageQueueStrategy):
    """``CONSISTENT_HASH``: the queues whose ring point belongs to ``current_cid``.

    ``custom_hash_function`` (a ``str -> int`` returning a Java long) replaces MD5, as RocketMQ's
    ``HashFunction`` argument does; such a strategy cannot be saved with ``to_config``. With
    ``virtual_node_cnt=0`` the ring is empty and nobody gets anything.
    """

    def __init__(self, virtual_node_cnt: int = 10, custom_hash_function: Optional[HashFunction] = None):
        if isinstance(virtual_node_cnt, bool) or not isinstance(virtual_node_cnt, int):
            raise TypeError(f"virtual_node_cnt must be an int, got {virtual_node_cnt!r}")
        if virtual_node_cnt < 0:
            raise ValueError(f"illegal virtualNodeCnt :{virtual_node_cnt}")
        self.virtual_node_cnt = virtual_node_cnt
        self.custom_hash_function = custom_hash_function

    def router(self, cid_all: Sequence[str]) -> ConsistentHashRouter[str]:
        """The ring of ``cid_all`` (each consumer id is its own key)."""
        return ConsistentHashRouter(cid_all, self.virtual_node_cnt, self.custom_hash_function)

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        router = self.router(cid_all)
        return [mq for mq in mq_all if router.route_node(str(mq)) == current_cid]

    def get_name(self) -> str:
        return "CONSISTENT_HASH"

    def to_config(self) -> dict:
        if self.custom_hash_function is not None:
            raise ValueError(f"{self!r}: a custom hash function cannot be saved")
        return {"name": self.get_name(), "virtualNodeCnt": self.virtual_node_cnt}

    def _state(self) -> object:
        return (self.virtual_node_cnt, self.custom_hash_function)

    def __repr__(self) -> str:
        extra = "" if self.custom_hash_function is None else f", custom_hash_function={self.custom_hash_function!r}"
        return f"AllocateMessageQueueConsistentHash(virtual_node_cnt={self.virtual_node_cnt}{extra})"
