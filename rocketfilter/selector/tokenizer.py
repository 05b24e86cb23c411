"""The selector lexer: RocketMQ's JavaCC token manager, rebuilt (SEMANTICS §3).

At each position the longest token wins; between tokens of equal length the kind declared first
wins (keywords, DECIMAL, FLOAT, STRING, ID, operators). Tokens are produced lazily, one at a time
as the parser asks, because text after the end of a complete selector is never lexed (§4.4).
"""
from __future__ import annotations

import re
import unicodedata
from typing import Iterator, NamedTuple

from .errors import SelectorSyntaxError

KEYWORDS = ("NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS",
            "CONTAINS", "STARTSWITH", "ENDSWITH")

# Terminal names as the lark grammar declares them, in JavaCC's declaration order.
OPERATORS = {"=": "EQ", "<>": "NE", ">": "GT", ">=": "GE", "<": "LT", "<=": "LE",
             "(": "LPAR", ",": "COMMA", ")": "RPAR", "+": "PLUS", "-": "MINUS"}

_SKIP = re.compile(r"[ \t\n\r\f]+")
# A line comment needs its terminating newline; without one, "--" lexes as two minus signs.
_LINE_COMMENT = re.compile(r"--[^\n\r]*(?:\r\n|\n|\r)")
_BLOCK_COMMENT = re.compile(r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/")
_ORDERED = (
    ("DECIMAL", re.compile(r"[1-9][0-9]*[lL]?|0")),
    ("FLOAT", re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
                         r"|[0-9]+[eE][+-]?[0-9]+")),
    ("STRING", re.compile(r"'(?:[^']|'')*'")),
    ("ID", re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")),
    ("OP", re.compile(r"<>|>=|<=|[=><(),+\-]")),
)


# What a character that cannot start a token was probably meant to be.
_LEXICAL_HINTS = {
    '"': "strings take single quotes ('text'); there are no double-quoted strings or names",
    "'": "this string literal is never closed (a quote inside a string is written '')",
    "!": "there is no '!' or '!=': write '<>' for not-equal and NOT (...) to negate",
    "|": "there is no '||': write OR",
    "&": "there is no '&&': write AND",
    ";": "a selector is one expression: remove the ';'",
    ".": "a '.' belongs to a number (1.5, .5): property names cannot contain dots",
    "`": "there are no quoted names: a property name is [A-Za-z_$][A-Za-z0-9_$]*",
    "?": "there are no bind parameters: write the value",
    "[": "there are no arrays: use IN ('a', 'b')",
    "#": "there are no # comments: write -- comment (ended by a new line) or /* comment */",
}
for _op in "*/%":
    _LEXICAL_HINTS[_op] = "arithmetic is not supported (and LIKE patterns do not exist)"


def lexical_hint(ch: str) -> str:
    """Why `ch` cannot start a token, and what was probably meant."""
    if ch in _LEXICAL_HINTS:
        return _LEXICAL_HINTS[ch]
    if ch.isspace() or unicodedata.category(ch) == "Zs":
        return (f"U+{ord(ch):04X} is not whitespace here: only space, tab, CR, LF and form feed "
                "separate tokens")
    if ch.isalnum():
        return "property names are ASCII only: [A-Za-z_$][A-Za-z0-9_$]*"
    return ""


class Token(NamedTuple):
    type: str
    value: str
    start: int
    end: int


def _skip(text: str, pos: int) -> int:
    """Skip whitespace and comments (JavaCC SKIP and SPECIAL_TOKEN), returning the next position."""
    while True:
        m = _SKIP.match(text, pos) or _BLOCK_COMMENT.match(text, pos)
        if m is None:
            m = _LINE_COMMENT.match(text, pos)
            # Longest match: "--x\n" as a comment beats "-" as an operator.
            if m is None:
                return pos
        pos = m.end()


def _lex_one(text: str, pos: int) -> Token:
    best_kind, best_end = None, pos
    for kind, pattern in _ORDERED:
        m = pattern.match(text, pos)
        if m is not None and m.end() > best_end:  # strictly longer: earlier kinds win ties
            best_kind, best_end = kind, m.end()
    if best_kind is None:
        raise SelectorSyntaxError(f"Lexical error: unexpected character {text[pos]!r}", text, pos,
                                  expected=("a token",), hint=lexical_hint(text[pos]))
    value = text[pos:best_end]
    if best_kind == "ID" and value.upper() in KEYWORDS:
        best_kind = value.upper()  # keywords are declared before ID and win at equal length
    elif best_kind == "OP":
        best_kind = OPERATORS[value]
    return Token(best_kind, value, pos, best_end)


def tokenize(text: str, pos: int = 0) -> Iterator[Token]:
    """Yield tokens from `pos` on, lazily: a lexical error is raised only when the bad token is
    asked for."""
    while True:
        pos = _skip(text, pos)
        if pos >= len(text):
            return
        if text.startswith("/*", pos):
            raise SelectorSyntaxError("Lexical error: unterminated comment", text, pos,
                                      expected=("*/",), hint="close it with */")
        token = _lex_one(text, pos)
        yield token
        pos = token.end
