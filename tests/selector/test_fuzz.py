"""Fuzzing the selector compiler: whatever the text, `parse` either returns a Selector or raises
`SelectorSyntaxError` (a ValueError) with a position inside the text -- never another exception
(no IndexError, RecursionError, lark internals...). Pure Python, no Spark.

Inputs: arbitrary Unicode (surrogates too), text over the selector alphabet, token soup from the
lexical vocabulary of SEMANTICS §3, mutations of the conformance expressions (insert, delete,
replace, splice, duplicate, case flips), and long or deeply nested inputs.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketfilter.selector import SelectorEvaluationError, SelectorSyntaxError, parse

from ..conftest import conformance

EXPRESSIONS = tuple(sorted({case["expr"] for case in conformance.jsonl("sql92_cases.jsonl")}))

# Property maps every compiled selector is also evaluated on (the evaluator must only ever
# answer True/False/None or raise SelectorEvaluationError).
PROBE_PROPS = ({}, {"a": "1", "b": "x", "c": "NaN", "TAGS": "TagA"},
               {"a": "x", "b": "2", "c": "", "flag": "true"})


def check_parse(text: str):
    """The fuzz property; returns the Selector or None when the text does not compile."""
    try:
        selector = parse(text)
    except SelectorSyntaxError as e:
        assert isinstance(e, ValueError)
        assert isinstance(e.position, int) and 0 <= e.position <= len(text), (
            f"position {e.position} outside [0, {len(text)}] for {text!r}: {e}")
        str(e)  # the message renders
        return None
    assert selector.text == text
    for props in PROBE_PROPS:
        try:
            result = selector.evaluate(props)
        except SelectorEvaluationError:
            continue
        assert result in (True, False, None), f"{text!r} on {props} evaluated to {result!r}"
    return selector


FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])

# --- vocabulary ---------------------------------------------------------------------------------

KEYWORDS = ("NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS",
            "STARTSWITH", "ENDSWITH")
OPERATORS = ("=", "<>", ">", ">=", "<", "<=", "(", ",", ")", "+", "-")
NOT_OPERATORS = ("!=", "==", "*", "/", "%", "||", ";", "!", "#", '"', "`", "\\", "?", "@", "&",
                 "[", "]", "{", "}", "^", "~", "|", ":", ".")
TOKENS = KEYWORDS + OPERATORS + NOT_OPERATORS + (
    "a", "b", "c", "TAGS", "NOTa", "_x$", "$", "now", "andb", "nullx", "LIKE", "ESCAPE",
    "0", "1", "007", "0x10", "0L", "5l", "9223372036854775807", "9223372036854775808",
    "99999999999999999999", "1.5", ".5", "5.", "5e", "5E10", "5.E-3", "1e400", "0.0", "1e-400",
    "4.9e-324", "1.5f", "'x'", "''", "''''", "'it''s'", "'unterminated", "'", "'\n'", "'😀'",
    "--x\n", "--", "--x", "/* c */", "/*", "*/", "/**/", " ", "\t", "\n", "\r\n", "\f",
    "\u00a0", "\u3000", "\v", "\x00", "٥", "é",
)
SELECTOR_CHARS = "abcTAGSnotrueflsiNOTRUEFLSI_$0123456789.eElL'\"=<>()+-,*/!#\n\t\r\f \u00a0٥😀"

SEPARATORS = ("", " ", " ", " ", "\t", "\n", "/**/", "--c\n")
# Every token in its spellings (keywords are case-insensitive), then separators as tokens too.
TOKEN_VARIANTS = tuple(dict.fromkeys(
    v for t in TOKENS for v in ((t, t.lower(), t.swapcase()) if t.isalpha() else (t,))))
_tokens = st.sampled_from(TOKEN_VARIANTS)
token_soup = st.lists(st.sampled_from(TOKEN_VARIANTS + SEPARATORS[1:] * 8), max_size=40).map("".join)


MUTATIONS = ("insert", "delete", "replace", "token", "splice", "duplicate", "case", "unicode")


def mutate(text: str, seed: int, edits: int) -> str:
    """`edits` random edits of `text`, reproducible from `seed` (a seeded Random is much cheaper
    than one hypothesis draw per choice; the failing text itself is what a report needs)."""
    rnd = random.Random(seed)
    for _ in range(edits):
        n = len(text)
        i = rnd.randint(0, n)
        j = rnd.randint(i, min(n, i + 6))
        kind = rnd.choice(MUTATIONS)
        if kind == "insert":
            text = text[:i] + rnd.choice(SELECTOR_CHARS) + text[i:]
        elif kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "replace":
            text = text[:i] + "".join(rnd.choices(SELECTOR_CHARS, k=rnd.randint(1, 3))) + text[j:]
        elif kind == "token":
            text = text[:i] + rnd.choice(SEPARATORS) + rnd.choice(TOKEN_VARIANTS) + text[i:]
        elif kind == "splice":
            other = rnd.choice(EXPRESSIONS)
            k = rnd.randint(0, len(other))
            text = text[:i] + other[k:k + rnd.randint(1, 12)] + text[j:]
        elif kind == "duplicate":
            text = text[:j] + text[i:j] * rnd.randint(1, 4) + text[j:]
        elif kind == "case":
            text = text[:i] + text[i:j].swapcase() + text[j:]
        else:  # any code point, surrogates included
            text = text[:i] + chr(rnd.choice((rnd.randint(0, 0x7F), rnd.randint(0x80, 0x10FFFF),
                                              rnd.randint(0xD800, 0xDFFF)))) + text[j:]
    return text


mutated_expression = st.builds(mutate, st.sampled_from(EXPRESSIONS), st.integers(0, 2**32),
                               st.integers(1, 5))


# --- the fuzz tests -----------------------------------------------------------------------------

@settings(FUZZ, max_examples=500)
@given(st.text(st.characters(exclude_categories=()), max_size=40))
def test_arbitrary_unicode(text):
    check_parse(text)


@settings(FUZZ, max_examples=600)
@given(st.text(SELECTOR_CHARS, max_size=60))
def test_selector_alphabet(text):
    check_parse(text)


@settings(FUZZ, max_examples=800)
@given(token_soup)
def test_token_soup(text):
    check_parse(text)


@settings(FUZZ, max_examples=1200)
@given(mutated_expression)
def test_mutated_conformance_expressions(text):
    check_parse(text)


def test_conformance_expressions_themselves():
    """The unmutated seeds, compiled or not, behave (830-odd distinct texts)."""
    for text in EXPRESSIONS:
        check_parse(text)


@settings(FUZZ, max_examples=60)
@given(prefix=st.sampled_from(("(", "-", "+", "NOT ", "- ", "NOT (", "(-", "-(")),
       depth=st.integers(1, 120), core=st.sampled_from(("a", "a = 1", "1", "'x'", "a > 1", "")),
       closing=st.integers(0, 130), tail=st.sampled_from(("", " AND b", " OR TRUE", " = 1", ")")))
def test_nesting_moderate(prefix, depth, core, closing, tail):
    """Nesting well within the supported depth, with balanced and unbalanced closers."""
    check_parse(prefix * depth + core + ")" * closing + tail)


# Long inputs, many tokens, and deep nesting up to and beyond the 400-level limit.
LONG_INPUTS = {
    "parens-300": "(" * 300 + "a" + ")" * 300,
    "parens-unclosed-300": "(" * 300 + "a",
    "parens-only-5000": ")" * 5000,
    "string-100k": "a = '" + "x''" * 33_000 + "'",
    "unterminated-string-100k": "a = '" + "x" * 100_000,
    "identifier-100k": "a" * 100_000 + " IS NULL",
    "digits-1000": "a = " + "9" * 1000,
    "float-digits-1000": "a = 0." + "0" * 1000 + "1",
    "comment-100k": "/*" + "*" * 100_000 + "*/ a",
    "unterminated-comment-100k": "a = 1 OR /*" + "x" * 100_000,
    "line-comment-100k": "a = 1 --" + "x" * 100_000,
    "whitespace-100k": " " * 100_000 + "a",
    "trailing-junk-100k": "a = 1 " + "#" * 100_000,
    "in-list-100": "a IN (" + ", ".join(f"'v{i}'" for i in range(100)) + ")",
    "not-450": "NOT " * 450 + "a",
    # Many tokens: parsing once deep-copied the LALR value stack before every token, which was
    # quadratic (a 1,000-string IN list took 13 s) and overflowed on deep trees.
    "parens-5000": "(" * 5000 + "a" + ")" * 5000,
    "parens-unclosed-5000": "(" * 5000 + "a",
    "in-list-2000": "a IN (" + ", ".join(f"'v{i}'" for i in range(2000)) + ")",
    "and-chain-390": "a = 1 AND " * 390 + "b = 2",
    "or-chain-1000": "a = 1 OR " * 1000 + "b = 2",
    "neg-398-within-depth-limit": "-" * 397 + "a = 1",
    "neg-1000": "-" * 1000 + "a = 1",
    # A compile error whose message renders a 1000-deep operand (ast.to_text recurses).
    "neg-1000-not-boolean": "a AND " + "-" * 1000 + "1",
    "not-1000-compared": "(" + "NOT " * 1000 + "a) > 1",
}


@pytest.mark.parametrize("text", LONG_INPUTS.values(), ids=LONG_INPUTS.keys())
def test_long_and_deep_inputs(text):
    check_parse(text)

