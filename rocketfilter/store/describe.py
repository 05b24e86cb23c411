"""What is in a store, as plain data (dicts and lists), read on the driver without Spark: what
``mqadmin topicList``, ``topicStatus`` and ``consumerProgress`` show a broker's users.

* :func:`topic_status`: each topic's queues with their min and max offset, message count and the
  store times of their first and last message. The offsets are the ConsumeQueue's high-water
  marks (its commit metadata); the store times are read from the one or two row groups the Delta
  files' statistics and the parquet footers point at (:class:`~.cq_units.QueueUnits`).
* :func:`group_progress`: a consumer group's committed offset, min, max and lag per queue, the
  lag as ``consumerProgress`` computes its Diff (max offset minus committed, from 0 when none).
* :func:`describe`: the settings, the tables, the topics, the stored consumer groups with their
  subscriptions and progress, the promoted properties and the registered subscriptions; with a
  topic, the most frequent property keys of a bounded sample and the kinds of value they hold.

>>> describe(store)["topics"][0]["queues"][0]                       # doctest: +SKIP
{'queue_id': 0, 'min_offset': 0, 'max_offset': 4, 'messages': 4, 'first_store_time': ..., ...}
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

from rocketfilter.store import schema as S
from rocketfilter.store.cq_units import EXPIRED, QueueUnits
from rocketfilter.store.groups import list_groups, load_group
from rocketfilter.store.offsets import consumer_offsets
from rocketfilter.store.sample import DEFAULT_LIMIT, KINDS, sample_properties
from rocketfilter.store.sub_bits import registrations
from rocketfilter.store.tables import StoreTables
from rocketfilter.store.topics import topics as topic_configs

DEFAULT_TOP_PROPERTIES = 20


def _queue_ids(tables: StoreTables, topic: str, config) -> List[int]:
    """The topic's read queues, and any queue the ConsumeQueue holds beyond them."""
    held = tables.consumequeue_state().queues.get(topic, {})
    return sorted(set(range(config.read_queue_nums if config is not None else 0)) | set(held))


def _queue(tables: StoreTables, topic: str, queue_id: int) -> Dict[str, Any]:
    units = QueueUnits(tables, topic, queue_id)
    lo, hi = units.min_offset, units.max_offset
    first = last = None
    if hi > lo:
        first, last = units.store_time(lo), units.store_time(hi - 1)
    return {"queue_id": queue_id, "min_offset": lo, "max_offset": hi, "messages": hi - lo,
            "first_store_time": None if first in (None, EXPIRED) else first,
            "last_store_time": None if last in (None, EXPIRED) else last}


def topic_status(tables: StoreTables, topic: Optional[str] = None) -> List[Dict[str, Any]]:
    """Every topic (or only ``topic``), sorted by name: its config, its queues (see the module
    doc) and the totals. A topic the topics table lacks but the ConsumeQueue holds (made by an
    import of queues only) is listed too. ValueError naming the topics when ``topic`` is unknown.

    >>> topic_status(store, "Orders")[0]["messages"]                   # doctest: +SKIP
    12
    """
    configs = topic_configs(tables)
    names = sorted(set(configs) | set(tables.consumequeue_state().queues))
    if topic is not None:
        if topic not in names:
            raise ValueError(f"topic {topic!r} does not exist in store {tables.uri} "
                             f"(topics: {', '.join(names) or 'none'})")
        names = [topic]
    out = []
    for name in names:
        config = configs.get(name)
        queues = [_queue(tables, name, q) for q in _queue_ids(tables, name, config)]
        firsts = [q["first_store_time"] for q in queues if q["first_store_time"] is not None]
        lasts = [q["last_store_time"] for q in queues if q["last_store_time"] is not None]
        out.append({
            "topic": name,
            "read_queue_nums": config.read_queue_nums if config else None,
            "write_queue_nums": config.write_queue_nums if config else None,
            "perm": config.perm if config else None,
            "topic_filter_type": config.topic_filter_type if config else None,
            "messages": sum(q["messages"] for q in queues),
            "first_store_time": min(firsts) if firsts else None,
            "last_store_time": max(lasts) if lasts else None,
            "queues": queues,
        })
    return out


def group_progress(tables: StoreTables, group: str, topic: Optional[str] = None) -> List[Dict[str, Any]]:
    """``{"topic", "queue_id", "committed" (None when none), "min_offset", "max_offset", "lag"}``
    per queue of ``topic`` (default: every topic ``group`` committed an offset on or, when it is
    stored, subscribes); empty when there is none."""
    committed = consumer_offsets(tables, group, topic)
    configs = topic_configs(tables)
    state = tables.consumequeue_state()
    names = [topic] if topic is not None else sorted({t for _, t, _ in committed} | subscribed_topics(tables, group))
    rows = []
    for name in names:
        config = configs.get(name)
        queues = set(range(config.read_queue_nums)) if config is not None else set()
        queues |= {q for _, t, q in committed if t == name}
        for q in sorted(queues):
            lo, hi = state.offsets(name, q) or (0, 0)
            offset = committed.get((group, name, q))
            rows.append({"topic": name, "queue_id": q, "committed": offset, "min_offset": lo,
                         "max_offset": hi, "lag": max(0, hi - (offset or 0))})
    return rows


def subscribed_topics(tables: StoreTables, group: str) -> set:
    """The topics the stored group's consumers subscribe (none when it is not stored)."""
    rows = tables.read_small(S.CONSUMER_GROUPS).select(["group", "topic"]).to_pylist()
    return {r["topic"] for r in rows if r["group"] == group and r["topic"] is not None}


def _group(tables: StoreTables, name: str, stored: bool) -> Dict[str, Any]:
    out: Dict[str, Any] = {"group": name, "stored": stored}
    if stored:
        group = load_group(tables, name)
        out.update(message_model=group.message_model, consume_from_where=group.consume_from_where,
                   allocate_strategy=group.allocate_strategy.to_config(),
                   consumers=[{"client_id": cid, "subscriptions": [
                       {"topic": sub.topic, "expression": sub.sub_string, "expression_type": sub.expression_type,
                        "sub_version": sub.sub_version} for sub in consumer.subscriptions.values()]}
                       for cid, consumer in group.consumers.items()])
    progress = group_progress(tables, name)
    out["offsets"] = progress
    out["lag"] = sum(r["lag"] for r in progress)
    return out


def property_kinds(tables: StoreTables, topic: str, sample: int = DEFAULT_LIMIT,
                   top: int = DEFAULT_TOP_PROPERTIES) -> Dict[str, Any]:
    """The ``top`` most frequent property keys of the topic's newest ``sample`` messages, each
    with how many carry it and how many of its values are of each kind (``int``, ``double``,
    ``boolean``, ``nan``, ``infinity``, ``other``: :func:`~.sample.value_kind`) and a few values."""
    found = sample_properties(tables, topic, sample)
    ranked = sorted(found.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return {"topic": topic, "sampled_messages": found.messages, "row_groups_read": found.row_groups_read,
            "properties": [{"name": name, "messages": count,
                            "kinds": {k: found.kinds.get(name, {}).get(k, 0) for k in KINDS},
                            "values": found.values.get(name, [])[:5]} for name, count in ranked]}


def _tables(tables: StoreTables) -> Dict[str, Any]:
    out = {}
    for name in S.TABLES:
        table = tables.table(name)
        files = table.files()
        out[name] = {"version": table.version(), "files": len(files),
                     "rows": sum(f.num_records for f in files) if all(f.num_records >= 0 for f in files) else None,
                     "bytes": sum(f.size for f in files)}
    return out


def describe(tables: StoreTables, topic: Optional[str] = None, *, sample: int = DEFAULT_LIMIT,
             top: int = DEFAULT_TOP_PROPERTIES) -> Dict[str, Any]:
    """The store as plain data (``json.dumps`` takes it): ``uri``, ``settings`` (the store's and
    the broker's, as this handle was opened with), ``commitlog`` (its min and next offset and how
    far the ConsumeQueue is dispatched), ``tables`` (version, files, rows, bytes), ``topics``
    (:func:`topic_status`), ``groups`` (each stored group, or group with committed offsets, with
    its consumers' subscriptions and :func:`group_progress`), ``promoted_properties`` (property ->
    column), ``registered_subscriptions`` (topic -> group -> the subscription kept as bits), and
    with ``topic``, ``properties`` (:func:`property_kinds` of a ``sample`` of its newest messages).

    >>> info = describe(store, "Orders")                                # doctest: +SKIP
    >>> [p["name"] for p in info["properties"]["properties"]][:2]      # doctest: +SKIP
    ['amount', 'region']
    """
    status = topic_status(tables, topic)
    commitlog = tables.commitlog_state()
    stored = set(list_groups(tables))
    with_offsets = {g for g, _, _ in consumer_offsets(tables)}
    out: Dict[str, Any] = {
        "uri": tables.uri,
        "settings": {"store": dataclasses.asdict(tables.config),
                     "broker": dataclasses.asdict(tables.broker_config)},
        "commitlog": {"min_offset": commitlog.min_commitlog_offset,
                      "next_offset": commitlog.next_commitlog_offset,
                      "dispatched": tables.consumequeue_state().dispatched},
        "tables": _tables(tables),
        "topics": status,
        "groups": [_group(tables, g, g in stored) for g in sorted(stored | with_offsets)],
        "promoted_properties": dict(sorted(tables.promoted_properties().items())),
        "registered_subscriptions": registrations(tables),
    }
    if topic is not None:
        out["properties"] = property_kinds(tables, topic, sample, top)
    return out
