"""A broker's ``config/*.json`` files, byte for byte: fastjson text both ways, and each file read
and checked. (Applying them to a store and writing a store's back: :mod:`rocketfilter.store.config_files`.)

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
or with ``skip_damaged`` is left out and reported.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

from rocketfilter.broker_files.import_parse import _filesystem
from rocketfilter.config import SubscriptionGroupConfig, TopicConfig
from rocketfilter.naming import MAX_QUEUE_NUMS, validate_group, validate_topic

CONSUMER_OFFSET = "consumerOffset.json"
TOPICS = "topics.json"
SUBSCRIPTION_GROUP = "subscriptionGroup.json"
CONSUMER_FILTER = "consumerFilter.json"   # ConsumerFilterManager's file (store.filter_data)
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


def _entries(name: str, body: Any, table: str, name_key: str):
    """``(key, where, entry)`` for each entry of ``body[table]``: an object whose ``name_key``,
    when present, is its key."""
    for key, entry in _table(name, body, table).items():
        where = f"{table}[{key!r}]"
        if not isinstance(entry, dict):
            raise ConfigFileError(name, f"{where} is not an object")
        if entry.get(name_key, key) != key:
            raise ConfigFileError(name, f"{where}: {name_key} {entry[name_key]!r} differs from its key")
        yield key, where, entry


def _check_topics(name: str, body: Any, out: BrokerConfigFiles) -> str:
    for topic, where, entry in _entries(name, body, "topicConfigTable", "topicName"):
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
    for group, where, entry in _entries(name, body, "subscriptionGroupTable", "groupName"):
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


def subscription_group_config(group: str, entry: dict) -> SubscriptionGroupConfig:
    """A ``subscriptionGroupTable`` entry as a :class:`SubscriptionGroupConfig`."""
    def snake(key: str) -> str:
        return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key)
    return SubscriptionGroupConfig(group_name=group, **{snake(k): entry[k] for k in _GROUP_FIELDS if k in entry})


# --- reading --- ------------------------------------------------------------------
def _read_text(filesystem, path: str) -> Optional[str]:
    from pyarrow import fs as pafs

    if filesystem.get_file_info(path).type != pafs.FileType.File:
        return None
    with filesystem.open_input_stream(path) as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        name = path.rsplit("/", 2)
        shown = "/".join(name[-2:]) if len(name) > 2 and name[-2] == "config" else name[-1]
        raise ConfigFileError(shown, f"not UTF-8 text (byte 0x{raw[error.start]:02x} at offset "
                                     f"{error.start}); a broker writes its config files in UTF-8") \
            from None


def read_broker_config(path: str, *, skip_damaged: bool = False,
                       check_filter: Optional[Callable[[str, str], str]] = None) -> BrokerConfigFiles:
    """The config files of the broker store at ``path`` (its ``config/`` directory, else beside
    ``commitlog/``), checked; ConfigFileError for a malformed one unless ``skip_damaged``.

    ``check_filter(name, text)`` checks ``consumerFilter.json`` (SQL92 filter data: it takes the
    selector and the store's bloom settings, so the store passes it in) and says what it holds;
    ValueError when the file is malformed. Without it the file is kept unchecked."""
    from pyarrow import fs as pafs

    filesystem, root = _filesystem(path)
    out = BrokerConfigFiles()
    if filesystem.get_file_info(f"{root}/config").type == pafs.FileType.File:
        error = ConfigFileError("config", "a regular file, not the broker's config directory "
                                          "(topics.json, consumerOffset.json, ...)")
        if not skip_damaged:
            raise error
        out.skipped["config"] = str(error)
    for name in CONFIG_FILES:
        for candidate in (f"config/{name}", name, f"config/{name}.bak", f"{name}.bak"):
            checked = BrokerConfigFiles()   # a file counts whole or not at all
            try:
                text = _read_text(filesystem, f"{root}/{candidate}")
                if text is None or not text.strip():
                    continue   # a missing or empty file: ConfigManager.load tries the backup
                _check(candidate, text, checked, check_filter)
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


def _check(name: str, text: str, out: BrokerConfigFiles, check_filter) -> str:
    base = name.rsplit("/", 1)[-1].removesuffix(".bak")
    if base == CONSUMER_FILTER:
        try:
            what = check_filter(name, text) if check_filter is not None else "filter data (not checked)"
        except ValueError as error:
            raise ConfigFileError(name, str(error)) from None
        out.filter_text = text
        return what
    try:
        body = loads_fastjson(text)
    except ValueError as error:
        raise ConfigFileError(name, f"not valid JSON ({error})") from None
    check = {TOPICS: _check_topics, CONSUMER_OFFSET: _check_offsets, SUBSCRIPTION_GROUP: _check_groups}[base]
    return check(name, body, out)
