"""A broker's ``config/*.json`` files and a store: apply them to it, write its own back.

Reading and checking the files is :mod:`rocketfilter.broker_files.config_files` (their bytes);
here :func:`read_broker_config` adds the check of ``consumerFilter.json``'s SQL92 filter data
against the store's bloom settings. :func:`apply_broker_config` upserts the topics and committed
offsets into the store's tables and merges the subscription groups and filter data into the
store's own ``config/`` files (which is where a store keeps them, as a broker does).
:func:`export_broker_config` writes a store's state in the same shapes.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

# The file names, the errors and the fastjson text are re-exported: callers import them from here.
from rocketfilter.broker_files.config_files import (CONFIG_FILES, CONSUMER_FILTER, CONSUMER_OFFSET,  # noqa: F401
                                                    SUBSCRIPTION_GROUP, TOPICS, BrokerConfigFiles,
                                                    ConfigFileError, dumps_fastjson, loads_fastjson,
                                                    subscription_group_config)
from rocketfilter.broker_files.config_files import read_broker_config as _read_files
from rocketfilter.broker_files.import_parse import _filesystem
from rocketfilter.config import SubscriptionGroupConfig
from rocketfilter.store import schema as S
from rocketfilter.store.filter_data import ConsumerFilterManager
from rocketfilter.store.offsets import commit_consumer_offsets, consumer_offsets
from rocketfilter.store.tables import StoreTables
from rocketfilter.store.topics import topics


@dataclass
class ConfigImportReport:
    """What the import did with each config file."""

    imported: Dict[str, str] = field(default_factory=dict)  # file -> what it brought
    skipped: Dict[str, str] = field(default_factory=dict)   # file -> why it was left out

    def lines(self) -> List[str]:
        return ([f"{name}: {what}" for name, what in self.imported.items()]
                + [f"{name}: skipped: {why}" for name, why in self.skipped.items()])


def _data_version() -> dict:
    return {"counter": 0, "stateVersion": 0, "timestamp": int(time.time() * 1000)}


def _filter_checker(broker_config):
    """``check_filter`` for :func:`rocketfilter.broker_files.config_files.read_broker_config`: the
    filter data decoded as the store's ConsumerFilterManager would (ValueError when it cannot)."""
    def check(name: str, text: str) -> str:
        manager = ConsumerFilterManager(broker_config, clock=lambda: 0)
        usable = manager.decode(text)
        count = sum(len(manager.filter_datas(t)) for t in manager.topics())
        return (f"filter data of {count} group/topic pairs" if usable else
                "kept as it is, but its bloom filter differs from this store's (maxErrorRateOfBloomFilter, "
                "expectConsumerNumUseFilter), so it is ignored as a broker ignores it")
    return check


def read_broker_config(path: str, *, skip_damaged: bool = False, broker_config=None) -> BrokerConfigFiles:
    """The config files of the broker store at ``path`` (its ``config/`` directory, else beside
    ``commitlog/``), checked (the filter data with ``broker_config``'s bloom settings);
    ConfigFileError for a malformed one unless ``skip_damaged``."""
    return _read_files(path, skip_damaged=skip_damaged, check_filter=_filter_checker(broker_config))


def apply_broker_config(tables: StoreTables, files: BrokerConfigFiles) -> ConfigImportReport:
    """Upsert the topics and offsets into the store, merge the groups and filter data into its
    ``config/`` files; the imported entries win over the store's own."""
    report = ConfigImportReport(skipped=dict(files.skipped))
    if TOPICS in files.found:
        rows = {t: {"topic": t, "read_queue_nums": c.read_queue_nums, "write_queue_nums": c.write_queue_nums,
                    "perm": c.perm, "topic_filter_type": c.topic_filter_type, "updated_at": int(time.time() * 1000)}
                for t, c in files.topics.items()}
        tables.rewrite_small(S.TOPICS, lambda old: (
            [r for r in old if r["topic"] not in rows] + list(rows.values()), None))
        report.imported[TOPICS] = f"{len(rows)} topics (from {files.found[TOPICS]})"
    if CONSUMER_OFFSET in files.found:
        commit_consumer_offsets(tables, [(g, t, q, o) for (g, t, q), o in files.offsets.items()])
        groups = len({g for g, _, _ in files.offsets})
        report.imported[CONSUMER_OFFSET] = (f"{len(files.offsets)} committed offsets of {groups} groups "
                                            f"(from {files.found[CONSUMER_OFFSET]})")
    if SUBSCRIPTION_GROUP in files.found:
        body = _stored_json(tables, SUBSCRIPTION_GROUP) or {"dataVersion": _data_version(), "forbiddenTable": {}}
        body.setdefault("subscriptionGroupTable", {}).update(files.subscription_groups)
        tables.write_config(SUBSCRIPTION_GROUP, dumps_fastjson(body))
        report.imported[SUBSCRIPTION_GROUP] = (f"{len(files.subscription_groups)} subscription groups "
                                               f"(from {files.found[SUBSCRIPTION_GROUP]})")
    if CONSUMER_FILTER in files.found:
        body = _stored_json(tables, CONSUMER_FILTER) or {}
        for topic, entry in (loads_fastjson(files.filter_text).get("filterDataByTopic") or {}).items():
            mine = body.setdefault("filterDataByTopic", {}).setdefault(topic, {"topic": topic, "groupFilterData": {}})
            mine.setdefault("groupFilterData", {}).update((entry or {}).get("groupFilterData") or {})
        tables.write_config(CONSUMER_FILTER, json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True))
        tables._filter_manager = None   # the store's manager re-reads the merged file
        report.imported[CONSUMER_FILTER] = f"SQL92 filter data (from {files.found[CONSUMER_FILTER]})"
    return report


def _stored_json(tables: StoreTables, name: str) -> Optional[dict]:
    text = tables.read_config(name)
    return loads_fastjson(text) if text and text.strip() else None


def subscription_groups(tables: StoreTables) -> Dict[str, SubscriptionGroupConfig]:
    """The subscription groups the store keeps (``config/subscriptionGroup.json``)."""
    body = _stored_json(tables, SUBSCRIPTION_GROUP) or {}
    return {g: subscription_group_config(g, e) for g, e in (body.get("subscriptionGroupTable") or {}).items()}


def export_broker_config(tables: StoreTables, directory: str) -> List[str]:
    """Write the store's topics, committed offsets, subscription groups and filter data as a
    broker's ``<directory>/config/*.json``; return the paths written."""
    filesystem, root = _filesystem(directory)
    filesystem.create_dir(f"{root}/config", recursive=True)
    offsets: Dict[str, Dict[int, int]] = {}
    for (group, topic, queue), offset in consumer_offsets(tables).items():
        offsets.setdefault(f"{topic}@{group}", {})[queue] = offset
    group_topics: Dict[str, List[str]] = {}
    for key in offsets:
        topic, group = key.split("@")
        group_topics.setdefault(group, []).append(topic)
    texts = {
        CONSUMER_OFFSET: dumps_fastjson({"dataVersion": _data_version(), "groupTopicMap": group_topics,
                                         "offsetTable": offsets}),
        TOPICS: dumps_fastjson({"dataVersion": _data_version(), "topicConfigTable": {
            t: {"attributes": {}, "order": c.order, "perm": c.perm, "readQueueNums": c.read_queue_nums,
                "topicFilterType": c.topic_filter_type, "topicName": t, "topicSysFlag": c.topic_sys_flag,
                "writeQueueNums": c.write_queue_nums} for t, c in topics(tables).items()}}),
        SUBSCRIPTION_GROUP: dumps_fastjson(_stored_json(tables, SUBSCRIPTION_GROUP) or {
            "dataVersion": _data_version(), "forbiddenTable": {}, "subscriptionGroupTable": {}}),
        CONSUMER_FILTER: tables.read_config(CONSUMER_FILTER) or tables.filter_manager.encode(pretty=True),
    }
    written = []
    for name, text in texts.items():
        with filesystem.open_output_stream(f"{root}/config/{name}") as f:
            f.write(text.encode("utf-8"))
        written.append(f"{root}/config/{name}")
    return written
