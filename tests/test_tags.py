"""Tag codes, subscription parsing and the broker/client tag checks (SEMANTICS §2), against
hashcode_cases.json, in Python and as Spark Columns."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from .conftest import conformance
from rocketfilter.javalang import utf16_units
from rocketfilter.message import java_utf8_bytes
from rocketfilter.tags import (
    SUB_ALL,
    SubscriptionData,
    build_subscription,
    client_accepts,
    delivered,
    is_matched_by_consume_queue,
    is_tag_type,
    java_hash,
    java_split_tags,
    java_trim,
    tags_code,
)
from rocketfilter.tag_columns import tag_code_predicate, tag_exact_predicate, tags_code_column

HASH_FILE = "hashcode_cases.json"


@pytest.mark.parametrize("case", conformance.params(HASH_FILE, "hash"))
def test_hash_case(case):
    s = case["s"]
    got = (java_hash(s), tags_code(s), len(utf16_units(s)), len(java_utf8_bytes(s)))
    want = (case["hashCode"], case["tagsCode"], case["utf16_len"], case["utf8_len_java"])
    assert got == want, f"{case['id']} s={s!r}: got (hash, tagsCode, utf16, utf8)={got}, want {want}"


def test_tags_code_of_absent_or_empty_tag_is_zero():
    assert tags_code(None) == 0
    assert tags_code("") == 0
    assert tags_code("a||b") == java_hash("a||b")


def _check_build(case):
    """Build the case's subscription, or check the case's error; returns the subscription."""
    if "error" in case:
        with pytest.raises(ValueError) as info:
            build_subscription("TopicTest", case["sub"], case["type"])
        java_message = case["error"].split(": ", 1)[1]
        assert java_message in str(info.value), f"{case['id']}: got {info.value!r}, want {case['error']!r}"
        return None
    sub = build_subscription("TopicTest", case["sub"], case["type"])
    got = (sub.sub_string, sub.expression_type, set(sub.tags_set), set(sub.code_set))
    want = (case["subString"], case["expressionType"], set(case["tagsSet"]), set(case["codeSet"]))
    assert got == want, f"{case['id']}: got {got}, want {want}"
    assert len(sub.tags_set) == len(case["tagsSet"]) and len(sub.code_set) == len(case["codeSet"]), case["id"]
    return sub


@pytest.mark.parametrize("case", conformance.params(HASH_FILE, "tag_subscriptions"))
def test_tag_subscription_case_python(case):
    sub = _check_build(case)
    if sub is None:
        return
    for msg in case["msgs"]:
        tag = msg["tag"]
        got = {
            "tagsCode": tags_code(tag),
            "broker_cq_match": is_matched_by_consume_queue(sub, msg["tagsCode"]),
            "broker_cq_match_if_tagscode_null": is_matched_by_consume_queue(sub, None),
            "MIRRORED_client_match": client_accepts(sub, tag),
            "MIRRORED_delivered": delivered(sub, tag),
        }
        want = {key: msg[key] for key in got}
        assert got == want, f"{case['id']} tag={tag!r}: got {got}, want {want}"


def test_tags_code_column_is_java_hash_code(spark):
    """The Column's tag code against Java's for every hash case (ASCII, BMP, outside the BMP,
    up to 40 characters), around the unrolled sum's 16-character edge, and null: one job."""
    import random

    rng = random.Random(20261128)
    alphabet = ["a", "Z", "0", "|", " ", "\x00", "\x7f", "\u00e9", "\u4e2d", "\ud7ff", "\ue000", "\uffff",
                "\U0001f600", "\U0010ffff"]
    strings = [c["s"] for c in conformance.cases(HASH_FILE, "hash") if not _lone_surrogate(c["s"])]
    strings += ["x" * n for n in range(14, 19)] + ["\u00e9" * 16, "\u00e9" * 17, "\U0001f600" * 8]
    strings += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24))) for _ in range(300)]
    df = spark.createDataFrame([(i, s) for i, s in enumerate(strings)] + [(len(strings), None)],
                               "i int, tags string")
    got = {r.i: r.code for r in df.select("i", tags_code_column("tags").alias("code")).collect()}
    want = {i: tags_code(s) for i, s in enumerate(strings + [None])}
    assert got == want, [(strings[i] if i < len(strings) else None, got[i], want[i])
                         for i in want if got[i] != want[i]][:5]


def _lone_surrogate(s: str) -> bool:
    """Strings Spark cannot hold (UTF-8 has no lone surrogates)."""
    try:
        s.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


@pytest.fixture(scope="module")
def spark_tag_results(spark):
    """Every subscription case's messages through the Column predicates, in one Spark job:
    {(case id, message index): (broker, broker if tags_code null, client, delivered)}."""
    rows, columns = [], {"broker": F, "broker_null": F, "client": F}  # grown into flat CASEs
    for case in conformance.cases(HASH_FILE, "tag_subscriptions"):
        if "error" in case:
            continue
        sub = build_subscription("TopicTest", case["sub"], case["type"])
        rows += [(case["id"], i, m["tag"], m["tagsCode"]) for i, m in enumerate(case["msgs"])]
        is_case = F.col("id") == case["id"]
        predicates = {
            "broker": tag_code_predicate(sub, "tags_code"),
            "broker_null": tag_code_predicate(sub, F.lit(None).cast("bigint")),
            "client": tag_exact_predicate(sub, F.col("tags")),
        }
        columns = {name: columns[name].when(is_case, predicates[name]) for name in columns}
    df = spark.createDataFrame(rows, "id string, i int, tags string, tags_code bigint")
    out = df.select("id", "i", *(c.alias(n) for n, c in columns.items()),
                    (columns["broker"] & columns["client"]).alias("delivered")).collect()
    return {(r.id, r.i): (r.broker, r.broker_null, r.client, r.delivered) for r in out}


@pytest.mark.parametrize("case", conformance.params(HASH_FILE, "tag_subscriptions"))
def test_tag_subscription_case_spark(spark_tag_results, case):
    if _check_build(case) is None:
        return
    for i, msg in enumerate(case["msgs"]):
        got = spark_tag_results[(case["id"], i)]
        want = (msg["broker_cq_match"], msg["broker_cq_match_if_tagscode_null"],
                msg["MIRRORED_client_match"], msg["MIRRORED_delivered"])
        assert got == want, (f"{case['id']} tag={msg['tag']!r}: "
                             f"got (broker, broker_null, client, delivered)={got}, want {want}")


@pytest.mark.parametrize(
    "sub_string, tags",
    [
        (None, []), ("", []), ("*", []),
        (" * ", ["*"]), ("*||*", ["*"]), ("* || a", ["*", "a"]),
        ("   ", []),                      # blanks are not SUB_ALL: nothing is subscribed
        ("|||", ["|"]), ("||a", ["a"]), ("a||", ["a"]), ("a|||b", ["a", "|b"]),
        ("a|b", ["a|b"]), ("\u00a0a\u00a0", ["\u00a0a\u00a0"]), ("\ta \n|| b\x00", ["a", "b"]),
        ("a || a", ["a"]), ("|| ||", []),
    ],
)
def test_build_subscription_tag_lists(sub_string, tags):
    sub = build_subscription("T", sub_string)
    assert sub.tags_set == tags
    assert sub.code_set == list(dict.fromkeys(java_hash(t) for t in tags))
    assert sub.expression_type == "TAG"
    assert sub.sub_string == (SUB_ALL if sub_string in (None, "", "*") else sub_string)


@pytest.mark.parametrize("sub_string", ["||", "||||", "||||||"])
def test_build_subscription_nothing_left_raises(sub_string):
    with pytest.raises(ValueError, match="subString split error"):
        build_subscription("T", sub_string)


def test_build_subscription_colliding_tags_share_one_code():
    sub = build_subscription("T", "Aa || BB")
    assert sub.tags_set == ["Aa", "BB"] and sub.code_set == [2112]


@pytest.mark.parametrize("expression_type", ["SQL92", "", "tag", "CUSTOM"])
def test_build_subscription_non_tag_types(expression_type):
    sub = build_subscription("T", "a > 1 || b", expression_type)
    assert (sub.sub_string, sub.expression_type, sub.tags_set, sub.code_set) == (
        "a > 1 || b", expression_type, [], [])
    for empty in (None, ""):
        with pytest.raises(ValueError, match=f"Expression can't be null! {expression_type}"):
            build_subscription("T", empty, expression_type)


def test_java_split_and_trim():
    assert java_split_tags("|||") == ["", "|"]
    assert java_split_tags("a||||b||||") == ["a", "", "b"]
    assert java_split_tags("||") == []
    assert java_trim("\x00\x1f a \x20") == "a"
    assert java_trim("\u3000a\u00a0") == "\u3000a\u00a0"


def test_is_tag_type():
    assert [is_tag_type(t) for t in (None, "", "TAG", "tag", "SQL92")] == [True, True, True, False, False]


def test_consume_queue_check_uses_low_32_bits():
    sub = build_subscription("T", "TagA")
    code = java_hash("TagA")
    wide = code + (1 << 32)           # a long whose intValue is TagA's code
    assert is_matched_by_consume_queue(sub, wide)
    assert not is_matched_by_consume_queue(sub, code + 1)
    assert is_matched_by_consume_queue(build_subscription("T", "polygenelubricants"), (1 << 31))


def test_tag_columns_edge_cases(spark):
    """Out-of-int-range slot values, class-filter mode, no subscription and a blank one."""
    sub = build_subscription("T", "TagA || polygenelubricants")
    code = java_hash("TagA")
    values = [code, code + (1 << 32), code - (1 << 32), code + 1, -(1 << 31), 1 << 31, 0, -(1 << 63), None]
    class_mode = SubscriptionData(topic="T", sub_string="TagA", tags_set=["TagA"], code_set=[code],
                                  class_filter_mode=True)
    blank = build_subscription("T", "   ")
    df = spark.createDataFrame([(i, v, "other") for i, v in enumerate(values)], "i int, c bigint, tags string")
    out = df.select(
        "i", tag_code_predicate(sub, "c").alias("m"),
        tag_code_predicate(class_mode, "c").alias("class_b"), tag_exact_predicate(class_mode).alias("class_c"),
        tag_code_predicate(None, "c").alias("none_b"), tag_exact_predicate(None).alias("none_c"),
        tag_code_predicate(blank, "c").alias("blank"),
    ).collect()
    out.sort(key=lambda r: r.i)
    assert [r.m for r in out] == [is_matched_by_consume_queue(sub, v) for v in values]
    assert [r.m for r in out] == [True, True, True, False, True, True, False, False, True]
    assert all(r.class_b and r.class_c and r.none_b and r.none_c for r in out)
    assert [r.blank for r in out] == [v is None for v in values]


def test_class_filter_mode_and_missing_subscription_match_everything():
    sub = SubscriptionData(topic="T", sub_string="TagA", tags_set=["TagA"], code_set=[java_hash("TagA")],
                           class_filter_mode=True)
    assert is_matched_by_consume_queue(sub, 5) and client_accepts(sub, "other")
    assert is_matched_by_consume_queue(None, 5) and client_accepts(None, None)
    blank = build_subscription("T", "   ")
    assert not is_matched_by_consume_queue(blank, 0) and is_matched_by_consume_queue(blank, None)
