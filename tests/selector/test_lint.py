"""Selector lint (issue 10.3): the cases in lint_cases.json, the truth of every claim a finding
makes (checked with the reference evaluator), strict parsing, and the compile-error hints.
Pure Python, no Spark.
"""
from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from rocketfilter.selector import (SelectorEvaluationError, SelectorSyntaxError, SelectorWarning,
                                   parse)
from rocketfilter.selector.evaluate import evaluate
from rocketfilter.selector.lint import CHECKS, ERROR, lint
from rocketfilter.selector.parser import parse_ast

from ..conftest import conformance

CASES = json.loads((Path(__file__).parent / "lint_cases.json").read_text(encoding="utf-8"))
LINTED = [c for c in CASES if "expected" in c]
REFUSED = [c for c in CASES if "raises" in c]
WORDS = {True: "TRUE", False: "FALSE", None: "NULL", ERROR: "throws"}


def _known(case):
    known = case["known_properties"]
    return known if not isinstance(known, list) else set(known)


@pytest.mark.parametrize("case", LINTED, ids=[c["selector"] for c in LINTED])
def test_lint_case(case):
    found = parse(case["selector"]).lint(_known(case))
    assert [[w.code, w.position] for w in found] == case["expected"], [str(w) for w in found]
    if "fix" in case:
        assert any(case["fix"] in w.fix for w in found), [w.fix for w in found]


@pytest.mark.parametrize("case", REFUSED, ids=[c["selector"] for c in REFUSED])
def test_compile_errors_say_why_and_how_to_fix(case):
    with pytest.raises(SelectorSyntaxError) as info:
        parse(case["selector"])
    assert info.value.position == case["raises"]
    assert case["hint"] in info.value.hint and case["hint"] in str(info.value)


def _java(expression: str, props: dict):
    """The reference evaluator's answer, ERROR where Java throws (not the linter's helper)."""
    try:
        return evaluate(parse_ast(expression), props)
    except SelectorEvaluationError:
        return ERROR


def _check_claims(text: str, known, found) -> None:
    samples = known if isinstance(known, dict) else {}
    for w in found:
        assert w.code in CHECKS
        assert "\n" not in str(w) and str(w).endswith(w.fix)
        if w.position is not None:
            line = text.count("\n", 0, w.position) + 1
            col = w.position - (text.rfind("\n", 0, w.position) + 1) + 1
            prefix = f"col {col}: " if line == 1 else f"line {line} col {col}: "
            assert str(w).startswith(prefix), (str(w), prefix)
        for claim in w.claims:
            assert _java(claim.expression, dict(claim.props)) == claim.outcome, (str(w), claim)
            assert f"`{claim.expression}`" in w.message, (w.message, claim.expression)
            assert WORDS[claim.outcome] in w.message, (w.message, claim.outcome)
            for name, value in claim.props.items():  # a sample, or an example if none is given
                given = [v for v in samples.get(name, ()) if v]  # '' is absent on the broker
                assert not given or value in given, (claim, samples)
        if w.code == "ignored-trailing-input":  # the ignored text changes nothing
            assert parse_ast(text[:w.position]) == parse_ast(text)
        fixed = re.search(r"write `([^`]*)`|`([^`]*)` \(AND", w.fix)
        if w.code in ("integer-literal-vs-decimal", "non-numeric-value") and fixed:
            rewrite = fixed.group(1) or fixed.group(2)
            for claim in w.claims:  # the suggested selector no longer throws on those values
                assert _java(rewrite, dict(claim.props)) != ERROR, (w.fix, claim)


@pytest.mark.parametrize("case", LINTED, ids=[c["selector"] for c in LINTED])
def test_every_claim_is_what_the_evaluator_says(case):
    _check_claims(case["selector"], _known(case), lint(case["selector"], _known(case)))


def test_claims_hold_on_the_conformance_selectors():
    """Each compiling conformance selector, linted with its case's properties as the samples."""
    checked = 0
    for case in conformance.compiled("sql92_cases.jsonl"):
        known = {k: [v] for k, v in case["props"].items()} if "props" in case else None
        found = lint(case["expr"], known)
        _check_claims(case["expr"], known, found)
        checked += len(found)
    assert checked > 500  # the checks do fire on real selectors


def test_warning_is_a_python_warning():
    [w] = parse("region").lint()
    assert isinstance(w, SelectorWarning) and isinstance(w, Warning)
    assert (w.code, w.position) == ("bare-property", 0) and str(w).startswith("col 1: ")
    with pytest.warns(SelectorWarning, match="never TRUE"):
        warnings.warn(w)


def test_strict_parsing_refuses_ignored_input():
    text = "amount > 100.0 AN region = 'eu'"
    assert parse(text).ast == parse("amount > 100.0").ast  # the default is RocketMQ's
    with pytest.raises(SelectorSyntaxError) as info:
        parse(text, strict=True)
    assert info.value.position == 15 and "AND" in info.value.hint
    assert "'='" in info.value.expected  # what could have continued the selector
    for complete in ("a = 1", "a = 1 -- a comment\n", "a = 1 /* c */ ", "(a = 1)"):
        assert parse(complete, strict=True).ast == parse("a = 1").ast


@pytest.mark.parametrize("known,message", [
    ("amount", "not a single str"),
    ({"amount": "19.99"}, "iterable of sample values"),
    ({"amount": [19.99]}, "as strings"),
    ([1], "must be strings"),
])
def test_known_properties_are_checked(known, message):
    with pytest.raises(TypeError, match=message):
        parse("amount > 1").lint(known)


def test_empty_samples_are_absent_values():
    """The broker has no empty values: '' as a sample says nothing about the property."""
    assert parse("flag = FALSE").lint({"flag": ["", "false"]}) == []


def test_checks_are_registered_once_with_kebab_case_codes():
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", code) for code in CHECKS)
    assert len(CHECKS) >= 9


def test_nan_and_infinity_are_counted_with_the_fix():
    """Issue 19.4: `amount > 100.0` delivers amount = 'NaN' (Double.compareTo puts NaN above every
    number): with a sample's counts the finding says how many and how to leave them out."""
    known = {"amount": {"19.99": 900, "NaN": 49, "Infinity": 2, "250.5": 49}}
    [w] = lint("amount > 100.0", known)
    assert (w.code, w.position) == ("nan-or-infinity-value", 0)
    assert "is TRUE on amount = 'NaN' (49) and 'Infinity' (2), 51 sampled messages in all: " in w.message
    assert w.fix == "to leave them out write `amount NOT IN ('NaN', 'Infinity') AND amount > 100.0`"
    rewrite = re.search(r"write `([^`]*)`", w.fix).group(1)
    assert [_java(rewrite, {"amount": v}) for v in ("NaN", "Infinity", "250.5")] == [False, False, True]
    _check_claims("amount > 100.0", known, [w])
    # `<` fails them: the fix says how to deliver them if that is wanted.
    [w] = lint("amount < 1.5", {"amount": ["NaN", "1.0", "NaN"]})
    assert "is FALSE on amount = 'NaN' (2 sampled messages): " in w.message
    assert "`amount IN ('NaN') OR amount < 1.5`" in w.fix
    # An integer literal throws on NaN already (that finding says so); plain numbers say nothing.
    assert [x.code for x in lint("amount > 100", {"amount": ["NaN"]})] == ["integer-literal-vs-decimal"]
    assert lint("amount > 100.0", {"amount": ["1.5", "2"]}) == []
    with pytest.raises(TypeError, match="positive int"):
        lint("amount > 1.0", {"amount": {"NaN": 0}})
