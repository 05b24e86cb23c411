"""A broker's ``config/*.json`` files: read and check them, apply them to a store, write them back.

A broker keeps its metadata under ``<storePathRootDir>/config/`` (``BrokerPathConfigHelper``),
beside ``commitlog/`` and ``consumequeue/``, as fastjson text:

=======================  =======================================================================
consumerOffset.json      ``offsetTable``: ``"topic@group" -> {queueId: offset}`` (the queue ids are
                         bare numbers, which strict JSON refuses; they are read either way)
topics.json              ``topicConfigTable``: topic -> TopicConfig
subscriptionGroup.json   ``subscriptionGroupTable``: group -> SubscriptionGroupConfig
consumerFilter.json      ``filterDataByTopic``: SQL92 filter data with bloom bits
=======================  =======================================================================

:func:`read_broker_config` finds them in ``config/`` (or right beside ``commitlog/``), falling
back to ``<name>.bak`` for a missing or empty file as ``ConfigManager.load`` does, and checks
every entry: a malformed file raises :class:`ConfigFileError` naming the file and what is wrong,
or with ``skip_damaged`` is left out and reported. :func:`apply_broker_config` upserts the
topics and committed offsets into the store's tables and merges the subscription groups and
filter data into the store's own ``config/`` files (which is where a store keeps them, as a
broker does). :func:`export_broker_config` writes a store's state in the same shapes.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from rocketfilter.config import SubscriptionGroupConfig, TopicConfig
from rocketfilter.naming import validate_group, validate_topic
from rocketfilter.store import schema as S
from rocketfilter.store.filter_data import CONFIG_FILE_NAME as CONSUMER_FILTER, ConsumerFilterManager
from rocketfilter.store.import_parse import _filesystem
from rocketfilter.store.offsets import commit_consumer_offsets, consumer_offsets
from rocketfilter.store.tables import StoreTables
from rocketfilter.store.topics import MAX_QUEUE_NUMS, topics

CONSUMER_OFFSET = "consumerOffset.json"
TOPICS = "topics.json"
SUBSCRIPTION_GROUP = "subscriptionGroup.json"
CONFIG_FILES = (TOPICS, SUBSCRIPTION_GROUP, CONSUMER_OFFSET, CONSUMER_FILTER)
_BARE_KEY = re.compile(r"(\s*)(-?[0-9]+)(\s*):")
_GROUP_FIELDS = {  # SubscriptionGroupConfig's JSON names and kinds
    "consumeEnable": bool, "consumeFromMinEnable": bool, "consumeBroadcastEnable": bool,
    "consumeMessageOrderly": bool, "retryQueueNums": int, "retryMaxTimes": int, "brokerId": int,
    "whichBrokerWhenConsumeSlowly": int, "notifyConsumerIdsChangedEnable": bool, "groupSysFlag": int}


class ConfigFileError(ValueError):
    """A broker config file that is not what a broker writes; one line naming the file."""

    def __init__(self, file: str, reason: str):
        self.file, self.reason = file, reason
        super().__init__(f"{file}: {reason}")


@dataclass
class BrokerConfigFiles:
    """The checked content of a broker's config files (absent ones stay empty)."""

    topics: Dict[str, TopicConfig] = field(default_factory=dict)
    offsets: Dict[Tuple[str, str, int], int] = field(default_factory=dict)   # (group, topic, queue)
    subscription_groups: Dict[str, dict] = field(default_factory=dict)      # group -> its JSON entry
    filter_text: Optional[str] = None
    found: Dict[str, str] = field(default_factory=dict)     # file -> where it was read
    skipped: Dict[str, str] = field(default_factory=dict)   # file -> why it was left out


@dataclass
class ConfigImportReport:
    """What the import did with each config file."""

    imported: Dict[str, str] = field(default_factory=dict)  # file -> what it brought
    skipped: Dict[str, str] = field(default_factory=dict)   # file -> why it was left out

    def lines(self) -> List[str]:
        return ([f"{name}: {what}" for name, what in self.imported.items()]
                + [f"{name}: skipped: {why}" for name, why in self.skipped.items()])


# --- fastjson text ------------------------------------------------------------------------------
def loads_fastjson(text: str) -> Any:
    """Parse fastjson's output: JSON, except that maps keyed by numbers have bare number keys
    (``{0:250,1:251}``). Strings are left alone."""
    out, i, n, in_string = [], 0, len(text), False
    while i < n:
        c = text[i]
        out.append(c)
        i += 1
        if in_string:
            if c == "\\" and i < n:
                out.append(text[i])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{,":
            m = _BARE_KEY.match(text, i)
            if m:
                out.append(f'{m.group(1)}"{m.group(2)}"{m.group(3)}:')
                i = m.end()
    return json.loads("".join(out))


def dumps_fastjson(value: Any, indent: str = "") -> str:
    """Pretty text as fastjson writes it: tab indents, sorted keys, int keys bare."""
    inner = indent + "\t"
    if isinstance(value, dict):
        if not value:
            return "{}"
        ordered = sorted(value.items(), key=lambda kv: (isinstance(kv[0], str), kv[0]))
        items = [(f"{k}" if isinstance(k, int) else json.dumps(k, ensure_ascii=False)) + ":"
                 + dumps_fastjson(v, inner) for k, v in ordered]
        return "{\n" + ",\n".join(inner + item for item in items) + "\n" + indent + "}"
    if isinstance(value, (list, tuple, set)):
        return "[" + ",".join(dumps_fastjson(v, inner) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _data_version() -> dict:
    return {"counter": 0, "stateVersion": 0, "timestamp": int(time.time() * 1000)}


# --- checking each file -----------------------------------------------------------------------
def _table(name: str, body: Any, key: str) -> dict:
    if not isinstance(body, dict):
        raise ConfigFileError(name, f"expected a JSON object, got {type(body).__name__}")
    table = body.get(key)
    if not isinstance(table, dict):
        raise ConfigFileError(name, f"no {key} object" if table is None else f"{key} is not an object")
    return table


def _int(name: str, where: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigFileError(name, f"{where} must be an integer from {low} to {high}, got {value!r}")
    return value


def _check_topics(name: str, body: Any, out: BrokerConfigFiles) -> str:
    for topic, entry in _table(name, body, "topicConfigTable").items():
        where = f"topicConfigTable[{topic!r}]"
        if not isinstance(entry, dict):
            raise ConfigFileError(name, f"{where} is not an object")
        if entry.get("topicName", topic) != topic:
            raise ConfigFileError(name, f"{where}: topicName {entry['topicName']!r} differs from its key")
        numbers = {key: _int(name, f"{where}.{key}", entry.get(key, default), low, high)
                   for key, default, low, high in (("readQueueNums", 16, 1, MAX_QUEUE_NUMS),
                                                   ("writeQueueNums", 16, 1, MAX_QUEUE_NUMS), ("perm", 6, 0, 7))}
        try:
            out.topics[topic] = TopicConfig(
                topic_name=topic, read_queue_nums=numbers["readQueueNums"],
                write_queue_nums=numbers["writeQueueNums"], perm=numbers["perm"],
                topic_filter_type=entry.get("topicFilterType", "SINGLE_TAG"))
        except ValueError as error:
            if "@" in topic and _valid_topic(topic.replace("@", "_")):
                # A broker named room@name (machine rooms) makes its own topics of that name
                # (RocketMQ 5.3.3: "hz@broker-a", "rmq_sys_SYNC_BROKER_MEMBER_hz@broker-a"). No client
                # can send to them: left out.
                continue
            raise ConfigFileError(name, f"{where}: {error}") from None
    return f"{len(out.topics)} topics"


def _valid_topic(topic: str) -> bool:
    try:
        validate_topic(topic)
    except ValueError:
        return False
    return True


BROADCAST_SUFFIX = "@broadcast"


def _check_offsets(name: str, body: Any, out: BrokerConfigFiles) -> str:
    broadcast = 0
    for key, queues in _table(name, body, "offsetTable").items():
        where = f"offsetTable[{key!r}]"
        # A 5.x broker also keeps, for a BROADCASTING group, the least offset its clients reported
        # (BroadcastOffsetManager) under topic@group@broadcast. It is no committed offset of the
        # group (those stay on the clients): checked, then left out.
        is_broadcast = key.endswith(BROADCAST_SUFFIX) and key.count("@") == 2
        if key.count("@") != 1 and not is_broadcast:
            raise ConfigFileError(name, f"{where}: the key is not topic@group")
        topic, group = key[:-len(BROADCAST_SUFFIX)].split("@") if is_broadcast else key.split("@")
        try:
            validate_topic(topic)
            validate_group(group)
        except ValueError as error:
            raise ConfigFileError(name, f"{where}: {error}") from None
        if not isinstance(queues, dict):
            raise ConfigFileError(name, f"{where} is not an object of queue ids to offsets")
        for queue, offset in queues.items():
            if not (isinstance(queue, str) and queue.isascii() and queue.isdigit()):
                raise ConfigFileError(name, f"{where}: queue id {queue!r} is not an integer >= 0")
            value = _int(name, f"{where}[{queue}]", offset, 0, 2**63 - 1)
            if is_broadcast:
                broadcast += 1
            else:
                out.offsets[(group, topic, int(queue))] = value
    left_out = f" ({broadcast} BROADCASTING offsets left out)" if broadcast else ""
    return f"{len(out.offsets)} committed offsets of {len({g for g, _, _ in out.offsets})} groups{left_out}"


def _check_groups(name: str, body: Any, out: BrokerConfigFiles) -> str:
    for group, entry in _table(name, body, "subscriptionGroupTable").items():
        where = f"subscriptionGroupTable[{group!r}]"
        if not isinstance(entry, dict):
            raise ConfigFileError(name, f"{where} is not an object")
        if entry.get("groupName", group) != group:
            raise ConfigFileError(name, f"{where}: groupName {entry['groupName']!r} differs from its key")
        for key, kind in _GROUP_FIELDS.items():
            value = entry.get(key)
            if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
                raise ConfigFileError(name, f"{where}.{key} must be {kind.__name__}, got {value!r}")
        try:
            subscription_group_config(group, entry)
        except ValueError as error:
            raise ConfigFileError(name, f"{where}: {error}") from None
        out.subscription_groups[group] = entry
    return f"{len(out.subscription_groups)} subscription groups"


def _check_filter(name: str, text: str, out: BrokerConfigFiles, broker_config) -> str:
    manager = ConsumerFilterManager(broker_config, clock=lambda: 0)
    try:
        usable = manager.decode(text)
    except ValueError as error:
        raise ConfigFileError(name, str(error)) from None
    out.filter_text = text
    count = sum(len(manager.filter_datas(t)) for t in manager.topics())
    return (f"filter data of {count} group/topic pairs" if usable else
            "kept as it is, but its bloom filter differs from this store's (maxErrorRateOfBloomFilter, "
            "expectConsumerNumUseFilter), so it is ignored as a broker ignores it")


def subscription_group_config(group: str, entry: dict) -> SubscriptionGroupConfig:
    """A ``subscriptionGroupTable`` entry as a :class:`SubscriptionGroupConfig`."""
    def snake(key: str) -> str:
        return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key)
    return SubscriptionGroupConfig(group_name=group, **{snake(k): entry[k] for k in _GROUP_FIELDS if k in entry})


# --- reading, applying, writing ------------------------------------------------------------------
def _read_text(filesystem, path: str) -> Optional[str]:
    from pyarrow import fs as pafs

    if filesystem.get_file_info(path).type != pafs.FileType.File:
        return None
    with filesystem.open_input_stream(path) as f:
        return f.read().decode("utf-8")


def read_broker_config(path: str, *, skip_damaged: bool = False, broker_config=None) -> BrokerConfigFiles:
    """The config files of the broker store at ``path`` (its ``config/`` directory, else beside
    ``commitlog/``), checked; ConfigFileError for a malformed one unless ``skip_damaged``."""
    filesystem, root = _filesystem(path)
    out = BrokerConfigFiles()
    for name in CONFIG_FILES:
        for candidate in (f"config/{name}", name, f"config/{name}.bak", f"{name}.bak"):
            text = _read_text(filesystem, f"{root}/{candidate}")
            if text is None or not text.strip():
                continue   # a missing or empty file: ConfigManager.load tries the backup
            checked = BrokerConfigFiles()   # a file counts whole or not at all
            try:
                _check(candidate, text, checked, broker_config)
            except ConfigFileError as error:
                if not skip_damaged:
                    raise
                out.skipped[name] = str(error)
                continue   # a damaged file: the broker deletes it and loads the backup
            out.topics.update(checked.topics)
            out.offsets.update(checked.offsets)
            out.subscription_groups.update(checked.subscription_groups)
            out.filter_text = checked.filter_text or out.filter_text
            out.found[name] = candidate
            out.skipped.pop(name, None)
            break
    return out


def _check(name: str, text: str, out: BrokerConfigFiles, broker_config) -> str:
    base = name.rsplit("/", 1)[-1].removesuffix(".bak")
    if base == CONSUMER_FILTER:
        return _check_filter(name, text, out, broker_config)
    try:
        body = loads_fastjson(text)
    except ValueError as error:
        raise ConfigFileError(name, f"not valid JSON ({error})") from None
    check = {TOPICS: _check_topics, CONSUMER_OFFSET: _check_offsets, SUBSCRIPTION_GROUP: _check_groups}[base]
    return check(name, body, out)


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
