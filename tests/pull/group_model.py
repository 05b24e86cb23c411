"""A plain, sequential model of a consumer group replaying a topic, for the tests.

Pure Python over the messages: the group's table by applying each heartbeat in turn (the
subVersion rule and the dropping of unlisted topics), each consumer's queues by the strategy over
the sorted queues and client ids, the broker's refusals, then each consumer's successive pulls of
each of its queues with :mod:`tests.pull.model`'s getMessage (one entry at a time), the client's
exact tag re-check, and finally who wants each message and why the lost ones are lost.

It shares with the code under test only the conformance-tested pieces: ``build_subscription``'s
tag and code sets, ``tags_code``, the allocation strategies, and the reference SQL92 evaluator
(not the Spark compiler).
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Set, Tuple

from rocketfilter.consumer import MessageQueue
from rocketfilter.selector import parse
from rocketfilter.tags import is_tag_type, tags_code
from tests.pull import model


def group_table(group) -> dict:
    """topic -> SubscriptionData after every heartbeat, in order."""
    table: dict = {}
    for cid in group.heartbeats:
        subs = group.consumers[cid].subscriptions
        for topic, sub in subs.items():
            if topic not in table or sub.sub_version > table[topic].sub_version:
                table[topic] = sub
        for topic in [t for t in table if t not in subs]:
            del table[topic]
    return table


def _low_int(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _compiles(expression: str) -> bool:
    try:
        parse(expression)
        return True
    except ValueError:
        return False


def broker_accepts(sub, message: dict, sql_matches_all: bool = False) -> bool:
    """The broker's two checks of one message for ``sub`` (no bitmaps in the test stores)."""
    if is_tag_type(sub.expression_type):
        return sub.sub_string == "*" or _low_int(tags_code(message["tags"])) in sub.code_set
    if sql_matches_all:
        return True
    return parse(sub.sub_string).matches(message["properties"] or {})


def client_keeps(sub, message: dict) -> bool:
    return not sub.tags_set or message["tags"] in sub.tags_set


def wants(sub, message: dict) -> bool:
    if not is_tag_type(sub.expression_type) and not _compiles(sub.sub_string):
        return False
    return broker_accepts(sub, message) and client_keeps(sub, message)


@dataclasses.dataclass
class ModelResult:
    consumed: Set[Tuple[str, int, int, int, int]]        # (client, queue, offset, pull_number, next_begin)
    lost: Set[Tuple[int, int, str, Optional[str]]]       # (queue, offset, reason, client)
    refused: Dict[str, str]                              # client -> response code


def replay(group, topic: str, messages: List[dict], broker_name: str, queue_nums: int, max_msg_nums: int,
           max_offset_py: int, cfg: model.Config, starts: Dict[int, int], ends: Dict[int, int],
           enable_property_filter: bool = True) -> ModelResult:
    """``messages``: the topic's CommitLog rows as dicts (queue_id, queue_offset,
    commitlog_offset, store_size, tags, properties)."""
    table = group_table(group)
    live = [cid for cid in group.consumers if cid not in group.departed]
    cid_all = sorted(live)
    mq_all = sorted(MessageQueue(topic, broker_name, q) for q in range(queue_nums))
    by_queue: Dict[int, List[dict]] = {}
    for m in messages:
        by_queue.setdefault(m["queue_id"], []).append(m)
    result = ModelResult(set(), set(), {})
    outcome: Dict[Tuple[int, int], List[Tuple[int, Optional[str], str]]] = {}   # message -> (rank, reason, client)
    reasons = ["consumed", "dropped_by_client_recheck", "filtered_by_group_subscription",
               "filtered_by_own_subscription", "skipped_by_broker", "pull_refused", "queue_not_consumed"]
    for cid in cid_all:
        consumer = group.consumers[cid]
        own = consumer.subscriptions.get(topic)
        if own is None:
            queues = [] if group.message_model == "BROADCASTING" else \
                group.allocate_strategy.allocate(group.group, cid, mq_all, cid_all)
            for mq in queues:
                for m in by_queue.get(mq.queue_id, []):
                    outcome.setdefault((m["queue_id"], m["queue_offset"]), []).append(
                        (reasons.index("queue_not_consumed"), "queue_not_consumed", cid))
            continue
        queues = mq_all if group.message_model == "BROADCASTING" else \
            group.allocate_strategy.allocate(group.group, cid, mq_all, cid_all)
        post = consumer.post_subscription_when_pull
        broker_sub, refusal, matches_all = own, None, False
        if not post:
            broker_sub = table.get(topic)
            if broker_sub is None:
                refusal = "SUBSCRIPTION_NOT_EXIST"
            elif broker_sub.sub_version < own.sub_version:
                refusal = "SUBSCRIPTION_NOT_LATEST"
        if refusal is None and not is_tag_type(broker_sub.expression_type):
            if not _compiles(broker_sub.sub_string):
                refusal, matches_all = (None, True) if post else ("FILTER_DATA_NOT_EXIST", False)
            if refusal is None and not enable_property_filter:
                refusal = "SYSTEM_ERROR"
        if refusal is not None:
            result.refused[cid] = refusal
        for mq in queues:
            msgs = sorted((m for m in by_queue.get(mq.queue_id, []) if m["queue_offset"] >= 0),
                          key=lambda m: m["queue_offset"])
            if refusal is not None:
                for m in msgs:
                    outcome.setdefault((m["queue_id"], m["queue_offset"]), []).append(
                        (reasons.index("pull_refused"), "pull_refused", cid))
                continue
            if not msgs:
                continue
            accepted = {m["queue_offset"]: broker_accepts(broker_sub, m, matches_all) for m in msgs}
            queue = model.Queue({m["queue_offset"]: model.Entry(m["queue_offset"], m["commitlog_offset"],
                                                                m["store_size"], accepted[m["queue_offset"]])
                                 for m in msgs}, msgs[0]["queue_offset"], msgs[-1]["queue_offset"] + 1)
            delivered = {}
            for number, (_, res) in enumerate(model.pull_sequence(queue, starts[mq.queue_id], ends[mq.queue_id],
                                                                  max_msg_nums, max_offset_py, cfg)):
                for offset in res.found:
                    delivered[offset] = (number, res.next_begin_offset)
            filtered = "filtered_by_group_subscription" if not post else "filtered_by_own_subscription"
            for m in msgs:
                offset = m["queue_offset"]
                if offset in delivered and client_keeps(own, m):
                    result.consumed.add((cid, mq.queue_id, offset) + delivered[offset])
                    why = "consumed"
                elif offset in delivered:
                    why = "dropped_by_client_recheck"
                elif not accepted[offset]:
                    why = filtered
                else:
                    why = "skipped_by_broker"
                outcome.setdefault((m["queue_id"], offset), []).append((reasons.index(why), why, cid))
    subscribers = [cid for cid in cid_all if topic in group.consumers[cid].subscriptions]
    for m in messages:
        key = (m["queue_id"], m["queue_offset"])
        if not starts.get(key[0], 0) <= key[1] < ends.get(key[0], 0):
            continue
        wanted = [cid for cid in subscribers if wants(group.consumers[cid].subscriptions[topic], m)]
        owners = outcome.get(key, [])
        if group.message_model == "BROADCASTING":
            for rank, why, cid in owners:
                if rank > 0 and cid in wanted:
                    result.lost.add(key + (why, cid))
        elif wanted:
            rank, why, cid = min(owners, default=(reasons.index("queue_not_consumed"), "queue_not_consumed", None),
                                 key=lambda o: (o[0], o[1], o[2] or ""))
            if rank > 0:
                result.lost.add(key + (why, cid))
    return result
