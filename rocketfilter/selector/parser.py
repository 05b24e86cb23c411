"""Selector text -> typed AST, with RocketMQ's compile-time checks (SEMANTICS §4).

The lark grammar gives the shape; tokens are fed one at a time into its LALR parser, so that the
first token that cannot continue the selector ends it and the rest is never lexed (§4.4). Each
grammar rule's callback builds an AST node and runs the check RocketMQ runs for that construct.
"""
from __future__ import annotations

import math
from functools import lru_cache
from importlib import resources

import lark
from lark.exceptions import UnexpectedInput

from . import ast as A
from .errors import SelectorSyntaxError
from .tokenizer import tokenize

LONG_MAX = (1 << 63) - 1
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
DOUBLE_MIN_VALUE = 5e-324  # Java's Double.MIN_VALUE, the smallest positive subnormal
MAX_DEPTH = 400  # deeper selectors would overflow Python's stack in the evaluators

_READABLE = {
    "ID": "a property name", "STRING": "a string literal", "DECIMAL": "an integer literal",
    "FLOAT": "a float literal", "EQ": "'='", "NE": "'<>'", "GT": "'>'", "GE": "'>='", "LT": "'<'",
    "LE": "'<='", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "PLUS": "'+'", "MINUS": "'-'",
    "$END": "end of input",
}


class _CheckFailed(Exception):
    """A compile-time check failed inside a grammar callback; parse_ast adds the text."""

    def __init__(self, message: str, position: int):
        super().__init__(message)
        self.message, self.position = message, position


def _fail(message: str, token) -> None:
    raise _CheckFailed(message, getattr(token, "start_pos", 0) or 0)


def _show(node) -> str:
    """The operand for an error message; deep ones by kind only (to_text recurses)."""
    if _depth(node) > 50:
        return f"a {type(node).__name__} expression nested {_depth(node)} levels deep"
    return A.to_text(node)


def _as_boolean(node, token=None):
    """RocketMQ's asBooleanExpression: booleans pass, a bare property becomes BOOLCAST."""
    if A.is_boolean(node):
        return node
    if isinstance(node, A.Property):
        return A.BoolCast(node)
    _fail(f"Expression will not result in a boolean value: {_show(node)}", token)


def _check_equal_operands(left, right, op) -> None:
    for side in (left, right):
        if isinstance(side, A.BoolConstant) and side.value is None:
            _fail("NULL cannot be compared with '=' or '<>' (use IS NULL)", op)
    if (isinstance(left, A.BoolConstant) and isinstance(right, A.Constant)):
        _fail(f"'{_show(left)}' cannot be compared with '{_show(right)}'", op)


def _check_comparable(node, op) -> None:
    """checkLessThanOperand: only numeric constants and non-boolean expressions may be ordered."""
    if isinstance(node, A.Constant) and node.kind != A.STRING:
        return
    if A.is_constant(node) or A.is_boolean(node):
        _fail(f"Value '{_show(node)}' cannot be compared with {op.value!r}", op)


def _check_between_order(low, high, token) -> None:
    """With two constant bounds, RocketMQ rejects BETWEEN whose high bound is below the low one."""
    if not (A.is_constant(low) and A.is_constant(high)):
        return
    lo, hi = low.value, high.value
    if lo is None or hi is None or isinstance(lo, (bool, str)) or isinstance(hi, (bool, str)):
        _fail("Illegal values of between", token)  # unreachable after _check_comparable
    # Mixed Integer/Long/Double widen to double; same kinds compare exactly.
    if low.kind != high.kind and A.DOUBLE in (low.kind, high.kind):
        lo, hi = float(lo), float(hi)
    if hi < lo:
        _fail(f"Illegal values of between, left value({A.to_text(low)}) must be less than or "
              f"equal to right value({A.to_text(high)})", token)


def _compare(left, op, right, symbol=None):
    """REL(symbol, left, right) after checkLessThanOperand on both sides."""
    _check_comparable(left, op)
    _check_comparable(right, op)
    return A.Compare(symbol or op.value, left, right)


@lark.v_args(inline=True)
class _Builder(lark.Transformer):
    """One callback per grammar rule; runs during the LALR reductions, left to right."""

    def start(self, expr):
        return _as_boolean(expr)

    def or_(self, left, op, right):
        return A.Or(_as_boolean(left, op), _as_boolean(right, op))

    def and_(self, left, op, right):
        return A.And(_as_boolean(left, op), _as_boolean(right, op))

    def equal(self, left, op, right):
        _check_equal_operands(left, right, op)
        return A.Equal(left, right)

    def not_equal(self, left, op, right):
        return A.Not(self.equal(left, op, right))

    def is_null(self, left, _is, _null):
        return A.Equal(left, A.BoolConstant(None))

    def is_not_null(self, left, _is, _not, _null):
        return A.Not(A.Equal(left, A.BoolConstant(None)))

    def compare(self, left, op, right):
        return _compare(left, op, right)

    def string_op(self, left, op, search):
        return A.StringOp(op.type, left, _string_value(search), False)

    def not_string_op(self, left, _not, op, search):
        return A.StringOp(op.type, left, _string_value(search), True)

    def between(self, value, op, low, and_, high):
        ge = _compare(value, op, low, ">=")
        le = _compare(value, op, high, "<=")
        _check_between_order(low, high, and_)
        return A.And(ge, le)

    def not_between(self, value, _not, op, low, _and, high):
        return A.Or(_compare(value, op, low, "<"), _compare(value, op, high, ">"))

    def in_(self, left, op, _lpar, values, _rpar):
        return _in(left, op, values, False)

    def not_in(self, left, _not, op, _lpar, values, _rpar):
        return _in(left, op, values, True)

    def string_list(self, *tokens):
        return tuple(_string_value(t) for t in tokens if t.type == "STRING")

    def plus(self, _op, operand):
        return operand

    def neg(self, _op, operand):
        return A.Neg(operand)

    def not_(self, op, operand):
        return A.Not(_as_boolean(operand, op))

    def paren(self, _lpar, expr, _rpar):
        return expr

    def string(self, token):
        return A.Constant(_string_value(token), A.STRING)

    def decimal(self, token):
        text = token.value.rstrip("lL")
        value = int(text)
        if value > LONG_MAX:
            _fail(f"Integer literal {token.value} is out of range for a long", token)
        return A.Constant(value, A.INTEGER if value <= INT_MAX else A.LONG)

    def float_(self, token):
        value = float(token.value)
        if math.isinf(value) or value < DOUBLE_MIN_VALUE:
            _fail(f"Float literal {token.value} is out of range (0 < value <= Double.MAX_VALUE)",
                  token)
        return A.Constant(value, A.DOUBLE)

    def true(self, _token):
        return A.BoolConstant(True)

    def false(self, _token):
        return A.BoolConstant(False)

    def null(self, _token):
        return A.BoolConstant(None)

    def property(self, token):
        return A.Property(token.value)


def _string_value(token) -> str:
    return token.value[1:-1].replace("''", "'")


def _in(left, op, values, negated):
    if not isinstance(left, A.Property):
        _fail(f"Expected a property for IN expression, got: {_show(left)}", op)
    return A.In(left, values, negated)


_GRAMMAR = resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8")


class _NoLexer(lark.lexer.Lexer):
    """Placeholder lark requires; tokens are fed by hand from tokenizer.tokenize."""

    def __init__(self, lexer_conf):
        pass

    def lex(self, data):  # pragma: no cover - never called, tokens are fed directly
        return iter(())


_LARK = lark.Lark(_GRAMMAR, parser="lalr", lexer=_NoLexer, transformer=_Builder())


def _expected(interactive) -> tuple:
    names = sorted(interactive.accepts())
    return tuple(_READABLE.get(n, n) for n in names)


def _syntax_error(text, token, interactive) -> SelectorSyntaxError:
    expected = _expected(interactive)
    found = "end of input" if token is None else repr(token.value)
    pos = len(text) if token is None else token.start_pos
    return SelectorSyntaxError(f"Encountered {found}, expected one of: {', '.join(expected)}",
                               text, pos, expected)


def _depth(node) -> int:
    depth, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        depth = max(depth, d)
        stack.extend((c, d + 1) for c in A.children(n))
    return depth


@lru_cache(maxsize=256)
def parse_ast(text: str):
    """Compile selector `text` to its AST root (always a boolean node).

    Raises SelectorSyntaxError for everything RocketMQ rejects at compile time, with the
    position and what was expected there. Text after a complete selector is ignored, as the
    broker ignores it: ``parse_ast("a = 1 b = 2")`` is ``a = 1``.
    """
    if not isinstance(text, str):
        raise SelectorSyntaxError(f"A selector must be a string, not {type(text).__name__}")
    try:
        interactive = _LARK.parse_interactive("")
        last = None
        for tok in tokenize(text):
            token = lark.Token(tok.type, tok.value, start_pos=tok.start, end_pos=tok.end)
            # The AST is immutable, so a shallow snapshot suffices (a deep one is quadratic).
            before = interactive.copy(deepcopy_values=False)
            try:
                interactive.feed_token(token)
            except UnexpectedInput:
                # The first token that cannot continue ends the selector (§4.4) -- but only
                # if what came before is complete.
                interactive = before
                try:
                    return _finish(before.feed_eof(last))
                except UnexpectedInput:
                    raise _syntax_error(text, token, before) from None
            last = token
        try:
            return _finish(interactive.feed_eof(last))
        except UnexpectedInput:
            raise _syntax_error(text, None, interactive) from None
    except _CheckFailed as failed:
        raise SelectorSyntaxError(failed.message, text, failed.position) from None


def _finish(root):
    if _depth(root) > MAX_DEPTH:
        raise SelectorSyntaxError(f"Selector nests deeper than {MAX_DEPTH} levels")
    return root
