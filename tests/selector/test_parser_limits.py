"""Literals and nesting at their limits (pure Python, no Spark).

Huge number literals fail fast with SelectorSyntaxError at their position, and float literals
read exactly as Java's Double.parseDouble reads them (issue 9.3). Nesting deeper than MAX_DEPTH is
refused while parsing, before the rest of the text is even lexed, and parsing never copies the
LALR parser state per token, which made it quadratic (issue 9.8). No test here measures time:
"early" is counted in tokens lexed.
"""
from __future__ import annotations

import pytest
from lark.parsers.lalr_parser_state import ParserState

from rocketfilter.selector import SelectorSyntaxError, parse
from rocketfilter.selector import parser as P
from rocketfilter.selector.parser import LONG_MAX, MAX_DEPTH

# --- integer literals ---------------------------------------------------------------------------


@pytest.mark.parametrize("digits", [20, 4_300, 4_301, 5_000, 100_000])
@pytest.mark.parametrize("suffix", ["", "L"])
def test_integer_literals_above_long_max_are_syntax_errors(digits, suffix):
    text = "a = 1 OR b > " + "9" * digits + suffix
    with pytest.raises(SelectorSyntaxError) as info:
        parse(text)
    error = info.value
    assert error.position == 13 and "out of range for a long" in error.reason
    assert len(str(error)) < 400  # the literal is abbreviated, not echoed


def test_integer_literal_range_boundary():
    assert parse(f"a = {LONG_MAX}").ast.right.value == LONG_MAX
    assert parse(f"a = {LONG_MAX}L").ast.right.kind == "Long"
    with pytest.raises(SelectorSyntaxError, match="out of range"):
        parse(f"a = {LONG_MAX + 1}")


# --- float literals: expected values printed by java.lang.Double.parseDouble (JDK 17) -------------

HALFWAY = "1.00000000000000011102230246251565404236316680908203125"  # between 1.0 and its successor
FLOATS = [
    ("1." + "3" * 5000, 1.3333333333333333),
    ("0." + "0" * 5000 + "1e5001", 1.0),
    ("1" + "0" * 5000 + "e-5000", 1.0),
    ("." + "9" * 5000, 1.0),
    ("123." + "4" * 5000 + "e-" + "0" * 4000 + "5", 0.0012344444444444445),
    (HALFWAY, 1.0),                                  # a tie rounds to even
    (HALFWAY + "0" * 3000 + "1", 1.0000000000000002),  # a digit 3,000 places on breaks it
    ("2.4703282292062328e-324", 5e-324),
    ("1.7976931348623158e308", 1.7976931348623157e308),
    # Java gives 0 or infinity here, which RocketMQ refuses (SEMANTICS §4.2):
    ("0." + "0" * 5000 + "1", None),
    ("1e" + "9" * 5000, None),
    ("1e-" + "9" * 5000, None),
    ("9" * 400 + ".0", None),
    ("2.4703282292062327e-324", None),
    ("1.797693134862315808e308", None),
    ("1e2147483647", None),
    ("1e-2147483648", None),
    ("0." + "0" * 300 + "1e2147483648", None),  # Java gives up on the exponent: infinity
]


@pytest.mark.parametrize("literal,java", FLOATS,
                         ids=[f"{lit[:12]}..{len(lit)}" for lit, _ in FLOATS])
def test_float_literals_read_as_java_reads_them(literal, java):
    text = "a > " + literal
    if java is None:
        with pytest.raises(SelectorSyntaxError) as info:
            parse(text)
        assert info.value.position == 4 and "out of range" in info.value.reason
    else:
        assert parse(text).ast.right.value == java


def test_java_exponent_overflow_rule():
    """FloatingDecimal stops trusting an exponent once the digits before its last reach
    Integer.MAX_VALUE / 10; the value is then infinite or zero, both refused."""
    from rocketfilter.selector.builder import _exponent_overflows

    assert not _exponent_overflows("2147483639")      # 214748363 before the last digit
    assert _exponent_overflows("2147483640")          # 214748364: flagged
    assert _exponent_overflows("-0002147483640")      # leading zeros do not count
    assert not _exponent_overflows("00000000000000000000005")


# --- nesting ------------------------------------------------------------------------------------

def _count_tokens(monkeypatch) -> list:
    """Count the tokens the parser lexes."""
    lexed = []
    real = P.tokenize

    def counting(text, *args):
        for token in real(text, *args):
            lexed.append(token)
            yield token

    monkeypatch.setattr(P, "tokenize", counting)
    return lexed


def test_deep_parentheses_are_refused_at_the_first_too_deep_one(monkeypatch):
    lexed = _count_tokens(monkeypatch)
    text = "(" * 10_000 + "a = 1" + ")" * 10_000
    with pytest.raises(SelectorSyntaxError, match=f"deeper than {MAX_DEPTH} levels") as info:
        parse(text)
    assert info.value.position == MAX_DEPTH  # the (MAX_DEPTH + 1)-th '('
    assert len(lexed) == MAX_DEPTH + 1


def test_parentheses_up_to_the_limit_parse():
    selector = parse("(" * MAX_DEPTH + "a = 1" + ")" * MAX_DEPTH + " AND b = 2")
    assert selector.matches({"a": "1", "b": "2"})


@pytest.mark.parametrize("build", [
    lambda n: "NOT " * n + "a",
    lambda n: "-" * n + "a = 1",
    lambda n: "a = 1" + " IS NULL" * n,
    lambda n: "a = 1" + " OR (b = 2 AND (c = 3" * n,
], ids=["not", "minus", "is-null", "nested-chains"])
def test_deep_trees_are_refused_before_the_text_is_read(monkeypatch, build):
    lexed = _count_tokens(monkeypatch)
    text = build(10_000)
    with pytest.raises(SelectorSyntaxError, match=f"deeper than {MAX_DEPTH} levels") as info:
        parse(text)
    assert 0 < info.value.position < len(text) // 5
    assert len(lexed) < 2 * MAX_DEPTH * 4  # a few tokens per level, not the 10,000 levels


def test_parsing_never_copies_the_parser_state(monkeypatch):
    """Copying the LALR state before each token (to undo a token that ends the selector) cost
    O(stack) per token: quadratic on deep input. The tables are consulted instead."""
    def refuse(*args, **kwargs):
        raise AssertionError("ParserState.copy called while parsing")

    monkeypatch.setattr(ParserState, "copy", refuse)
    text = "(" * MAX_DEPTH + "a = 1" + ")" * MAX_DEPTH + " b = 2"  # with ignored trailing input
    assert parse(text).ast == parse("a = 1").ast
    assert parse("a IN (" + ", ".join(f"'v{i}'" for i in range(3000)) + ")").matches({"a": "v7"})
