"""Selector text -> typed AST, with RocketMQ's compile-time checks (SEMANTICS §4).

The lark grammar gives the shape; tokens are fed one at a time into its LALR parser, so that the
first token that cannot continue the selector ends it and the rest is never lexed (§4.4). The
grammar's callbacks (builder.py) build the AST and run the check RocketMQ runs for each construct.

Parsing is linear in the input: whether a token can continue is read off the LALR tables without
touching the parser, and nesting deeper than MAX_DEPTH is refused where it happens.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Mapping, NamedTuple, Optional, Tuple

import lark
from lark.exceptions import UnexpectedInput
from lark.parsers.lalr_analysis import Shift

from . import ast as A
from .builder import (DEPTH_HINT, DEPTH_MESSAGE, DOUBLE_MIN_VALUE, INT_MAX, INT_MIN, LONG_MAX,
                      MAX_DEPTH, Builder, CheckFailed, start_recording, stop_recording)
from .errors import SelectorSyntaxError
from .hints import syntax_hint
from .tokenizer import Token, tokenize

__all__ = ["ParseTree", "parse_tree", "parse_ast", "readable", "MAX_DEPTH", "LONG_MAX", "INT_MIN",
           "INT_MAX", "DOUBLE_MIN_VALUE"]

_READABLE = {
    "ID": "a property name", "STRING": "a string literal", "DECIMAL": "an integer literal",
    "FLOAT": "a float literal", "EQ": "'='", "NE": "'<>'", "GT": "'>'", "GE": "'>='", "LT": "'<'",
    "LE": "'<='", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "PLUS": "'+'", "MINUS": "'-'",
    "$END": "end of input",
}

_GRAMMAR = resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8")


class _NoLexer(lark.lexer.Lexer):
    """Placeholder lark requires; tokens are fed by hand from tokenizer.tokenize."""

    def __init__(self, lexer_conf):
        pass

    def lex(self, data):  # pragma: no cover - never called, tokens are fed directly
        return iter(())


_LARK = lark.Lark(_GRAMMAR, parser="lalr", lexer=_NoLexer, transformer=Builder())
_CONF = _LARK.parse_interactive("").parser_state.parse_conf
# The LALR tables with plain-str keys (lark's keys are Tokens, whose __eq__ is Python code):
# state -> symbol -> (shifts?, next state or (rule length, rule name)).
_TABLE = {state: {str(symbol): (kind is Shift, arg if kind is Shift
                                else (len(arg.expansion), str(arg.origin.name)))
                  for symbol, (kind, arg) in actions.items()}
          for state, actions in _CONF.states.items()}
_TERMINALS = tuple(sorted({name for actions in _TABLE.values() for name in actions
                           if name.isupper()}))
# Tokens that start an operand: prefix NOT and '-' before one nest inside each other.
_OPERAND_STARTS = {"ID", "STRING", "DECIMAL", "FLOAT", "TRUE", "FALSE", "NULL"}
_OPERAND_ENDS = _OPERAND_STARTS | {"RPAR"}


class ParseTree(NamedTuple):
    """A compiled selector with what the parser saw: where each node came from, and where the
    selector ended.

    ``records`` maps ``id(node)`` to ``(node, start, end, depth, own_start, own_end)`` for every
    node of ``root``: character offsets into the text of the node with the parentheses around it,
    and of the node itself. ``stop`` is the first token the
    parser did not use, when text follows a complete selector (RocketMQ ignores it, §4.4),
    ``last`` the last token it used, and ``expected`` the token kinds that could have continued
    the selector instead of ``stop``.
    """

    root: A.Node
    records: Mapping[int, tuple]
    stop: Optional[Token]
    last: Optional[Token]
    expected: Tuple[str, ...]

    def span(self, node, own: bool = True) -> Tuple[int, int]:
        """(start, end) offsets of `node` in the text, with its parentheses if not `own`."""
        record = self.records[id(node)]
        return record[4:6] if own else record[1:3]


def _can_shift(state_stack: list, token_type: str) -> bool:
    """Whether the LALR parser would take `token_type`, after the reductions it implies, without
    changing its `state_stack` (lark's feed_token would run the reductions, and their callbacks,
    before finding out). Feeding the token then performs the same reductions, so the cost is
    linear over a parse."""
    depth, pushed = len(state_stack), []  # state_stack[:depth] stands; `pushed` is on top
    while True:
        top = pushed[-1] if pushed else state_stack[depth - 1]
        if top == _CONF.end_state:
            return token_type == "$END"
        action = _TABLE[top].get(token_type)
        if action is None:
            return False
        shifts, arg = action
        if shifts:
            return True
        size, name = arg
        taken = min(size, len(pushed))
        del pushed[len(pushed) - taken:]
        depth -= size - taken
        below = pushed[-1] if pushed else state_stack[depth - 1]
        pushed.append(_TABLE[below][name][1])


def _lark_token(tok: Token) -> lark.Token:
    return lark.Token(tok.type, tok.value, start_pos=tok.start, end_pos=tok.end)


def _expected(state_stack: list) -> Tuple[str, ...]:
    return tuple(t for t in _TERMINALS if _can_shift(state_stack, t))


def readable(expected: Tuple[str, ...]) -> Tuple[str, ...]:
    """Token kinds as a reader names them ("a property name", "'='", ...)."""
    return tuple(_READABLE.get(n, n) for n in expected)


def _syntax_error(text: str, found: Optional[Token], last: Optional[Token],
                  expected: Tuple[str, ...]) -> SelectorSyntaxError:
    shown_expected = readable(expected)
    shown = "end of input" if found is None else repr(found.value)
    pos = len(text) if found is None else found.start
    return SelectorSyntaxError(f"Encountered {shown}, expected one of: {', '.join(shown_expected)}",
                               text, pos, shown_expected, syntax_hint(last, found, set(expected)))


def _too_deep(tok: Token) -> CheckFailed:
    return CheckFailed(DEPTH_MESSAGE, tok.start, DEPTH_HINT)


def _parse(text: str, records: dict) -> ParseTree:
    interactive = _LARK.parse_interactive("")
    stack = interactive.parser_state.state_stack
    # Open parentheses, and prefix NOT/'-' since the last operand: each is a level of nesting
    # (of Java's recursive parser, and of the tree for NOT/'-'), counted before any node exists.
    parens = prefixes = 0
    last = stop = None
    for tok in tokenize(text):
        if not _can_shift(stack, tok.type):
            stop = tok  # the selector ends here, if what came before is complete (§4.4)
            break
        if tok.type == "LPAR":
            parens += 1
            if parens > MAX_DEPTH:
                raise _too_deep(tok)
        elif tok.type == "RPAR":
            parens -= 1
        elif tok.type == "MINUS" or (tok.type == "NOT" and (last is None
                                                            or last.type not in _OPERAND_ENDS)):
            prefixes += 1
            if prefixes > MAX_DEPTH:
                raise _too_deep(tok)
        elif tok.type in _OPERAND_STARTS:
            prefixes = 0
        interactive.feed_token(_lark_token(tok))
        last = tok
    if not _can_shift(stack, "$END"):
        raise _syntax_error(text, stop, last, _expected(stack))
    expected = _expected(stack) if stop is not None else ()
    root = interactive.feed_eof(_lark_token(last) if last else None)
    return ParseTree(root, records, stop, last, expected)


@lru_cache(maxsize=256)
def parse_tree(text: str) -> ParseTree:
    """Compile selector `text`, keeping spans and where the selector ended (see ParseTree).

    Raises SelectorSyntaxError for everything RocketMQ rejects at compile time, with the
    position, what was expected there and a hint.
    """
    if not isinstance(text, str):
        raise SelectorSyntaxError(f"A selector must be a string, not {type(text).__name__}")
    records = start_recording()
    try:
        return _parse(text, records)
    except CheckFailed as failed:
        raise SelectorSyntaxError(failed.message, text, failed.position,
                                  hint=failed.hint) from None
    except UnexpectedInput as e:  # pragma: no cover - _can_shift rules this out
        raise SelectorSyntaxError(f"Unexpected input: {e}", text, 0) from None
    finally:
        stop_recording()


def parse_ast(text: str) -> A.Node:
    """Compile selector `text` to its AST root (always a boolean node).

    Raises SelectorSyntaxError for everything RocketMQ rejects at compile time, with the
    position and what was expected there. Text after a complete selector is ignored, as the
    broker ignores it: ``parse_ast("a = 1 b = 2")`` is ``a = 1``.
    """
    return parse_tree(text).root
