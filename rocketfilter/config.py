"""Broker and store settings with RocketMQ's names and defaults, and loading them.

Field names are RocketMQ's Java field names in snake_case; in a ``broker.conf`` file (Java
``.properties`` syntax) and in Spark conf (``spark.rocketfilter.<key>``) they keep RocketMQ's
camelCase spelling, e.g. ``enablePropertyFilter=false``. One deliberate deviation:
``enable_property_filter`` defaults to **True** here (RocketMQ: false), because filtering by SQL92
is what rocketfilter is for. docs/configuration.md lists every key.

>>> broker, store = load_broker_conf(spark_conf={"spark.rocketfilter.enablePropertyFilter": "false"})
>>> broker.enable_property_filter, store.mapped_file_size_consume_queue
(False, 6000000)
"""
from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from rocketfilter.conf_sources import SPARK_PREFIX, ConfigError, parse_properties, spark_conf_items
from rocketfilter.naming import (DLQ_GROUP_TOPIC_PREFIX, GROUP_MAX_LENGTH, NOT_ALLOWED_SEND_TOPICS,
                                 RETRY_GROUP_TOPIC_PREFIX, RETRY_OR_DLQ_TOPIC_MAX_LENGTH, SYSTEM_TOPIC_PREFIX,
                                 SYSTEM_TOPICS, TOPIC_MAX_LENGTH, InvalidNameError, PermName, dlq_topic,
                                 is_not_allowed_send_topic, is_system_topic, retry_topic, validate_group,
                                 validate_topic)

# Name validation (rocketfilter.naming) and the raw settings readers (rocketfilter.conf_sources) are
# re-exported because much code imports them from rocketfilter.config.
__all__ = [
    # rocketfilter.naming
    "TOPIC_MAX_LENGTH", "GROUP_MAX_LENGTH", "RETRY_OR_DLQ_TOPIC_MAX_LENGTH", "RETRY_GROUP_TOPIC_PREFIX",
    "DLQ_GROUP_TOPIC_PREFIX", "SYSTEM_TOPIC_PREFIX", "SYSTEM_TOPICS", "NOT_ALLOWED_SEND_TOPICS",
    "InvalidNameError", "validate_topic", "validate_group", "is_system_topic", "is_not_allowed_send_topic",
    "retry_topic", "dlq_topic", "PermName",
    # rocketfilter.conf_sources
    "SPARK_PREFIX", "ConfigError", "parse_properties", "spark_conf_items",
    # defined here
    "MASTER_ID", "physical_memory", "BROKER_ROLES", "FLUSH_DISK_TYPES", "MessageStoreConfig", "BrokerConfig",
    "TopicConfig", "SubscriptionGroupConfig", "load_broker_conf", "to_properties",
]

log = logging.getLogger(__name__)

MASTER_ID = 0  # MixAll.MASTER_ID: brokerId 0 is the master


# ---------------------------------------------------------------------------------------------
# Settings. A field's file key is its camelCase name unless metadata says otherwise; "java"
# metadata marks the Java type for range checks (int unless "long").
def _key(name: str, java: str = "int") -> dict:
    return {"key": name, "java": java}


def _long() -> dict:
    return {"java": "long"}


def physical_memory() -> int:
    """This machine's RAM in bytes (``StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE``; 24 GiB if unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 24 * 1024 ** 3


BROKER_ROLES = ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE")
FLUSH_DISK_TYPES = ("ASYNC_FLUSH", "SYNC_FLUSH")
_CHOICES = {"broker_role": BROKER_ROLES, "flush_disk_type": FLUSH_DISK_TYPES}


@dataclass
class MessageStoreConfig:
    """``MessageStoreConfig``: the store's sizes and the getMessage limits (SEMANTICS §12.1)."""

    store_path_root_dir: str = field(default_factory=lambda: str(Path.home() / "store"))
    store_path_commit_log: Optional[str] = None
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300000 * 20
    enable_consume_queue_ext: bool = False
    mapped_file_size_consume_queue_ext: int = 48 * 1024 * 1024
    # ConsumerFilterManager overwrites it with the bloom filter's m (112 by default).
    bit_map_length_consume_queue_ext: int = 64
    max_message_size: int = 1024 * 1024 * 4
    max_filter_message_size: int = 16000
    max_transfer_bytes_on_message_in_memory: int = 1024 * 256
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 1024 * 64
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    access_message_in_memory_hot_ratio: int = 26
    travel_cq_file_num_when_get_message: int = 1
    broker_role: str = "ASYNC_MASTER"
    flush_disk_type: str = "ASYNC_FLUSH"
    offset_check_in_slave: bool = False
    disk_fall_recorded: bool = True
    cold_data_flow_control_enable: bool = False
    file_reserved_time: int = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    # rocketfilter extension: RocketMQ reads the OS value; here it can be set (in bytes).
    total_physical_memory: int = field(default_factory=physical_memory, metadata=_long())
    # rocketfilter extensions for the Delta store's layout: a put runs the reput (dispatch) at
    # once unless told not to; ConsumeQueue files hold at most this many entries, in row groups
    # small enough that a pull's window reads few of them.
    dispatch_on_put: bool = True
    consume_queue_rows_per_file: int = 1_000_000
    consume_queue_row_group_rows: int = 8192
    # A pull reads whole row groups, and Spark parses a file's whole footer for any read: 4096
    # rows measured as fast as 8192 and 1.2-1.5x faster than 1024 (a 1.2 MB footer per 500k rows).
    commit_log_row_group_rows: int = 4096
    # rocketfilter extensions: properties parsed once at write into typed CommitLog columns
    # (comma separated), and how many of each topic's most frequent user properties an import
    # promotes besides (0: none). See rocketfilter.store.promoted.
    promoted_properties: str = ""
    promote_top_properties: int = 0

    def __post_init__(self) -> None:
        _validate(self)
        if self.promote_top_properties < 0:
            raise ConfigError(f"promoteTopProperties must be >= 0, got {self.promote_top_properties}")

    @property
    def consume_queue_file_size(self) -> int:
        """``getMappedFileSizeConsumeQueue()``: the setting rounded up to whole 20-byte units, so
        a unit never straddles two files (6 000 000 by default)."""
        return -(-self.mapped_file_size_consume_queue // 20) * 20

    @property
    def consume_queue_file_units(self) -> int:
        """Entries per consume-queue file (300 000 by default)."""
        return self.consume_queue_file_size // 20


@dataclass
class BrokerConfig:
    """``BrokerConfig`` (with its ``BrokerIdentity`` part): permissions, filtering switches and
    the bloom filter's parameters (SEMANTICS §6, §10, §14)."""

    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = field(default_factory=lambda: socket.gethostname() or "DEFAULT_BROKER")
    broker_id: int = field(default=MASTER_ID, metadata=_long())
    broker_ip1: str = field(default="127.0.0.1", metadata=_key("brokerIP1", "str"))
    listen_port: int = 10911
    namesrv_addr: Optional[str] = None
    broker_permission: int = PermName.PERM_READ | PermName.PERM_WRITE
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    slave_read_enable: bool = False
    long_polling_enable: bool = True
    short_polling_time_mills: int = field(default=1000, metadata=_long())
    # The one deliberate deviation from RocketMQ (which defaults to false): see the module doc.
    enable_property_filter: bool = True
    enable_calc_filter_bit_map: bool = False
    # rocketfilter extension: keep each registered subscription's exact broker decision as a
    # bit of the ConsumeQueue (rocketfilter.store.sub_bits), registered at heartbeat.
    enable_calc_subscription_bits: bool = False
    filter_support_retry: bool = False
    max_error_rate_of_bloom_filter: int = 20
    expect_consumer_num_use_filter: int = 32
    filter_data_clean_time_span: int = field(default=24 * 3600 * 1000, metadata=_long())

    def __post_init__(self) -> None:
        _validate(self)
        if not PermName.is_valid(self.broker_permission):
            raise ConfigError(f"brokerPermission must be 0..7, got {self.broker_permission}")
        if not 1 <= self.max_error_rate_of_bloom_filter < 100:
            raise ConfigError(f"maxErrorRateOfBloomFilter must be 1..99 (a percentage), "
                              f"got {self.max_error_rate_of_bloom_filter}")
        if self.expect_consumer_num_use_filter < 1:
            raise ConfigError(f"expectConsumerNumUseFilter must be >= 1, got {self.expect_consumer_num_use_filter}")


@dataclass
class TopicConfig:
    """``TopicConfig``; the name is validated so it can name a directory safely."""

    topic_name: str
    read_queue_nums: int = 4
    write_queue_nums: int = 4
    perm: int = PermName.PERM_READ | PermName.PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def __post_init__(self) -> None:
        validate_topic(self.topic_name)
        if not PermName.is_valid(self.perm):
            raise ConfigError(f"topic {self.topic_name!r}: perm must be 0..7, got {self.perm}")
        for name in ("read_queue_nums", "write_queue_nums"):
            if getattr(self, name) < 0:
                raise ConfigError(f"topic {self.topic_name!r}: {name} must be >= 0, got {getattr(self, name)}")
        if self.topic_filter_type not in ("SINGLE_TAG", "MULTI_TAG"):
            raise ConfigError(f"topic {self.topic_name!r}: topic_filter_type must be SINGLE_TAG or MULTI_TAG")


@dataclass
class SubscriptionGroupConfig:
    """``SubscriptionGroupConfig``: what a consumer group may do."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    group_sys_flag: int = 0

    def __post_init__(self) -> None:
        validate_group(self.group_name)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _fields(cls) -> Dict[str, dataclasses.Field]:
    """File key -> field, for one settings class."""
    return {f.metadata.get("key", _camel(f.name)): f for f in dataclasses.fields(cls)}


def _field_type(f: dataclasses.Field) -> str:
    text = str(f.type)
    return "bool" if "bool" in text else "int" if "int" in text else "str"


_INT_RANGE = {"int": (-2 ** 31, 2 ** 31 - 1), "long": (-2 ** 63, 2 ** 63 - 1)}


def _validate(obj) -> None:
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        kind = _field_type(f)
        if kind == "bool" and not isinstance(value, bool):
            raise ConfigError(f"{type(obj).__name__}.{f.name} must be a bool, got {value!r}")
        if kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{type(obj).__name__}.{f.name} must be an int, got {value!r}")
            low, high = _INT_RANGE[f.metadata.get("java", "int")]
            if not low <= value <= high:
                raise ConfigError(f"{type(obj).__name__}.{f.name} = {value} is outside Java's "
                                  f"{f.metadata.get('java', 'int')} range")
        if f.name in _CHOICES and value not in _CHOICES[f.name]:
            raise ConfigError(f"{type(obj).__name__}.{f.name} must be one of {_CHOICES[f.name]}, got {value!r}")


# ---------------------------------------------------------------------------------------------
# Loading
def _convert(key: str, f: dataclasses.Field, raw: str, where: str) -> Any:
    text = raw.strip()
    kind = _field_type(f)
    if kind == "bool":
        # Stricter than Java's Boolean.parseBoolean, which reads any typo as false.
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"{where}: {key} must be true or false, got {raw!r}")
        return text.lower() == "true"
    if kind == "int":
        try:
            return int(text, 10)
        except ValueError:
            raise ConfigError(f"{where}: {key} must be an integer, got {raw!r}") from None
    if "Optional" in str(f.type) and text == "":
        return None
    return text


def _apply(items: Iterable[Tuple[str, str, str]], broker: BrokerConfig, store: MessageStoreConfig,
           strict: bool) -> Tuple[BrokerConfig, MessageStoreConfig]:
    """Set ``(key, value, where)`` items, one at a time so a bad value is reported where it is."""
    objs: List[Any] = [broker, store]
    fields = [_fields(BrokerConfig), _fields(MessageStoreConfig)]
    known = sorted(set(fields[0]) | set(fields[1]))
    for key, raw, where in items:
        hits = [i for i in (0, 1) if key in fields[i]]
        if not hits:
            hint = difflib.get_close_matches(key, known, n=1)
            message = f"{where}: unknown setting {key!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
            if strict:
                raise ConfigError(message + "; docs/configuration.md lists the keys")
            log.warning("%s; ignored", message)
            continue
        for i in hits:
            f = fields[i][key]
            try:
                objs[i] = dataclasses.replace(objs[i], **{f.name: _convert(key, f, raw, where)})
            except ConfigError as error:
                text = str(error)
                raise ConfigError(text if text.startswith(where) else f"{where}: {text}") from None
    return objs[0], objs[1]



def load_broker_conf(path: Union[str, os.PathLike, None] = None, spark_conf: Any = None, *,
                     strict: bool = True) -> Tuple[BrokerConfig, MessageStoreConfig]:
    """Defaults, then the ``.properties`` file at ``path``, then ``spark.rocketfilter.<key>``
    settings from ``spark_conf`` (a dict, SparkConf or SparkSession): later ones win.

    Unknown keys raise ConfigError naming the key and where it came from (file and line, or the
    Spark key), with the closest known key as a hint; ``strict=False`` logs a warning instead.

    >>> broker, store = load_broker_conf(spark_conf={"spark.rocketfilter.brokerRole": "SLAVE"})
    >>> store.broker_role
    'SLAVE'
    """
    items: List[Tuple[str, str, str]] = []
    if path is not None:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            text = path.read_text(encoding="latin-1")  # Java's own .properties encoding
        items += [(k, v, f"{path}:{line}") for k, v, line in parse_properties(text)]
    items += [(k, v, f"Spark conf {SPARK_PREFIX}{k}") for k, v in spark_conf_items(spark_conf).items()]
    return _apply(items, BrokerConfig(), MessageStoreConfig(), strict)


def to_properties(broker: BrokerConfig, store: MessageStoreConfig) -> Dict[str, str]:
    """The settings as RocketMQ ``key -> value`` strings (``None`` values left out)."""
    out: Dict[str, str] = {}
    for obj in (broker, store):
        for key, f in _fields(type(obj)).items():
            value = getattr(obj, f.name)
            if value is not None:
                out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out
