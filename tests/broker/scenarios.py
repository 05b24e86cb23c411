"""Scenarios for the real-broker harness, drawn from a seed (``scenario(seed)``).

Each seed picks a *kind* (``KINDS[seed % len(KINDS)]``) that fixes what the scenario is about
(seed 003's two-tag group, the Aa/BB collision, SQL92 over odd properties, ...) and draws the rest
(messages, queues, pulls, time queries) from ``random.Random(seed)``. ``ci_seeds()`` are the seeds
the test suite runs; any other seed draws a new scenario of the same kinds:

    python tests/broker/scenarios.py 7 > s7.json && python tests/broker/run_scenario.py s7.json out7
"""
from __future__ import annotations

import json
import random
import sys
from typing import Any, Dict, List, Optional

TOPIC = "SUBSCRIBE_TEST"
TAGS = ["tagA", "tagB", "tagC", "Aa", "BB", None]
TAG_EXPRESSIONS = ["tagA", "tagB", "tagA || tagB", "*", "Aa", "BB || tagC", "tagC || Aa", "tagB || BB"]
SQL_EXPRESSIONS = [
    "n > 5", "n = 7", "n <> 3", "n BETWEEN 2 AND 8", "n IS NULL", "n IS NOT NULL", "NOT (n > 5)",
    "region = 'eu'", "region IN ('eu', 'us')", "region IS NULL OR region <> 'eu'",
    "flag = TRUE", "flag = 'true'", "flag <> FALSE", "n > 5 OR region = 'eu'", "n > 1.5",
    "region IS NOT NULL AND n < 10", "TAGS = 'tagA'", "e = ''", "e IS NULL",
]
# Values that exercise SQL92: numbers, non-numbers, empty, boolean-looking; None = absent.
N_VALUES = ["7", "3", "9", "x", "", "1.5", "-2", "true", None]
REGION_VALUES = ["eu", "us", "", None]
FLAG_VALUES = ["true", "TRUE", "false", "yes", "1", None]

# Seed 3 is seed003's kind and seed 4 the Aa/BB collision, as in the project's seed files.
KINDS = ["bitmap", "sql_props", "tag_and_sql", "seed003", "collision", "broadcasting", "avg_by_circle",
         "consistent_hash", "config", "machine_room", "machine_room_nearby", "from_timestamp", "many_files"]


def _cid(i: int, room: Optional[str] = None) -> str:
    return f"127.0.0.{i + 1}@consumer{i}" + (f"-{room}" if room else "")


def _tag_sub(expr: str) -> Dict[str, str]:
    return {"type": "TAG", "expression": expr}


def _sql_sub(expr: str) -> Dict[str, str]:
    return {"type": "SQL92", "expression": expr}


def _messages(rng: random.Random, topics: Dict[str, int], count: int, empty_queue: bool) -> List[dict]:
    out = []
    for i in range(count):
        topic = rng.choice(sorted(topics))
        queues = list(range(topics[topic]))
        if empty_queue and len(queues) > 1:
            queues = queues[:-1]                     # the last queue of every topic stays empty
        m: Dict[str, Any] = {"topic": topic, "queue_id": rng.choice(queues), "keys": f"k{i}", "body": f"m{i}"}
        tag = rng.choice(TAGS)
        if tag is not None:
            m["tags"] = tag
        props = {}
        for name, values in (("n", N_VALUES), ("region", REGION_VALUES), ("flag", FLAG_VALUES),
                             ("e", ["", "", "v", None])):
            v = rng.choice(values)
            if v is not None:
                props[name] = v
        m["properties"] = props
        out.append(m)
    return out


def _group(name: str, consumers: List[dict], *, model: str = "CLUSTERING", strategy: Any = "AVG",
           from_where: str = "CONSUME_FROM_FIRST_OFFSET") -> dict:
    return {"name": name, "message_model": model, "allocate_strategy": strategy,
            "consume_from_where": from_where, "consumers": consumers}


def _consumers(rng: random.Random, topics: List[str], n: int, sql_share: float, rooms=None) -> List[dict]:
    out = []
    for i in range(n):
        sub = _sql_sub(rng.choice(SQL_EXPRESSIONS)) if rng.random() < sql_share else _tag_sub(rng.choice(TAG_EXPRESSIONS))
        out.append({"client_id": _cid(i, rooms[i] if rooms else None), "subscriptions": {t: sub for t in topics}})
    return out


def scenario(seed: int) -> dict:
    """The scenario of ``seed`` (a plain dict in the harness's JSON format)."""
    rng = random.Random(seed)
    kind = KINDS[seed % len(KINDS)]
    broker: Dict[str, Any] = {"brokerName": "broker-a", "enableCalcFilterBitMap": rng.random() < 0.3,
                              "mappedFileSizeCommitLog": 65536, "mappedFileSizeConsumeQueue": 400}
    topics = {TOPIC: rng.choice([2, 3, 4])}
    if rng.random() < 0.3:
        topics["OTHER_TOPIC"] = 2
    count = rng.randint(10, 24)
    empty_queue = rng.random() < 0.5
    names = sorted(topics)
    groups: List[dict] = []
    if kind == "seed003":
        groups.append(_group("GID_seed003", [
            {"client_id": _cid(0), "subscriptions": {t: _tag_sub("tagA") for t in names}},
            {"client_id": _cid(1), "subscriptions": {t: _tag_sub("tagB") for t in names}}]))
    elif kind == "collision":
        groups.append(_group("GID_collision", [
            {"client_id": _cid(0), "subscriptions": {t: _tag_sub(rng.choice(["Aa", "BB", "Aa || tagC"])) for t in names}}]))
        groups.append(_group("GID_collision2", _consumers(rng, names, 2, 0.0)))
    elif kind == "sql_props":
        groups.append(_group("GID_sql", _consumers(rng, names, rng.randint(1, 2), 1.0)))
        groups.append(_group("GID_sql_bc", _consumers(rng, names, 1, 1.0), model="BROADCASTING"))
    elif kind == "tag_and_sql":
        c = _consumers(rng, names, 2, 0.0)
        c[rng.randrange(2)]["subscriptions"] = {t: _sql_sub(rng.choice(SQL_EXPRESSIONS)) for t in names}
        groups.append(_group("GID_mixed", c))
    elif kind == "broadcasting":
        groups.append(_group("GID_bc", _consumers(rng, names, rng.randint(2, 3), 0.4), model="BROADCASTING"))
    elif kind in ("avg_by_circle", "consistent_hash"):
        strategy = "AVG_BY_CIRCLE" if kind == "avg_by_circle" else {"name": "CONSISTENT_HASH", "virtualNodeCnt": rng.choice([3, 10])}
        groups.append(_group("GID_alloc", _consumers(rng, names, rng.randint(2, 3), 0.3), strategy=strategy))
    elif kind == "config":
        mqs = [{"topic": TOPIC, "brokerName": "broker-a", "queueId": q} for q in range(topics[TOPIC]) if rng.random() < 0.6]
        groups.append(_group("GID_config", _consumers(rng, names, 2, 0.3),
                             strategy={"name": "CONFIG", "messageQueueList": mqs or [{"topic": TOPIC, "brokerName": "broker-a", "queueId": 0}]}))
    elif kind == "machine_room":
        broker["brokerName"] = "hz@broker-a"         # AllocateMessageQueueByMachineRoom reads the room before '@'
        groups.append(_group("GID_room", _consumers(rng, names, 2, 0.3),
                             strategy={"name": "MACHINE_ROOM", "consumerIdcs": rng.choice([["hz"], ["hz", "sh"]])}))
    elif kind == "machine_room_nearby":
        rooms = [rng.choice(["hz", "sh"]) for _ in range(3)]
        consumers = _consumers(rng, names, 3, 0.3, rooms)
        groups.append(_group("GID_nearby", consumers, strategy={
            "name": "MACHINE_ROOM_NEARBY", "inner": rng.choice(["AVG", "AVG_BY_CIRCLE"]),
            "brokerRooms": {"broker-a": "hz"}, "consumerRooms": {c["client_id"]: r for c, r in zip(consumers, rooms)}}))
    elif kind == "from_timestamp":
        g = _group("GID_ts", _consumers(rng, names, 2, 0.3), from_where="CONSUME_FROM_TIMESTAMP")
        g["consume_timestamp"] = "20200101000000"
        groups.append(g)
    elif kind == "bitmap":
        broker["enableCalcFilterBitMap"] = True
        groups.append(_group("GID_bits", _consumers(rng, names, 2, 1.0)))
        groups.append(_group("GID_bits_tag", _consumers(rng, names, 1, 0.0)))
    elif kind == "many_files":
        broker.update(mappedFileSizeCommitLog=4096, mappedFileSizeConsumeQueue=100)   # ~20 records, 5 units a file
        count = rng.randint(30, 45)
        groups.append(_group("GID_files", _consumers(rng, names, 2, 0.4)))
    messages = _messages(rng, topics, count, empty_queue)
    pulls = []
    for _ in range(rng.randint(2, 4)):
        sql = rng.random() < 0.5
        topic = rng.choice(names)
        pulls.append({"group": "GID_puller", "topic": topic, "queue_id": rng.randrange(topics[topic]),
                      "type": "SQL92" if sql else "TAG",
                      "expression": rng.choice(SQL_EXPRESSIONS if sql else TAG_EXPRESSIONS),
                      "offset": rng.choice([0, 0, 1, 2, 5, 30]), "max_msg_nums": rng.choice([1, 3, 32])})
    times = [{"topic": messages[i]["topic"], "queue_id": messages[i]["queue_id"], "timestamp_of_message": i,
              "delta_ms": rng.choice([-1, 0, 0, 1]), "boundary": rng.choice(["LOWER", "UPPER"])}
             for i in rng.sample(range(len(messages)), 2)]
    return {"seed": seed, "kind": kind, "broker": broker,
            "topics": [{"name": t, "queues": q} for t, q in sorted(topics.items())],
            "messages": messages, "groups": groups, "pulls": pulls, "time_queries": times}


def ci_seeds() -> List[int]:
    """The seeds the suite runs: every kind at least twice, with seed 3 (seed003's kind)."""
    return list(range(1, 33))


if __name__ == "__main__":
    json.dump(scenario(int(sys.argv[1])), sys.stdout, indent=1)
    print()
