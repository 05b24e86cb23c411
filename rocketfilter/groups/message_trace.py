"""What :func:`~rocketfilter.groups.explain_message.explain_message` answers: a
:class:`MessageTrace`, the ordered steps one message goes through for one consumer group, and
its :class:`Verdict`.

Each lost reason of ``diagnose_group`` (:data:`rocketfilter.groups.outcomes.LOST_REASONS`)
has one verdict, so a trace and a diagnosis say the same thing in two vocabularies:

==================================  =============================================================
reason (``trace.reason``)           verdict
==================================  =============================================================
(consumed)                          CONSUMED below the committed offset, else PENDING
dropped_by_client_recheck           DROPPED_BY_CLIENT_RECHECK
filtered_by_group_subscription,     FILTERED_BY_TAG_CODE, FILTERED_BY_BITMAP or FILTERED_BY_SQL92:
filtered_by_own_subscription        the check of the broker's filter that rejected it
skipped_by_broker                   EXPIRED: getMessage passes over it, its commit-log file being
                                    removed (MESSAGE_WAS_REMOVING)
pull_refused                        NOT_SUBSCRIBED (SUBSCRIPTION_NOT_EXIST, SUBSCRIPTION_NOT_LATEST);
                                    FILTERED_BY_SQL92 (FILTER_DATA_NOT_EXIST: the selector does not
                                    compile; SYSTEM_ERROR: the broker does not filter by SQL92)
queue_not_consumed                  NOT_SUBSCRIBED (the queue's owner does not subscribe the
                                    topic), NO_CONSUMER (no consumer owns the queue)
==================================  =============================================================

A message that is not there is EXPIRED (below its queue's min offset, or its CommitLog record
removed) or NOT_FOUND; neither has a reason, as neither is in a diagnosis.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, Optional, Tuple


class Verdict(str, Enum):
    """What became of the message for the group (a ``str``: ``trace.verdict == "CONSUMED"``)."""

    CONSUMED = "CONSUMED"
    PENDING = "PENDING"
    FILTERED_BY_TAG_CODE = "FILTERED_BY_TAG_CODE"
    FILTERED_BY_BITMAP = "FILTERED_BY_BITMAP"
    FILTERED_BY_SQL92 = "FILTERED_BY_SQL92"
    DROPPED_BY_CLIENT_RECHECK = "DROPPED_BY_CLIENT_RECHECK"
    NOT_SUBSCRIBED = "NOT_SUBSCRIBED"
    NO_CONSUMER = "NO_CONSUMER"
    EXPIRED = "EXPIRED"
    NOT_FOUND = "NOT_FOUND"

    def __str__(self) -> str:
        return self.value


_MEANING = {
    Verdict.CONSUMED: "consumed: delivered, and below the committed offset",
    Verdict.PENDING: "pending: not consumed yet, a pull from the committed offset will deliver it",
    Verdict.FILTERED_BY_TAG_CODE: "filtered by the broker's tag-code check",
    Verdict.FILTERED_BY_BITMAP: "filtered by the broker's bloom bitmap check",
    Verdict.FILTERED_BY_SQL92: "filtered by the broker's SQL92 selector",
    Verdict.DROPPED_BY_CLIENT_RECHECK: "delivered, then dropped by the client's exact tag re-check",
    Verdict.NOT_SUBSCRIBED: "never pulled with a subscription of its topic",
    Verdict.NO_CONSUMER: "no consumer owns its queue",
    Verdict.EXPIRED: "expired: retention removed it",
    Verdict.NOT_FOUND: "no such message in the store",
}


@dataclass(frozen=True)
class TraceStep:
    """One step of the path: ``name`` (``message``, ``owner``, ``subscription``, ``tag_code``,
    ``bitmap``, ``sql92``, ``pull``, ``client_recheck``, ``committed_offset``), ``passed``
    (True: the message went on; False: it stopped here; None: the step decides nothing),
    ``text`` (one line for a person) and ``seen`` (the values the step looked at)."""

    name: str
    passed: Optional[bool]
    text: str
    seen: Dict[str, object] = field(default_factory=dict)

    def __str__(self) -> str:
        mark = {True: "ok", False: "STOP", None: "--"}[self.passed]
        return f"[{mark:>4}] {self.name}: {self.text}"


@dataclass(frozen=True)
class MessageTrace:
    """One message's path for one consumer group. ``verdict`` (a :class:`Verdict`),
    ``client_id`` (the consumer concerned: its queue's owner that came closest to consuming it,
    or the one asked about; None without one), ``reason`` (``diagnose_group``'s lost reason,
    or None, see the module docstring), ``steps`` in order. ``str(trace)`` is the explanation."""

    group: str
    verdict: Verdict
    client_id: Optional[str]
    steps: Tuple[TraceStep, ...]
    reason: Optional[str] = None
    topic: Optional[str] = None
    queue_id: Optional[int] = None
    queue_offset: Optional[int] = None
    msg_id: Optional[str] = None

    def step(self, name: str) -> Optional[TraceStep]:
        """The step called ``name``, or None when the path did not reach it."""
        return next((s for s in self.steps if s.name == name), None)

    @property
    def deciding_step(self) -> Optional[TraceStep]:
        """The step that stopped the message (None when it was delivered)."""
        return next((s for s in self.steps if s.passed is False), None)

    def __str__(self) -> str:
        where = (f"{self.topic} queue {self.queue_id} offset {self.queue_offset}"
                 if self.queue_offset is not None else "the message")
        who = f", consumer {self.client_id}" if self.client_id else ""
        head = f"{where} for group {self.group}{who}: {self.verdict.value} ({_MEANING[self.verdict]})"
        lines = [head] + [f"  {i}. {s}" for i, s in enumerate(self.steps, 1)]
        return "\n".join(lines)
