"""Consumer groups kept in the store: the ``consumer_groups`` table, one row per (group, consumer,
topic), holding what :meth:`ConsumerGroup.to_dict` holds (docs/storage.md has the columns).

A group gets there two ways: :func:`save_group` (a group built in Python or read from a group
file) and the Broker's heartbeats (:func:`record_heartbeat`, :func:`record_unregister`), so a
later job or notebook can load the group as its consumers left it and diagnose it.

This module builds on :mod:`rocketfilter.consumer` (plain Python, which never imports the store);
``replay_group`` and ``diagnose_group`` sit above both, in :mod:`rocketfilter.pull`.

The stored group keeps each consumer's latest subscriptions and the order of heartbeats, and
replaying that order must give the table the broker holds. A recorded heartbeat is checked
against it: the broker's table after the heartbeat is the stored group's table with this one
heartbeat applied (``ConsumerGroupInfo.updateSubscription``). The order is kept short: the table
depends only on each consumer's last heartbeat, in order, except when two subscriptions of a topic
tie on subVersion (the older stays), so earlier heartbeats of the same consumer are dropped
whenever the table comes out the same, and otherwise only a repeat of the previous heartbeat.
One history cannot be replayed from latest subscriptions: a consumer re-subscribing with a
subVersion no higher than its old one while the old one is still in the table (the broker's
clock never does that; explicit versions can). That heartbeat is recorded with a warning naming
the topic, and the stored table differs from the broker's there.

>>> save_group(store, group)                              # doctest: +SKIP
>>> load_group(store, "GID_orders").to_dict() == group.to_dict()   # doctest: +SKIP
True
"""
from __future__ import annotations

import json
import time
import warnings
from typing import Any, Dict, Iterable, List, Optional

from rocketfilter.consumer.group import ConsumerGroup
from rocketfilter.consumer.group_info import ConsumerGroupInfo
from rocketfilter.naming import validate_group
from rocketfilter.store import schema as S
from rocketfilter.store.tables import StoreTables
from rocketfilter.tags import SQL92, TAG, SubscriptionData, is_tag_type

Row = Dict[str, Any]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# -- a group as rows and back ----------------------------------------------------------------

def group_rows(group: ConsumerGroup, now: int) -> List[Row]:
    """The table's rows of ``group``: one per consumer and topic, in the group's order."""
    settings = {"group": group.group, "message_model": group.message_model,
                "allocate_strategy": json.dumps(group.allocate_strategy.to_config(), sort_keys=True),
                "consume_from_where": group.consume_from_where, "updated_at": now}
    order = group.heartbeats
    departed = set(group.departed)
    rows: List[Row] = []
    for cid, consumer in group.consumers.items():
        common = {**settings, "client_id": cid,
                  "heartbeats": [i for i, h in enumerate(order) if h == cid],
                  "consumer_sub_version": consumer.sub_version,
                  "post_subscription_when_pull": consumer.post_subscription_when_pull,
                  "unregistered": cid in departed}
        subs = list(consumer.subscriptions.values()) or [None]
        for sub in subs:
            rows.append({**common, "position": len(rows), "topic": getattr(sub, "topic", None),
                         "expression": getattr(sub, "sub_string", None),
                         "expression_type": getattr(sub, "expression_type", None),
                         "sub_version": getattr(sub, "sub_version", None)})
    if not rows:
        rows.append({**settings, "position": 0, "client_id": None, "heartbeats": None,
                     "consumer_sub_version": None, "post_subscription_when_pull": None,
                     "unregistered": None, "topic": None, "expression": None, "expression_type": None,
                     "sub_version": None})
    return rows


def rows_document(rows: List[Row]) -> Dict[str, Any]:
    """The group document (:mod:`rocketfilter.consumer.group_file`'s shape) of one group's rows."""
    rows = sorted(rows, key=lambda r: r["position"])
    first = rows[0]
    doc: Dict[str, Any] = {"group": first["group"], "messageModel": first["message_model"],
                           "allocateStrategy": json.loads(first["allocate_strategy"]),
                           "consumeFromWhere": first["consume_from_where"], "consumers": []}
    consumers: Dict[str, Dict[str, Any]] = {}
    order: Dict[int, str] = {}
    for r in rows:
        cid = r["client_id"]
        if cid is None:
            continue
        if cid not in consumers:
            consumers[cid] = {"clientId": cid, "subscriptions": {}, "subVersion": r["consumer_sub_version"],
                              "postSubscriptionWhenPull": bool(r["post_subscription_when_pull"]),
                              "unregistered": bool(r["unregistered"])}
            order.update({i: cid for i in r["heartbeats"] or ()})
        if r["topic"] is not None:
            consumers[cid]["subscriptions"][r["topic"]] = {
                "expression": r["expression"], "type": r["expression_type"], "subVersion": r["sub_version"]}
    doc["consumers"] = list(consumers.values())
    doc["heartbeats"] = [order[i] for i in sorted(order)]
    return doc


def _group_of(doc: Dict[str, Any], tables: StoreTables) -> ConsumerGroup:
    return ConsumerGroup.from_dict(doc, source=f"store {tables.uri}, {S.CONSUMER_GROUPS} table, "
                                               f"group {doc['group']!r}")


# -- the operations --------------------------------------------------------------------------

def list_groups(tables: StoreTables) -> List[str]:
    """The names of the groups in the store, sorted."""
    return sorted({r["group"] for r in tables.read_small(S.CONSUMER_GROUPS).select(["group"]).to_pylist()})


def load_group(tables: StoreTables, name: str) -> ConsumerGroup:
    """The group ``name`` as it was saved or as its consumers' heartbeats left it; ValueError
    naming the store's groups when it has none of that name."""
    validate_group(name)
    rows = [r for r in tables.read_small(S.CONSUMER_GROUPS).to_pylist() if r["group"] == name]
    if not rows:
        known = ", ".join(list_groups(tables)) or "none"
        raise ValueError(f"no consumer group {name!r} in store {tables.uri} (groups: {known}); save it with "
                         "save_group, or let its consumers heartbeat through a Broker on this store")
    return _group_of(rows_document(rows), tables)


def save_group(tables: StoreTables, group: ConsumerGroup) -> None:
    """Store ``group``, replacing what the store held under its name (one commit)."""
    if not isinstance(group, ConsumerGroup):
        raise ValueError(f"save_group takes a ConsumerGroup, got {type(group).__name__}")
    new = group_rows(group, _now_ms())   # a strategy that cannot be saved fails here, before writing
    tables.rewrite_small(S.CONSUMER_GROUPS, lambda rows: (
        [r for r in rows if r["group"] != group.group] + new, None))


def _choose_order(doc: Dict[str, Any], tables: StoreTables, expected: Dict[str, tuple]) -> None:
    """Set ``doc["heartbeats"]`` to the shortest candidate order that makes ``expected``, the
    broker's table (see the module doc); warn when none does."""
    order = doc["heartbeats"]
    last = order[-1]
    candidates = [[cid for i, cid in enumerate(order) if cid not in order[i + 1:]],
                  [cid for cid in order[:-1] if cid != last] + [last],
                  [cid for i, cid in enumerate(order) if i == 0 or order[i - 1] != cid]]
    for candidate in candidates:
        if _table(_group_of({**doc, "heartbeats": candidate}, tables)) == expected:
            doc["heartbeats"] = candidate
            return
    doc["heartbeats"] = candidates[-1]
    got = _table(_group_of(doc, tables))
    topics = sorted(t for t in set(got) | set(expected) if got.get(t) != expected.get(t))
    warnings.warn(f"group {doc['group']!r}: the stored group cannot replay the broker's table for topics "
                  f"{topics} (a consumer re-subscribed with a subVersion no higher than before)", stacklevel=4)


def _table_of(subscriptions: Dict[str, SubscriptionData]) -> Dict[str, tuple]:
    return {t: (s.sub_string, TAG if is_tag_type(s.expression_type) else s.expression_type, s.sub_version)
            for t, s in subscriptions.items()}


def _table(group: ConsumerGroup) -> Dict[str, tuple]:
    return _table_of(group.effective_subscriptions)


def _heartbeat_update(tables: StoreTables, rows: List[Row], group: str, client_id: str,
                      subscriptions: List[SubscriptionData], message_model: str, consume_from_where: str,
                      post: Optional[bool]) -> List[Row]:
    mine = [r for r in rows if r["group"] == group]
    doc = rows_document(mine) if mine else {"group": group, "consumers": [], "heartbeats": []}
    info = ConsumerGroupInfo(group, subscription_table=dict(_group_of(doc, tables).effective_subscriptions))
    info.update_subscription(subscriptions)
    expected = _table_of(info.subscription_table)
    doc["messageModel"], doc["consumeFromWhere"] = message_model, consume_from_where
    subs = {}
    for sub in subscriptions:
        kind = TAG if is_tag_type(sub.expression_type) else sub.expression_type
        if kind not in (TAG, SQL92):
            raise ValueError(f"group {group!r}, consumer {client_id!r}, topic {sub.topic!r}: expression type "
                             f"{sub.expression_type!r} cannot be recorded (only TAG and SQL92 filter)")
        subs[sub.topic] = {"expression": sub.sub_string, "type": kind, "subVersion": sub.sub_version}
    old = next((c for c in doc["consumers"] if c["clientId"] == client_id), None)
    versions = [s["subVersion"] for s in subs.values()]
    item = {"clientId": client_id, "subscriptions": subs,
            "subVersion": max(versions) if versions else (old or {}).get("subVersion") or _now_ms(),
            "postSubscriptionWhenPull": bool(post if post is not None else (old or {}).get("postSubscriptionWhenPull")),
            "unregistered": False}
    if old is None:
        doc["consumers"].append(item)
    else:
        doc["consumers"][doc["consumers"].index(old)] = item
    doc["heartbeats"] = list(doc["heartbeats"]) + [client_id]
    _choose_order(doc, tables, expected)
    return [r for r in rows if r["group"] != group] + group_rows(_group_of(doc, tables), _now_ms())


def _unregister_update(tables: StoreTables, rows: List[Row], group: str, client_id: str) -> List[Row]:
    mine = [r for r in rows if r["group"] == group]
    if not mine:
        return rows
    stored = _group_of(rows_document(mine), tables)
    if client_id not in stored.consumer_ids():
        return rows
    stored.remove_consumer(client_id)
    return [r for r in rows if r["group"] != group] + group_rows(stored, _now_ms())


def _apply(tables: StoreTables, change) -> bool:
    """Write ``change(rows) -> rows`` unless it changes nothing but times; True when written."""
    def content(rows: List[Row]) -> list:
        return sorted((tuple((k, json.dumps(v)) for k, v in sorted(r.items()) if k != "updated_at")
                       for r in rows))

    rows = tables.read_small(S.CONSUMER_GROUPS).to_pylist()
    if content(change(rows)) == content(rows):
        return False
    tables.rewrite_small(S.CONSUMER_GROUPS, lambda rows: (change(rows), None))
    return True


def record_heartbeat(tables: StoreTables, group: str, client_id: str, subscriptions: Iterable[SubscriptionData], *,
                     message_model: str = "CLUSTERING", consume_from_where: str = "CONSUME_FROM_LAST_OFFSET",
                     post_subscription_when_pull: Optional[bool] = None) -> bool:
    """One consumer heartbeat, as the Broker applies it: the consumer's subscriptions (each with
    its subVersion) replace its old ones, its heartbeat joins the group's heartbeat order, and
    the group takes the heartbeat's message model and consume-from-where (``updateChannel``). A
    new group gets the AVG strategy; a stored group keeps its own. ``post_subscription_when_pull``
    is not in RocketMQ's heartbeat (it is a pull flag); None keeps what is stored. True when the
    stored group changed."""
    subs = list(subscriptions)
    return _apply(tables, lambda rows: _heartbeat_update(tables, rows, group, client_id, subs, message_model,
                                                         consume_from_where, post_subscription_when_pull))


def record_unregister(tables: StoreTables, group: str, client_id: str) -> bool:
    """The consumer leaves (:meth:`ConsumerGroup.remove_consumer`); True when the stored group
    changed."""
    return _apply(tables, lambda rows: _unregister_update(tables, rows, group, client_id))
