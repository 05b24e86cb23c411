"""Topics: RocketMQ's ``topics.json`` entries as the store's ``topics`` table."""
from __future__ import annotations

import time
from typing import Dict, Optional

from rocketfilter.config import TopicConfig, validate_topic
from rocketfilter.naming import MAX_QUEUE_NUMS
from rocketfilter.store import schema as S
from rocketfilter.store.tables import StoreTables


def create_topic(tables: StoreTables, topic: str, read_queue_nums: int = 4, write_queue_nums: int = 4,
                 perm: int = 6, topic_filter_type: str = "SINGLE_TAG") -> TopicConfig:
    """Create or update a topic. The name is checked with RocketMQ's topic rules, so it can never
    escape the store's directory."""
    validate_topic(topic)
    for label, value in (("read_queue_nums", read_queue_nums), ("write_queue_nums", write_queue_nums)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_QUEUE_NUMS:
            raise ValueError(f"topic {topic!r}: {label} must be an int from 1 to {MAX_QUEUE_NUMS}, "
                             f"got {value!r}")
    config = TopicConfig(topic_name=topic, read_queue_nums=read_queue_nums,
                         write_queue_nums=write_queue_nums, perm=perm,
                         topic_filter_type=topic_filter_type)
    row = {"topic": topic, "read_queue_nums": read_queue_nums, "write_queue_nums": write_queue_nums,
           "perm": perm, "topic_filter_type": topic_filter_type, "updated_at": int(time.time() * 1000)}
    tables.rewrite_small(S.TOPICS, lambda rows: ([r for r in rows if r["topic"] != topic] + [row], None))
    return config


def topics(tables: StoreTables) -> Dict[str, TopicConfig]:
    """Every topic's config, by name."""
    return {
        r["topic"]: TopicConfig(topic_name=r["topic"], read_queue_nums=r["read_queue_nums"],
                                write_queue_nums=r["write_queue_nums"], perm=r["perm"],
                                topic_filter_type=r["topic_filter_type"])
        for r in tables.read_small(S.TOPICS).to_pylist()
    }


def topic_config(tables: StoreTables, topic: str) -> Optional[TopicConfig]:
    return topics(tables).get(topic)
