"""Exact subscription bits: each registered subscription's broker decision, kept per
ConsumeQueue entry, so a pull or a replay reads no property at all.

RocketMQ's ``CommitLogDispatcherCalcBitMap`` keeps a bloom bitmap of the SQL92 groups a message
matches (approximate: it can only rule messages out). Here dispatch computes the *exact*
decision of every registered subscription (TAG and SQL92) and keeps it as one bit of the
ConsumeQueue's ``sub_bits`` column (a bigint; 63 slots per topic):

* TAG: the broker's tag-code check (``isMatchedByConsumeQueue``), collisions included;
* SQL92: the compiled selector (``isMatchedByCommitLog``).

A decision depends only on the subscription, so groups subscribed alike share a slot, keyed by
the decision (``TAG:<sorted tag codes>``, ``TAG:*``, ``SQL92:<expression>``). Registrations (group,
topic, type, expression, subVersion) are kept as ``config/subscriptionBits.json``; the later
subVersion wins, and a new subVersion that changes the expression moves the group to another
slot (the old one is freed when no group uses it). The slot table rides in the ConsumeQueue's
commit metadata with the entries it describes, each slot with the queue offset *from* which
dispatch computed it; :func:`backfill` computes the bits for history and sets ``from`` to 0.
A bit is used only where the whole range read lies at or past ``from``.

>>> decision_key("TAG", "TagB || TagA"), decision_key("SQL92", "a > 1")
('TAG:2598919,2598920', 'SQL92:a > 1')
"""
from __future__ import annotations

import json
import logging
from typing import Dict, Optional, Tuple

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketfilter.store import schema as S
from rocketfilter.store.tables import StoreTables
from rocketfilter.tags import SQL92, SubscriptionData, build_subscription, is_tag_type
from rocketfilter.tag_columns import tag_code_predicate

log = logging.getLogger(__name__)
CONFIG_FILE_NAME = "subscriptionBits.json"
MAX_SLOTS = 63   # bit 63 is the sign bit of the bigint: left out


def decision_key(expression_type: Optional[str], expression: Optional[str]) -> str:
    """The decision a subscription makes, as a slot key; ValueError where RocketMQ refuses it."""
    if is_tag_type(expression_type):
        sub = build_subscription(None, expression)
        return "TAG:*" if sub.is_sub_all else "TAG:" + ",".join(str(c) for c in sorted(sub.code_set))
    if expression_type != SQL92:
        raise ValueError(f"no filter for expression type {expression_type!r} (TAG or SQL92)")
    from rocketfilter.selector import parse

    parse(expression)   # SelectorSyntaxError (a ValueError) when it does not compile
    return f"{SQL92}:{expression}"


def decision_column(key: str, promoted: Optional[Dict[str, str]] = None,
                    tags_code: str = "tags_code") -> Column:
    """The never-null decision of slot ``key`` over rows with ``tags_code`` and the CommitLog's
    ``properties`` (and promoted columns)."""
    kind, _, rest = key.partition(":")
    if kind == "TAG":
        if rest == "*":
            return F.lit(True)
        codes = [int(c) for c in rest.split(",") if c]
        return tag_code_predicate(SubscriptionData(None, rest, code_set=codes), tags_code)
    from rocketfilter.selector import parse

    return parse(rest).to_column("properties", promoted=promoted)


SHARED_PREFIX = "__rf_parsed"


def shared_parses(slots: Dict[str, Dict[str, dict]], promoted: Optional[Dict[str, str]] = None,
                  properties: str = "properties") -> Tuple[Dict[str, Column], Dict[str, str]]:
    """One parse per property for every SQL92 slot of a dispatch: ``(columns, mapping)``, the
    columns to add to the rows (the promoted fields, ``value``, ``as_int``..., flat) and the
    ``promoted`` mapping that makes the selectors read them.

    Each compiled comparison otherwise carries its own Integer.valueOf of the property: 63 slots
    over ``age`` parse it 63 times per row and make a projection Spark takes minutes to plan.
    Flat columns (not a struct, which Spark's optimiser would inline back into every reader)
    stay in a projection of their own; the fields no selector reads are pruned by Spark.
    Properties already promoted, and a single SQL92 slot, need nothing.
    """
    from rocketfilter.selector import parse
    from rocketfilter.selector.spark import FLAT
    from rocketfilter.store.promoted import promoted_fields

    expressions = [key.partition(":")[2] for keys in slots.values() for key in keys if key.startswith(SQL92 + ":")]
    if len(expressions) < 2:
        return {}, {}
    names = dict.fromkeys(n for e in expressions for n in parse(e).properties if n not in (promoted or {}))
    columns, mapping = {}, {}
    for i, name in enumerate(names):
        prefix = f"{SHARED_PREFIX}{i}_"
        mapping[name] = prefix + FLAT
        for field, column in promoted_fields(F.col(properties), name).items():
            columns[prefix + field] = column
    return columns, mapping


def bits_column(slots: Dict[str, Dict[str, dict]], promoted: Optional[Dict[str, str]] = None,
                tags_code: str = "tags_code") -> Optional[Column]:
    """``sub_bits`` for rows of any topic: each topic's slots ORed into a bigint, null for a
    topic without slots; None when no topic has any."""
    out = None
    for topic, keys in sorted(slots.items()):
        if not keys:
            continue
        value = F.lit(0).cast("bigint")
        for key, entry in sorted(keys.items(), key=lambda kv: kv[1]["slot"]):
            mask = F.lit(1 << entry["slot"]).cast("bigint")
            value = value.bitwiseOR(F.when(decision_column(key, promoted, tags_code), mask)
                                    .otherwise(F.lit(0).cast("bigint")))
        out = F.when(F.col("topic") == topic, value) if out is None else out.when(F.col("topic") == topic, value)
    return out


# --- registrations ------------------------------------------------------------------------------

def registrations(tables: StoreTables) -> Dict[str, Dict[str, dict]]:
    """topic -> group -> ``{"expressionType", "expression", "subVersion"}``."""
    text = tables.read_config(CONFIG_FILE_NAME)
    if not text:
        return {}
    try:
        return json.loads(text)["topics"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"store {tables.uri}: config/{CONFIG_FILE_NAME} is not valid: {error}") from None


def _save(tables: StoreTables, regs: Dict[str, Dict[str, dict]]) -> None:
    tables.write_config(CONFIG_FILE_NAME, json.dumps({"topics": regs}, indent=2, sort_keys=True,
                                                     ensure_ascii=False))


def register(tables: StoreTables, group: str, topic: str, expression: Optional[str],
             expression_type: Optional[str] = "TAG", sub_version: int = 0) -> bool:
    """Register ``group``'s subscription to ``topic`` for bits; the next dispatch computes them.
    An older or equal subVersion than the one registered is ignored (returns False). ValueError
    for a subscription RocketMQ refuses."""
    from rocketfilter.config import validate_group, validate_topic

    validate_group(group)
    validate_topic(topic)
    decision_key(expression_type, expression)
    regs = registrations(tables)
    old = regs.get(topic, {}).get(group)
    if old is not None and old["subVersion"] >= sub_version:
        return False
    regs.setdefault(topic, {})[group] = {"expressionType": expression_type or "TAG",
                                         "expression": expression, "subVersion": int(sub_version)}
    _save(tables, regs)
    return True


def unregister(tables: StoreTables, group: str, topic: Optional[str] = None) -> None:
    """Forget ``group``'s registrations (of ``topic`` only, when given); the next dispatch frees
    the slots no group uses any more."""
    regs = registrations(tables)
    for t in [topic] if topic is not None else list(regs):
        regs.get(t, {}).pop(group, None)
        if t in regs and not regs[t]:
            del regs[t]
    _save(tables, regs)


# --- the slot table -----------------------------------------------------------------------------

def plan_slots(tables: StoreTables, state) -> Dict[str, Dict[str, dict]]:
    """The slot table after this dispatch: wanted keys keep their slot, unwanted ones are
    freed, new ones take the lowest free slot with ``from`` = each queue's next offset now."""
    regs = registrations(tables)
    out: Dict[str, Dict[str, dict]] = {}
    for topic in sorted(set(regs) | set(state.bits)):
        wanted = set()
        for group, reg in sorted(regs.get(topic, {}).items()):
            try:
                wanted.add(decision_key(reg["expressionType"], reg["expression"]))
            except ValueError as error:
                log.warning("subscription bits: %s of %s on %s ignored: %s", reg, group, topic, error)
        slots = {k: v for k, v in state.bits.get(topic, {}).items() if k in wanted}
        free = sorted(set(range(MAX_SLOTS)) - {v["slot"] for v in slots.values()})
        for key in sorted(wanted - set(slots)):
            if not free:
                log.warning("subscription bits: topic %s has %d slots taken; %r gets none",
                            topic, MAX_SLOTS, key)
                continue
            ends = {q: hi for q, (lo, hi) in state.queues.get(topic, {}).items()}
            slots[key] = {"slot": free.pop(0), "from": ends}
        if slots:
            out[topic] = slots
    return out


def usable_slot(state, topic: str, key: Optional[str], starts: Dict[int, int]) -> Optional[int]:
    """The slot of ``key`` on ``topic`` when its bits cover every queue read from ``starts``
    (queue id -> first offset read), else None."""
    entry = state.bits.get(topic, {}).get(key) if key is not None else None
    if entry is None or any(s < entry["from"].get(q, 0) for q, s in starts.items()):
        return None
    return entry["slot"]


def bit_test(slot: int) -> Column:
    """The slot's bit of ``sub_bits`` as a boolean Column (null where the entry has none)."""
    mask = F.lit(1 << slot).cast("bigint")
    return F.col(S.SUB_BITS).bitwiseAND(mask) != F.lit(0).cast("bigint")
