"""Java's String equality in the reference evaluator, without building UTF-16 code units.

A str without surrogate code points (U+D800-U+DFFF) has exactly one UTF-16 form, so Python's own
comparisons give Java's answer; the evaluator must then not convert anything (that conversion
made `=` on long values cost 0.57 s per MB, issue 9.7). Strings with surrogates, lone or as a
pair of code points, keep the exact UTF-16 path. The expected answers here come from encoding to
UTF-16 directly, independently of rocketfilter.javalang.
"""
from __future__ import annotations

import pytest

from rocketfilter import javalang as J
from rocketfilter.selector import parse


def utf16(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


@pytest.fixture
def no_utf16(monkeypatch):
    """Make every UTF-16 conversion helper fail loudly."""
    def refuse(*args):
        raise AssertionError("UTF-16 conversion of surrogate-free strings")

    for helper in ("utf16_units", "_utf16", "string_compare"):
        monkeypatch.setattr(J, helper, refuse)


SURROGATE_FREE = {
    "ascii": "x" * 10_000,
    "latin-1": "é" * 10_000,
    "bmp": "日本" * 5_000,
    "astral": "😀" * 5_000,  # one code point each in Python: no surrogate code points
}
FORMS = {
    "eq": ("a = 'LIT'", lambda v, lit: utf16(v) == utf16(lit)),
    "ne": ("a <> 'LIT'", lambda v, lit: utf16(v) != utf16(lit)),
    "eq-reversed": ("'LIT' = a", lambda v, lit: utf16(v) == utf16(lit)),
    "eq-properties": ("a = b", lambda v, lit: utf16(v) == utf16(lit)),
    "in": ("a IN ('LIT', 'zz')", lambda v, lit: utf16(v) == utf16(lit)),
    "not-in": ("a NOT IN ('LIT')", lambda v, lit: utf16(v) != utf16(lit)),
    "contains": ("a CONTAINS 'LIT'", lambda v, lit: utf16(lit) in utf16(v)),
    "startswith": ("a STARTSWITH 'LIT'", lambda v, lit: utf16(v).startswith(utf16(lit))),
    "endswith": ("a ENDSWITH 'LIT'", lambda v, lit: utf16(v).endswith(utf16(lit))),
}


@pytest.mark.parametrize("form", FORMS.values(), ids=FORMS.keys())
@pytest.mark.parametrize("value", SURROGATE_FREE.values(), ids=SURROGATE_FREE.keys())
def test_surrogate_free_strings_never_go_through_utf16(no_utf16, form, value):
    template, java = form
    # Equal, different only in the last character, and a prefix: each way a scan could go.
    for literal in (value, value[:-1] + "y", value[:100]):
        selector = parse(template.replace("LIT", literal))
        assert selector.evaluate({"a": value, "b": literal}) is java(value, literal)


PAIR, HIGH, LOW = "\U0001F600", "\ud83d", "\ude00"
WITH_SURROGATES = [  # (a, b): Java compares their UTF-16 code units
    (PAIR, HIGH + LOW),            # the same two units
    (HIGH + LOW + "x", PAIR + "x"),
    (HIGH, HIGH),                  # a lone surrogate equals itself
    (HIGH, LOW),
    ("x" + HIGH, "x" + LOW),
    (HIGH + LOW, LOW + HIGH),
    (PAIR, HIGH),                  # one unit is not two
    ("é" + HIGH, "é" + HIGH),
]


@pytest.mark.parametrize("a,b", WITH_SURROGATES)
def test_strings_with_surrogates_compare_as_utf16_units(a, b):
    same = utf16(a) == utf16(b)
    assert parse("a = b").evaluate({"a": a, "b": b}) is same
    assert parse("a <> b").evaluate({"a": a, "b": b}) is (not same)
    assert parse("b = a").evaluate({"a": a, "b": b}) is same
    assert parse(f"a IN ('{b}')").evaluate({"a": a}) is same
    assert parse(f"a NOT IN ('x', '{b}')").evaluate({"a": a}) is (not same)


def test_only_surrogates_take_the_utf16_path(monkeypatch):
    calls = []
    real = J.string_equals
    monkeypatch.setattr(J, "string_equals", lambda a, b: calls.append((a, b)) or real(a, b))
    assert parse("a = b").evaluate({"a": PAIR, "b": HIGH + LOW}) is True
    assert calls == [(PAIR, HIGH + LOW)]
    assert parse("a = b").evaluate({"a": PAIR, "b": PAIR + "x"}) is False
    assert len(calls) == 1
