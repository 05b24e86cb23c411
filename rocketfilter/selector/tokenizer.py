"""The selector lexer: RocketMQ's JavaCC token manager, rebuilt (SEMANTICS §3).

At each position the longest token wins; between tokens of equal length the kind declared first
wins (keywords, DECIMAL, FLOAT, STRING, ID, operators). Tokens are produced lazily, one at a time
as the parser asks, because text after the end of a complete selector is never lexed (§4.4).
"""
from __future__ import annotations

import re
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
                                  expected=("a token",))
    value = text[pos:best_end]
    if best_kind == "ID" and value.upper() in KEYWORDS:
        best_kind = value.upper()  # keywords are declared before ID and win at equal length
    elif best_kind == "OP":
        best_kind = OPERATORS[value]
    return Token(best_kind, value, pos, best_end)


def tokenize(text: str) -> Iterator[Token]:
    """Yield tokens lazily; a lexical error is raised only when the bad token is asked for."""
    pos = 0
    while True:
        pos = _skip(text, pos)
        if pos >= len(text):
            return
        if text.startswith("/*", pos):
            raise SelectorSyntaxError("Lexical error: unterminated comment", text, pos,
                                      expected=("*/",))
        token = _lex_one(text, pos)
        yield token
        pos = token.end
