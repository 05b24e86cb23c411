"""``explain_message``: why one message was, or was not, consumed by a consumer group, step by step.

The path is the one :func:`~rocketfilter.groups.replay.replay_group` and
:func:`~rocketfilter.groups.diagnosis.diagnose_group` follow for every message at once, here
for one message and told in order:

1. where it is (:mod:`.message_locate`), or that it expired or never existed;
2. which consumer owns its queue under the group's strategy (``plan_group_pulls``; every
   subscriber when BROADCASTING);
3. the group's effective subscription, the owner's own, and which one the broker filters the
   owner's pulls with (or why it refuses them);
4. the broker's checks of this message: the tag code against the subscription's codes, or for
   SQL92 the bloom bitmap (when the filter data has one) and the selector, explained by the
   reference evaluator on the message's properties (which conditions, which values);
5. the pulls from the committed offset (from the queue's min offset, as ``replay_group``, when
   the group has none or is past the message): ``getMessage``'s own reads (``read_window``: the
   filter's Columns, or the exact subscription bits) over this queue's slice, from the start to
   one pull window past the message, then the ``pull_sequence_arrays`` loop that
   ``replay_group`` runs per queue; the pull that reaches the message and whether it delivers it;
6. the client's exact tag re-check with the owner's own subscription;
7. the committed offset against the message's offset: CONSUMED below it, PENDING otherwise.

When several consumers own the queue (BROADCASTING, or the CONFIG strategy), the one that came
closest to consuming it is traced, in ``diagnose_group``'s order (:data:`LOST_REASONS`); when
BROADCASTING, one that wants the message and loses it comes first. ``client_id`` asks about one
consumer. See :mod:`.message_trace` for the verdicts and how they map to the lost reasons.

>>> trace = explain_message(store, "GID_orders", topic="OrderEvents", queue_id=1, queue_offset=7)  # doctest: +SKIP
>>> trace.verdict, trace.client_id                                                   # doctest: +SKIP
(<Verdict.DROPPED_BY_CLIENT_RECHECK: 'DROPPED_BY_CLIENT_RECHECK'>, '10.0.0.1@app')
>>> print(trace)                                                                     # doctest: +SKIP
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Dict, List, Optional, Union

from rocketfilter.checks import check_max_msg_nums
from rocketfilter.consumer.group import ConsumerGroup
from rocketfilter.pull import arrow_window
from rocketfilter.pull.arrow_window import arrow_reads
from rocketfilter.pull.batch import pull_sequence_arrays
from rocketfilter.pull.filter import CqExtUnit, ExpressionForRetryMessageFilter
from rocketfilter.pull.get_message import pull_limits
from rocketfilter.groups.outcomes import LOST_REASONS
from rocketfilter.groups.plan import ConsumerPulls, GroupPlan, plan_group_pulls, resolve_group
from rocketfilter.groups.message_locate import FOUND, LocatedMessage, locate_message
from rocketfilter.groups.message_trace import MessageTrace, TraceStep, Verdict
from rocketfilter.pull.scan import read_window, small_query_conf
from rocketfilter.selector import parse
from rocketfilter.store import schema as S
from rocketfilter.tags import client_accepts, is_matched_by_consume_queue, is_tag_type

V = Verdict
_REFUSED = {"SUBSCRIPTION_NOT_EXIST": V.NOT_SUBSCRIBED, "SUBSCRIPTION_NOT_LATEST": V.NOT_SUBSCRIBED,
            "FILTER_DATA_NOT_EXIST": V.FILTERED_BY_SQL92, "SYSTEM_ERROR": V.FILTERED_BY_SQL92}


@dataclass
class _Path:
    """One owner's path: its steps from the subscription on, its lost reason (None: delivered and
    kept) and verdict."""

    client_id: Optional[str]
    steps: List[TraceStep]
    reason: Optional[str]
    verdict: Verdict

    @property
    def rank(self) -> int:
        return 0 if self.reason is None else LOST_REASONS.index(self.reason) + 1


@dataclass
class _Pulls:
    """The pulls from ``start`` up to the one reaching the message."""

    start: int
    origin: str
    number: Optional[int] = None      # the pull reaching the message
    offset: Optional[int] = None      # where that pull began
    status: Optional[str] = None
    next_begin_offset: Optional[int] = None
    message_count: int = 0
    delivered: bool = False
    seen: Dict[str, object] = field(default_factory=dict)


def _time(ms: Optional[int]) -> str:
    if ms is None:
        return "?"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _message_step(m: LocatedMessage) -> TraceStep:
    seen = {k: getattr(m, k) for k in ("topic", "queue_id", "queue_offset", "commitlog_offset", "store_timestamp",
                                       "tags", "keys", "msg_id", "min_offset", "max_offset")}
    if m.status != FOUND:
        return TraceStep("message", False, f"{m.how}: {m.status}: {m.note}", {**seen, "status": m.status})
    text = (f"{m.topic} queue {m.queue_id} offset {m.queue_offset}, commit-log offset {m.commitlog_offset}, "
            f"stored {_time(m.store_timestamp)}, tags {m.tags!r}, msg_id {m.msg_id}"
            + ("" if m.how.startswith("topic ") else f" (found by {m.how})"))
    return TraceStep("message", True, text, seen)


def _sub_text(sub) -> str:
    if sub is None:
        return "nothing"
    return f"{sub.sub_string!r} ({'TAG' if is_tag_type(sub.expression_type) else sub.expression_type})"


def wants(sub, m: LocatedMessage) -> bool:
    """Whether ``sub`` itself would deliver the message (``outcomes.wants_column`` for one
    message): the tag code and exact tag checks, or the selector TRUE."""
    if is_tag_type(sub.expression_type):
        return is_matched_by_consume_queue(sub, m.tags_code) and client_accepts(sub, m.tags)
    try:
        return parse(sub.sub_string).matches(m.properties)
    except ValueError:
        return False


class _Tracer:
    """One message under one group's plan: each owner's path, pulls simulated once per filter."""

    def __init__(self, store, plan: GroupPlan, m: LocatedMessage, max_msg_nums: int):
        self.store, self.plan, self.m, self.max_msg_nums = store, plan, m, max_msg_nums
        self.committed = store.query_consumer_offset(plan.group.group, m.topic, m.queue_id)
        group = plan.group
        self.wanted_by = [cid for cid in group.consumer_ids()
                          if (s := group.subscription_of(cid, m.topic)) is not None and wants(s, m)]
        self._pulls: Dict[int, _Pulls] = {}

    # -- the owner's path --------------------------------------------------------------------
    def path(self, c: ConsumerPulls) -> _Path:
        group, m = self.plan.group, self.m
        table = group.effective_subscriptions.get(m.topic)
        seen = {"group_subscription": _sub_text(table), "own_subscription": _sub_text(c.client),
                "wanted_by": self.wanted_by}
        head = (f"the group's table holds {_sub_text(table)} for {m.topic}; "
                f"{c.client_id} subscribes {_sub_text(c.client)}")
        wanted = f"; wanted by {', '.join(seen['wanted_by']) or 'no consumer'}"
        if not c.subscribes:
            return _Path(c.client_id, [TraceStep("subscription", False, head + wanted + f": it never pulls "
                                                 f"{m.topic}, so nobody consumes queue {m.queue_id}", seen)],
                         "queue_not_consumed", V.NOT_SUBSCRIBED)
        if c.refusal is not None:
            step = TraceStep("subscription", False, head + wanted + f"; the broker refuses its pulls: {c.refusal} "
                             f"({c.remark})", {**seen, "refusal": c.refusal})
            return _Path(c.client_id, [step], "pull_refused", _REFUSED.get(c.refusal, V.NOT_SUBSCRIBED))
        how = "the group's table" if c.via_group_table else "its own subscription (post_subscription_when_pull)"
        steps = [TraceStep("subscription", True, head + f"; the broker filters its pulls with {how}, "
                           f"{_sub_text(c.broker)}" + wanted, {**seen, "broker_subscription": _sub_text(c.broker)})]
        filtered = "filtered_by_group_subscription" if c.via_group_table else "filtered_by_own_subscription"
        rejected = self._broker_checks(c, steps)
        if rejected is not None:
            return _Path(c.client_id, steps, filtered, rejected)
        pulls = self.pulls(c.filter_index)
        steps.append(self._pull_step(pulls))
        if not pulls.delivered:
            return _Path(c.client_id, steps, "skipped_by_broker", V.EXPIRED)
        kept = client_accepts(c.client, m.tags)
        own_tags = sorted(c.client.tags_set) if is_tag_type(c.client.expression_type) else None
        text = (f"the client keeps only tags {own_tags} of its own subscription: {m.tags!r} "
                f"{'is one' if kept else 'is not one'}" if own_tags else
                f"its own subscription {_sub_text(c.client)} has no tag set to re-check: kept")
        steps.append(TraceStep("client_recheck", kept, text, {"tags": m.tags, "tags_set": own_tags}))
        if not kept:
            return _Path(c.client_id, steps, "dropped_by_client_recheck", V.DROPPED_BY_CLIENT_RECHECK)
        steps.append(self._committed_step())
        return _Path(c.client_id, steps, None, V.CONSUMED if self.committed > m.queue_offset else V.PENDING)

    def _broker_checks(self, c: ConsumerPulls, steps: List[TraceStep]) -> Optional[Verdict]:
        """The broker filter's checks of the message, appended to ``steps``; the verdict of the
        one that rejects it, or None."""
        m, f = self.m, self.plan.filters[c.filter_index]
        sub = f.subscription_data
        if is_tag_type(sub.expression_type):
            ok = f.is_matched_by_consume_queue(m.tags_code)
            codes = "every tag ('*')" if sub.is_sub_all else f"codes {sorted(sub.code_set)} of {sorted(sub.tags_set)}"
            steps.append(TraceStep("tag_code", ok, f"tags {m.tags!r} has hash code {m.tags_code}; the subscription "
                                   f"takes {codes}: {'a match' if ok else 'no match'}",
                                   {"tags_code": m.tags_code, "subscription_codes": sorted(sub.code_set)}))
            return None if ok else V.FILTERED_BY_TAG_CODE
        fd = f.consumer_filter_data
        if f.uses_bitmap:
            ok = f.is_matched_by_consume_queue(m.tags_code, CqExtUnit(m.tags_code, m.store_timestamp, m.filter_bitmap))
            bits = fd.bloom_filter_data
            size = "none" if m.filter_bitmap is None else f"{len(m.filter_bitmap) * 8} bits"
            steps.append(TraceStep("bitmap", ok, f"the ConsumeQueue bitmap ({size}) against the group's bit positions "
                                   f"{list(bits.bit_pos)}: {'may match' if ok else 'a bit is missing'}",
                                   {"bit_pos": list(bits.bit_pos), "bitmap": m.filter_bitmap}))
            if not ok:
                return V.FILTERED_BY_BITMAP
        ok = f.is_matched_by_commit_log(m.properties)
        steps.append(self._sql_step(f, fd, ok))
        return None if ok else V.FILTERED_BY_SQL92

    def _sql_step(self, f, fd, ok: bool) -> TraceStep:
        m, sub = self.m, f.subscription_data
        if fd is None or fd.compiled is None:
            return TraceStep("sql92", ok, f"{sub.sub_string!r} does not compile: the broker matches every message "
                             "(RocketMQ's pull with its own subscription)", {"result": None})
        if isinstance(f, ExpressionForRetryMessageFilter) and m.topic.startswith("%RETRY%"):
            return TraceStep("sql92", ok, f"a retry message, judged by its group's filter on its RETRY_TOPIC "
                             f"{m.properties.get('RETRY_TOPIC')!r}: {'TRUE' if ok else 'not TRUE'}", {"result": ok})
        explained = fd.compiled.explain(m.properties)
        deciding = [{"condition": d.text, "operator": d.operator, "result": d.result, "properties": d.properties,
                     "error": d.error} for d in explained.deciding]
        return TraceStep("sql92", ok, f"{sub.sub_string!r} on its properties is {explained}",
                         {"result": explained.result, "deciding": deciding, "error": explained.error})

    # -- the pulls ---------------------------------------------------------------------------
    def pulls(self, filter_index: int) -> _Pulls:
        """The pulls with filter ``filter_index`` from the committed offset (or the queue's min
        offset, as replay_group) to the message: one Spark job over the queue's slice."""
        if filter_index in self._pulls:
            return self._pulls[filter_index]
        store, plan, m, q = self.store, self.plan, self.m, self.m.queue_id
        lo, hi = plan.bounds[q]
        if 0 <= self.committed <= m.queue_offset:
            out = _Pulls(self.committed, f"the committed offset {self.committed}")
        else:
            past = (f"the committed offset {self.committed} is past the message" if self.committed >= 0
                    else "the group has no committed offset here")
            out = _Pulls(plan.starts[q], f"the queue's min offset {plan.starts[q]}, as replay_group: {past}")
        limits = pull_limits(store.config)
        f = plan.filters[filter_index]
        end = min(m.queue_offset + max(1, limits.window_entries(self.max_msg_nums)), hi)
        commitlog = store.commitlog_state()
        # getMessage's reads (one job, two with a bitmap), over the slice the pulls can reach.
        arrow = arrow_reads(store)
        reader = arrow_window.read_window if arrow else read_window
        with (nullcontext() if arrow else small_query_conf(store.spark)), \
                store.reading(S.COMMITLOG, S.CONSUMEQUEUE):
            scan = reader(store, m.topic, q, max(out.start, lo), end, f)
            present = scan.positions >= commitlog.min_commitlog_offset
            cl_match = scan.commit_log_matches(store, scan.cq_match & present, f)
        qo = scan.queue_offsets
        seq = pull_sequence_arrays(qo, scan.positions, scan.sizes, scan.cq_match, present, cl_match,
                                   start_offset=out.start, end_offset=m.queue_offset + 1,
                                   max_msg_nums=self.max_msg_nums, min_offset=lo, max_offset=hi,
                                   max_offset_py=commitlog.next_commitlog_offset, limits=limits)
        for k, (begin, res) in enumerate(zip(seq.pull_offsets, seq.pulls)):
            if begin <= m.queue_offset < res.next_begin_offset:
                out.number, out.offset, out.status = k, begin, res.status.value
                out.next_begin_offset, out.message_count = res.next_begin_offset, res.message_count
        delivered = qo[seq.entry_index] == m.queue_offset
        out.delivered = bool(delivered.any())
        out.seen = {"start": out.start, "pulls": len(seq.pulls), "pull_number": out.number, "pull_offset": out.offset,
                    "pull_status": out.status, "next_begin_offset": out.next_begin_offset,
                    "message_count": out.message_count, "delivered": out.delivered}
        self._pulls[filter_index] = out
        return out

    def _pull_step(self, p: _Pulls) -> TraceStep:
        if p.number is None:
            return TraceStep("pull", False, f"the pulls from {p.origin} stop before reaching it", p.seen)
        text = (f"pull #{p.number} from offset {p.offset} (pulls from {p.origin}): {p.status}, "
                f"{p.message_count} message(s), next_begin_offset {p.next_begin_offset}; ")
        text += ("it carries this message" if p.delivered else
                 "it passes over this message: its commit-log file is being removed (MESSAGE_WAS_REMOVING)")
        return TraceStep("pull", p.delivered, text, p.seen)

    def _committed_step(self) -> TraceStep:
        m, c = self.m, self.committed
        seen = {"committed_offset": c, "queue_offset": m.queue_offset}
        if c > m.queue_offset:
            return TraceStep("committed_offset", None, f"the group's committed offset of queue {m.queue_id} is {c} > "
                             f"{m.queue_offset}: consumed", seen)
        local = (" (BROADCASTING consumers keep their offsets locally)"
                 if self.plan.group.message_model == "BROADCASTING" else "")
        where = f"is {c} <= {m.queue_offset}" if c >= 0 else "is not set (-1)" + local
        return TraceStep("committed_offset", None, f"the group's committed offset of queue {m.queue_id} {where}: "
                         "not consumed yet", seen)


def _owner_step(plan: GroupPlan, m: LocatedMessage, owners: List[ConsumerPulls], asked: Optional[str]) -> TraceStep:
    group = plan.group
    ids = [c.client_id for c in owners]
    if group.message_model == "BROADCASTING":
        text = f"BROADCASTING: every subscriber pulls every queue: {', '.join(ids) or 'none'}"
    else:
        text = (f"{group.allocate_strategy.get_name()} over {len(group.consumer_ids())} consumer(s) gives queue "
                f"{m.queue_id} of {m.topic} to {', '.join(ids) or 'no consumer'}")
    if asked is not None and asked not in ids:
        mine = [q.queue_id for q in plan.consumers[asked].queues]
        text += f"; {asked} does not own it (its queues: {mine or 'none'})"
    return TraceStep("owner", bool(owners), text, {"owners": ids, "strategy": group.allocate_strategy.get_name(),
                                                   "message_model": group.message_model})


def _choose(paths: List[_Path], wanting: List[str], broadcasting: bool) -> _Path:
    lost = [p for p in paths if p.rank > 0 and p.client_id in wanting] if broadcasting else []
    return min(lost or paths, key=lambda p: (p.rank, p.client_id or ""))


def explain_message(store, group: Union[ConsumerGroup, str], *, msg_id: Optional[str] = None,
                    key: Optional[str] = None, topic: Optional[str] = None, queue_id: Optional[int] = None,
                    queue_offset: Optional[int] = None, client_id: Optional[str] = None,
                    max_msg_nums: int = 32) -> MessageTrace:
    """The path of one message for ``group`` (a ``ConsumerGroup`` or the name of one stored in
    ``store``): give ``msg_id`` (an offset msgId, or the client's ``UNIQ_KEY``), ``key`` (with
    an optional ``topic``), or ``topic``, ``queue_id`` and ``queue_offset``. ``client_id``
    traces that consumer; ``max_msg_nums`` is the pulls' batch size, as ``replay_group``'s.

    Returns a :class:`~rocketfilter.groups.message_trace.MessageTrace`: ``verdict``,
    ``client_id``, ``reason`` (``diagnose_group``'s), the ``steps``; ``str(trace)`` explains.
    ValueError for bad arguments, an unknown group, topic, queue or consumer.
    """
    check_max_msg_nums(max_msg_nums)
    group = resolve_group(store, group)
    if client_id is not None and client_id not in group.consumer_ids():
        raise ValueError(f"consumer {client_id!r} is not in group {group.group!r} "
                         f"(consumers: {', '.join(group.consumer_ids()) or 'none'})")
    m = locate_message(store, msg_id=msg_id, key=key, topic=topic, queue_id=queue_id, queue_offset=queue_offset)
    steps = [_message_step(m)]
    trace = dict(group=group.group, topic=m.topic, queue_id=m.queue_id, queue_offset=m.queue_offset, msg_id=m.msg_id)
    if m.status != FOUND:
        return MessageTrace(verdict=Verdict(m.status), client_id=client_id, steps=tuple(steps), **trace)
    plan = plan_group_pulls(store, group, m.topic)
    tracer = _Tracer(store, plan, m, max_msg_nums)
    owners = [c for c in plan.consumers.values() if m.queue_id in {q.queue_id for q in (c.queues or c.orphaned)}]
    steps.append(_owner_step(plan, m, owners, client_id))
    if client_id is not None and (client_id in {c.client_id for c in owners}
                                  or not plan.consumers[client_id].subscribes):
        owners = [plan.consumers[client_id]]   # its own path; one not subscribing the topic: NOT_SUBSCRIBED
    if not owners:
        step = TraceStep("subscription", False, f"nobody pulls queue {m.queue_id} of {m.topic}", {})
        return MessageTrace(verdict=V.NO_CONSUMER, client_id=None, steps=tuple(steps + [step]),
                            reason="queue_not_consumed", **trace)
    paths = [tracer.path(c) for c in owners]
    chosen = _choose(paths, tracer.wanted_by, group.message_model == "BROADCASTING")
    return MessageTrace(verdict=chosen.verdict, client_id=chosen.client_id, steps=tuple(steps + chosen.steps),
                        reason=chosen.reason, **trace)
