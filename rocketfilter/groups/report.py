"""The text of ``str(diagnosis)``: who subscribes what, who owns which queues, what each consumes,
how many messages are lost and why, with an example of each, then the group's problems.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from rocketfilter.tags import SubscriptionData, is_tag_type

MAX_EXAMPLES = 8


def _sub(sub: Optional[SubscriptionData]) -> str:
    if sub is None:
        return "-"
    kind = "TAG" if is_tag_type(sub.expression_type) else sub.expression_type
    return f"{sub.sub_string!r} ({kind}, subVersion {sub.sub_version})"


def _queues(queues: Sequence) -> str:
    return ", ".join(str(q.queue_id) for q in queues) or "none"


def _table(rows: List[List[str]], indent: str = "  ") -> List[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


def _owner_of(group, topic: str, sub: SubscriptionData) -> str:
    """Whose subscription the table holds (the same expression and subVersion)."""
    for cid, consumer in group.consumers.items():
        own = consumer.subscriptions.get(topic)
        if own is not None and (own.sub_string, own.sub_version) == (sub.sub_string, sub.sub_version):
            return f"{cid}'s" + (", which left the group" if cid in group.departed else "")
    return "no current consumer's"


def render(d) -> str:
    g = d.group
    live = g.consumer_ids()
    head = (f"Consumer group {g.group}: {g.message_model}, {g.allocate_strategy.get_name()}, "
            f"{len(live)} consumer(s)" + (f", {len(g.departed)} left ({', '.join(g.departed)})" if g.departed else ""))
    lines = [head]
    if not live:
        lines.append("  no consumers: the broker knows no subscription of this group")
        return "\n".join(lines)
    lines.append(f"Subscriptions: {'consistent' if d.consistent else 'INCONSISTENT'}")
    rows = [[cid, t, _sub(g.subscription_of(cid, t)) + (" post" if g.consumer(cid).post_subscription_when_pull
                                                         and g.subscription_of(cid, t) else "")]
            for cid in live for t in d.topics]
    for t in d.topics:
        table = d.effective_subscriptions.get(t)
        rows.append(["group's table", t, "- (not in the table: pulls are refused)" if table is None
                     else f"{_sub(table)}, {_owner_of(g, t, table)}"])
    lines += _table(rows) if rows else []
    counts = d.counts()
    consumed = d.consumed_counts()
    for t in d.topics:
        plan = d.plans[t]
        messages = sum(n for (topic, _, _), (n, _) in counts["message"].items() if topic == t)
        lines.append(f"Topic {t}: {len(plan.queues)} queue(s), {messages} message(s)")
        rows = []
        for c in plan.consumers.values():
            if not c.subscribes:
                how = "does not subscribe it" + (f": its share, queues {_queues(c.orphaned)}, is consumed by nobody"
                                                 if c.orphaned else "")
            elif c.refusal is not None:
                how = f"pulls refused: {c.refusal}"
            elif not c.queues:
                how = "no queue"
            else:
                how = ("pulls with the group's table" if c.via_group_table else "pulls with its own subscription")
                got = sum(n for (topic, _, cid), (n, _) in counts["consumed"].items()
                          if topic == t and cid == c.client_id)
                how += f" {c.broker.sub_string!r}, consumes {got}"
            rows.append([c.client_id, f"queues {_queues(c.queues)}", how])
        lines += _table(rows)
        lost = sorted(((key, v) for key, v in counts["lost"].items() if key[0] == t),
                      key=lambda kv: (-kv[1][0], kv[0][1], kv[0][2] or ""))
        total = sum(n for _, (n, _) in lost)
        lines.append(f"  lost: {total} message(s)" + (":" if total else ""))
        rows = []
        for (topic, reason, cid), (n, example) in lost[:MAX_EXAMPLES]:
            q, offset, msg_id = example
            rows.append([reason, str(n), f"by {cid}" if cid else "no owner",
                         f"e.g. queue {q} offset {offset} msg_id {msg_id}"])
        lines += _table(rows, "    ") if rows else []
        if len(lost) > MAX_EXAMPLES:
            lines.append(f"    ... and {len(lost) - MAX_EXAMPLES} more (reason, consumer) pairs: see diagnosis.lost")
    notes = []
    for t, cids in d.flapping_topics.items():
        notes.append(f"{t} flaps in and out of the group's table: {', '.join(cids)} do(es) not subscribe it, so "
                     f"each of their heartbeats drops it")
    for t, cids in d.consumers_without_queues.items():
        notes.append(f"{', '.join(cids)} get(s) no queue of {t} (more consumers than queues?)")
    for t, queues in d.unconsumed_queues.items():
        notes.append(f"queues {_queues(queues)} of {t} are consumed by nobody")
    for t, refused in d.refusals.items():
        for cid, why in refused.items():
            notes.append(f"the broker refuses {cid}'s pulls of {t}: {why}")
    if d.missing_topics:
        notes.append(f"not in this store, not diagnosed: {', '.join(d.missing_topics)}")
    if notes:
        lines.append("Problems:")
        lines += [f"  - {n}" for n in notes]
    return "\n".join(lines)
