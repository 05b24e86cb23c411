"""The store's high-water marks, carried in the custom metadata of the commits that move them.

A broker keeps its next commit-log offset and each queue's next offset in memory and recovers
them from its files. Here they ride along with the Delta commit that moved them, so reading them
costs one log lookup instead of a scan, and a producer that raced another one sees the winner's
marks when it re-reads (optimistic concurrency).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, Optional

COMMITLOG_KEY = "rocketfilter.commitlog"
CONSUMEQUEUE_KEY = "rocketfilter.consumequeue"
DISPATCH_APP_ID = "rocketfilter.dispatch"


@dataclass
class CommitLogState:
    """``commitLog.maxOffset`` (the next physical offset), its min offset, each queue's next
    offset and each topic's round-robin position for producers that pick no queue."""

    next_commitlog_offset: int = 0
    min_commitlog_offset: int = 0
    queues: Dict[str, Dict[int, int]] = field(default_factory=dict)
    round_robin: Dict[str, int] = field(default_factory=dict)

    def next_queue_offset(self, topic: str, queue_id: int) -> int:
        return self.queues.get(topic, {}).get(queue_id, 0)

    def to_metadata(self) -> Dict[str, str]:
        body = {
            "next_commitlog_offset": self.next_commitlog_offset,
            "min_commitlog_offset": self.min_commitlog_offset,
            "queues": {t: {str(q): o for q, o in qs.items()} for t, qs in self.queues.items()},
            "round_robin": self.round_robin,
        }
        return {COMMITLOG_KEY: json.dumps(body, separators=(",", ":"))}

    @classmethod
    def from_metadata(cls, value: Optional[str]) -> "CommitLogState":
        if value is None:
            return cls()
        body = json.loads(value)
        return cls(
            next_commitlog_offset=int(body["next_commitlog_offset"]),
            min_commitlog_offset=int(body.get("min_commitlog_offset", 0)),
            queues={t: {int(q): int(o) for q, o in qs.items()} for t, qs in body["queues"].items()},
            round_robin={t: int(i) for t, i in body.get("round_robin", {}).items()},
        )


@dataclass
class ConsumeQueueState:
    """Each queue's ``[min_offset, max_offset)`` (max is one past the last entry, as
    ``maxOffsetInQueue``), how far the commit log has been dispatched, and each topic's slots
    of exact subscription bits (:mod:`.sub_bits`): decision key -> ``{"slot": i, "from":
    {queue_id: first queue offset with the bit}}``."""

    dispatched: int = 0
    queues: Dict[str, Dict[int, list]] = field(default_factory=dict)
    bits: Dict[str, Dict[str, dict]] = field(default_factory=dict)

    def offsets(self, topic: str, queue_id: int) -> Optional[tuple]:
        found = self.queues.get(topic, {}).get(queue_id)
        return None if found is None else (int(found[0]), int(found[1]))

    def to_metadata(self) -> Dict[str, str]:
        body = {
            "dispatched": self.dispatched,
            "queues": {t: {str(q): list(o) for q, o in qs.items()} for t, qs in self.queues.items()},
        }
        if self.bits:
            body["bits"] = {t: {k: {"slot": v["slot"], "from": {str(q): o for q, o in v["from"].items()}}
                                for k, v in keys.items()} for t, keys in self.bits.items()}
        return {CONSUMEQUEUE_KEY: json.dumps(body, separators=(",", ":"))}

    @classmethod
    def from_metadata(cls, value: Optional[str]) -> "ConsumeQueueState":
        if value is None:
            return cls()
        body = json.loads(value)
        return cls(
            dispatched=int(body["dispatched"]),
            queues={t: {int(q): [int(o[0]), int(o[1])] for q, o in qs.items()}
                    for t, qs in body["queues"].items()},
            bits={t: {k: {"slot": int(v["slot"]), "from": {int(q): int(o) for q, o in v["from"].items()}}
                      for k, v in keys.items()} for t, keys in body.get("bits", {}).items()},
        )
