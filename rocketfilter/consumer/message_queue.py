"""RocketMQ's ``MessageQueue``: one queue of a topic on one broker, ordered as ``compareTo`` orders it.

>>> q = MessageQueue("TopicTest", "broker-a", 3)
>>> str(q)                                        # Java's toString(), which the consistent-hash ring hashes
'MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]'
>>> sorted([MessageQueue("T", "b", 1), MessageQueue("T", "a", 2), MessageQueue("T", "b", 0)])[0]
MessageQueue(topic='T', broker_name='a', queue_id=2)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from rocketfilter.javalang import INT_MAX, INT_MIN, string_sort_key


def _java_int_difference(a: int, b: int) -> int:
    """Java's ``a - b`` on two ints: wraps around at 32 bits."""
    return ((a - b + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


@dataclass(frozen=True)
class MessageQueue:
    """``MessageQueue(topic, brokerName, queueId)``: hashable and ordered like Java's ``compareTo``.

    Topic, then broker name, each compared by UTF-16 code unit (Java's ``String.compareTo``, not
    Python's code-point order), then ``queueId - o.queueId`` in 32-bit arithmetic (which only
    matters for ids more than 2^31 apart: real queue ids are >= 0). Names are not validated, as
    in Java: a queue is a value, not a registration.
    """

    topic: str
    broker_name: str
    queue_id: int
    _key: tuple = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("topic", "broker_name"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"MessageQueue.{name} must be a str, got {getattr(self, name)!r}")
        if isinstance(self.queue_id, bool) or not isinstance(self.queue_id, int):
            raise TypeError(f"MessageQueue.queue_id must be an int, got {self.queue_id!r}")
        if not INT_MIN <= self.queue_id <= INT_MAX:
            raise ValueError(f"MessageQueue.queue_id {self.queue_id} is outside Java's int range")
        # The UTF-16 keys are computed once: rebalancing sorts the same queues over and over.
        object.__setattr__(self, "_key", (string_sort_key(self.topic), string_sort_key(self.broker_name)))

    def compare_to(self, other: "MessageQueue") -> int:
        """Java's ``compareTo``: negative, zero or positive."""
        if self._key != other._key:
            return -1 if self._key < other._key else 1
        return _java_int_difference(self.queue_id, other.queue_id)

    def __lt__(self, other: "MessageQueue") -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.compare_to(other) < 0

    def __le__(self, other: "MessageQueue") -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.compare_to(other) <= 0

    def __gt__(self, other: "MessageQueue") -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.compare_to(other) > 0

    def __ge__(self, other: "MessageQueue") -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.compare_to(other) >= 0

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def to_dict(self) -> dict:
        """The queue as RocketMQ's JSON spells it: ``{"topic", "brokerName", "queueId"}``."""
        return {"topic": self.topic, "brokerName": self.broker_name, "queueId": self.queue_id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "MessageQueue":
        """The inverse of :meth:`to_dict`; a ``[topic, brokerName, queueId]`` list is accepted too."""
        if isinstance(data, (list, tuple)) and len(data) == 3:
            return cls(*data)
        if not isinstance(data, Mapping):
            raise ValueError(f"a message queue is {{topic, brokerName, queueId}} or [topic, brokerName, queueId], "
                             f"got {data!r}")
        unknown = sorted(set(data) - {"topic", "brokerName", "queueId"})
        missing = [k for k in ("topic", "brokerName", "queueId") if k not in data]
        if unknown or missing:
            raise ValueError(f"a message queue has exactly topic, brokerName and queueId; "
                             f"missing {missing}, unknown {unknown}")
        return cls(data["topic"], data["brokerName"], data["queueId"])
