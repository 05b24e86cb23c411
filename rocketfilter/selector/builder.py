"""The grammar's callbacks: AST nodes, RocketMQ's compile-time checks (SEMANTICS §4.2-§4.3), and
each node's source span and depth.

One callback per grammar rule, run during the LALR reductions, left to right. Every node built is
recorded with its span (for messages and lint) and its depth, so a selector nested too deeply is
refused as soon as the offending node is built instead of after the whole parse.
"""
from __future__ import annotations

import functools
import math
import re
import threading
from typing import Dict, Optional

import lark

from . import ast as A
from .hints import shorten

LONG_MAX = (1 << 63) - 1
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
DOUBLE_MIN_VALUE = 5e-324  # Java's Double.MIN_VALUE, the smallest positive subnormal
MAX_DEPTH = 400  # deeper selectors would overflow Python's stack in the evaluators
# (depth counts parentheses, NOT, minus and operators inside operands; never AND/OR chain length)
DEPTH_MESSAGE = f"Selector nests deeper than {MAX_DEPTH} levels"
DEPTH_HINT = "RocketMQ's parser would overflow its stack somewhat deeper; flatten the selector"
_LONG_DIGITS = len(str(LONG_MAX))
# FloatingDecimal flags an exponent whose digits reach Integer.MAX_VALUE / 10 before the last
# one, and then makes the value infinite or zero whatever the mantissa says.
_EXPONENT_OVERFLOW = (1 << 31) // 10
_NUMBER = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class CheckFailed(Exception):
    """A compile-time check failed inside a grammar callback; the parser adds the text."""

    def __init__(self, message: str, position: int, hint: str = ""):
        super().__init__(message)
        self.message, self.position, self.hint = message, position, hint


# --- spans and depth ----------------------------------------------------------------------------

class _Records(threading.local):
    """The records of the parse running on this thread:
    id(node) -> (node, start, end, depth, own_start, own_end).

    (own_start, own_end) is the text the node was built from; (start, end) also covers the
    parentheses and '+' signs around it. The node is kept in its record so that its id cannot
    be reused while the record lives.
    """
    nodes: Optional[Dict[int, tuple]] = None


RECORDS = _Records()


def start_recording() -> Dict[int, tuple]:
    RECORDS.nodes = {}
    return RECORDS.nodes


def stop_recording() -> None:
    RECORDS.nodes = None


def _measure(node, start: int, end: int, nodes: dict) -> int:
    """Record `node` and the new nodes under it (a callback builds a few at most); its depth."""
    record = nodes.get(id(node))
    if record is not None:
        return record[3]
    kids = A.children(node)
    depth = max((_measure(k, start, end, nodes) + (0 if _chained(node, k) else 1)
                 for k in kids), default=0) or 1
    if kids:  # a node built inside a callback spans its children
        start, end = min(nodes[id(k)][1] for k in kids), max(nodes[id(k)][2] for k in kids)
    nodes[id(node)] = (node, start, end, depth, start, end)
    return depth


def _chained(node, kid) -> bool:
    """Whether `kid` is the left step of the same AND/OR chain as `node`: a flat chain is read in
    a loop (RocketMQ's parser and every walker here), so its length is not nesting."""
    return isinstance(node, (A.And, A.Or)) and type(kid) is type(node) and kid is node.left


def _tracked(build):
    """Record the node a callback returns with the span of everything it was built from."""

    @functools.wraps(build)
    def tracked(self, *args):
        node = build(self, *args)
        nodes = RECORDS.nodes
        start = end = where = None
        for arg in args:
            if isinstance(arg, lark.Token):
                s, e = arg.start_pos, arg.end_pos
                where = s if where is None else where
            elif id(arg) in nodes:
                s, e = nodes[id(arg)][1:3]
            else:
                continue  # the strings of an IN list
            start, end = (s, e) if start is None else (min(start, s), max(end, e))
        record = nodes.get(id(node))
        if record is not None:  # parentheses or '+' around an existing node widen its span
            depth = record[3]
            nodes[id(node)] = (node, min(start, record[1]), max(end, record[2])) + record[3:]
        else:
            depth = _measure(node, start, end, nodes)
            nodes[id(node)] = (node, start, end, depth, start, end)
        if depth > MAX_DEPTH:
            raise CheckFailed(DEPTH_MESSAGE, where if where is not None else start, DEPTH_HINT)
        return node

    return tracked


def position(*candidates) -> int:
    """Where the first recorded node or token among `candidates` starts (0 when none is)."""
    for c in candidates:
        if isinstance(c, lark.Token):
            return c.start_pos or 0
        record = (RECORDS.nodes or {}).get(id(c))
        if record is not None:
            return record[1]
    return 0


def depth(node) -> int:
    """The depth of a tree (iterative: trees may be deeper than Python's recursion limit)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in A.children(n))
    return deepest


# --- compile-time checks ------------------------------------------------------------------------

def _fail(message: str, where, hint: str = "", fallback=None) -> None:
    raise CheckFailed(message, position(where, fallback), hint)


def _show(node) -> str:
    """The operand for an error message; deep ones by kind only (to_text recurses)."""
    if depth(node) > 50:
        return f"a {type(node).__name__} expression nested {depth(node)} levels deep"
    return shorten(A.to_text(node), 80)


def as_boolean(node, where=None):
    """RocketMQ's asBooleanExpression: booleans pass, a bare property becomes BOOLCAST."""
    if A.is_boolean(node):
        return node
    if isinstance(node, A.Property):
        return A.BoolCast(node)
    _fail(f"Expression will not result in a boolean value: {_show(node)}", node,
          "a condition compares values (`x = 5`, `x > 1.5`, `x IS NOT NULL`); a literal or a "
          "negated value alone is not one", fallback=where)


def _check_equal_operands(left, right, op) -> None:
    for side in (left, right):
        if isinstance(side, A.BoolConstant) and side.value is None:
            _fail(f"NULL cannot be compared with {op.value!r}", op,
                  "write `x IS NULL` or `x IS NOT NULL`")
    if isinstance(left, A.BoolConstant) and isinstance(right, A.Constant):
        _fail(f"'{_show(left)}' cannot be compared with '{_show(right)}'", op,
              "RocketMQ refuses TRUE or FALSE on the left of '=' or '<>' when the right side is a "
              f"number or string literal; compare a property (`x {op.value} {_show(left)}`)")


def _comparable_hint(node, op, other, node_is_left: bool) -> str:
    """Why `node` cannot be an operand of `op` (> >= < <= BETWEEN), and what to write."""
    symbol = op.value.upper()

    def rewrite(operand) -> str:
        sides = (operand, A.to_text(other)) if node_is_left else (A.to_text(other), operand)
        return f"{sides[0]} {symbol} {sides[1]}"

    if isinstance(node, A.Constant):  # a string literal
        if not _NUMBER.fullmatch(node.value):
            return (f"{symbol} orders numbers only; compare strings with =, <>, IN, CONTAINS, "
                    "STARTSWITH or ENDSWITH")
        if symbol == "BETWEEN":
            return f"BETWEEN needs numeric bounds: write {node.value} without quotes"
        return (f"relational operators need numeric operands (a string property is read as a "
                f"number): write `{rewrite(node.value)}`")
    if isinstance(node, A.BoolConstant):
        return ("NULL cannot be ordered: write `x IS NULL`" if node.value is None
                else f"booleans cannot be ordered: write `x = {_show(node)}`")
    if isinstance(node, A.Not) and node_is_left:
        rest = "..." if symbol == "BETWEEN" else shorten(A.to_text(other), 40)
        return (f"NOT binds tighter than comparisons, so this is `{_show(node)} {symbol} ...`: "
                f"write `NOT ({shorten(A.to_text(node.operand), 40)} {symbol} {rest})`")
    if isinstance(node, (A.Compare, A.And)) and node_is_left:
        return ("comparisons do not chain: write "
                f"`{shorten(A.to_text(node), 40)} AND ... {symbol} {shorten(A.to_text(other), 40)}`"
                " or use BETWEEN")
    return "a condition has no order: only numbers and properties can be compared this way"


def _check_comparable(node, op, other, node_is_left: bool) -> None:
    """checkLessThanOperand: only numeric constants and non-boolean expressions may be ordered."""
    if isinstance(node, A.Constant) and node.kind != A.STRING:
        return
    if A.is_constant(node) or A.is_boolean(node):
        _fail(f"Value {_show(node)} cannot be compared with {op.value!r}", node,
              _comparable_hint(node, op, other, node_is_left), fallback=op)


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
              f"equal to right value({A.to_text(high)})", token,
              f"the low bound comes first: write BETWEEN {A.to_text(high)} AND {A.to_text(low)}")


def _compare(left, op, right, symbol=None):
    """REL(symbol, left, right) after checkLessThanOperand on both sides."""
    _check_comparable(left, op, right, True)
    _check_comparable(right, op, left, False)
    return A.Compare(symbol or op.value, left, right)


def _in(left, op, values, negated):
    if not isinstance(left, A.Property):
        hint = "the left side of IN and NOT IN must be a property name"
        if isinstance(left, A.Not):
            hint = (f"NOT binds tighter than IN, so this is `{_show(left)} IN ...`: write "
                    f"`{_show(left.operand)} NOT IN (...)` or `NOT ({_show(left.operand)} IN (...))`")
        _fail(f"Expected a property for IN expression, got: {_show(left)}", op, hint)
    return A.In(left, values, negated)


def _literal(token) -> str:
    digits = token.value
    return digits if len(digits) <= 40 else f"{digits[:20]}…({len(digits)} characters)"


def integer_literal(token):
    """DECIMAL: a Java long; above Long.MAX_VALUE is a compile error."""
    text = token.value.rstrip("lL")
    # The lexer allows no leading zero, so more digits than Long.MAX_VALUE has means a larger
    # value: decided before int(), which refuses over 4,300 digits and is slow long before.
    if len(text) > _LONG_DIGITS or int(text) > LONG_MAX:
        _fail(f"Integer literal {_literal(token)} is out of range for a long", token,
              f"the largest is {LONG_MAX}; write a float literal (e.g. 1.0E30) to compare as a "
              "double")
    value = int(text)
    return A.Constant(value, A.INTEGER if value <= INT_MAX else A.LONG)


def _exponent_overflows(exponent: str) -> bool:
    digits = exponent.lstrip("+-").lstrip("0")[:-1]  # the digits read before the last one
    return len(digits) > 9 or (digits != "" and int(digits) >= _EXPONENT_OVERFLOW)


def float_literal(token):
    """FLOAT: Java's Double.parseDouble, then 4.9E-324 <= value <= Double.MAX_VALUE."""
    mantissa, _, exponent = token.value.lower().partition("e")
    if exponent and _exponent_overflows(exponent):
        # Java's result is infinite (positive exponent, non-zero digits) or zero: both refused.
        value = math.inf if exponent[0] != "-" and mantissa.strip("0.") else 0.0
    else:
        value = float(token.value)  # correctly rounded, as Java's parser is
    if math.isinf(value):
        _fail(f"Float literal {_literal(token)} is out of range", token,
              "it is above Double.MAX_VALUE (1.7976931348623157E308)")
    if value < DOUBLE_MIN_VALUE:
        _fail(f"Float literal {_literal(token)} is out of range", token,
              "RocketMQ refuses float literals below 4.9E-324, 0.0 included: write 0 for zero")
    return A.Constant(value, A.DOUBLE)


def string_value(token) -> str:
    return token.value[1:-1].replace("''", "'")


# --- the callbacks ------------------------------------------------------------------------------

@lark.v_args(inline=True)
class Builder(lark.Transformer):
    """One callback per grammar rule; each returns an AST node (IN lists: a tuple of strings)."""

    @_tracked
    def start(self, expr):
        return as_boolean(expr)

    @_tracked
    def or_(self, left, op, right):
        return A.Or(as_boolean(left, op), as_boolean(right, op))

    @_tracked
    def and_(self, left, op, right):
        return A.And(as_boolean(left, op), as_boolean(right, op))

    @_tracked
    def equal(self, left, op, right):
        _check_equal_operands(left, right, op)
        return A.Equal(left, right)

    @_tracked
    def not_equal(self, left, op, right):
        return A.Not(self.equal(left, op, right))

    @_tracked
    def is_null(self, left, _is, _null):
        return A.Equal(left, A.BoolConstant(None))

    @_tracked
    def is_not_null(self, left, _is, _not, _null):
        return A.Not(A.Equal(left, A.BoolConstant(None)))

    @_tracked
    def compare(self, left, op, right):
        return _compare(left, op, right)

    @_tracked
    def string_op(self, left, op, search):
        return A.StringOp(op.type, left, string_value(search), False)

    @_tracked
    def not_string_op(self, left, _not, op, search):
        return A.StringOp(op.type, left, string_value(search), True)

    @_tracked
    def between(self, value, op, low, and_, high):
        ge = _compare(value, op, low, ">=")
        le = _compare(value, op, high, "<=")
        _check_between_order(low, high, and_)
        return A.And(ge, le)

    @_tracked
    def not_between(self, value, _not, op, low, _and, high):
        return A.Or(_compare(value, op, low, "<"), _compare(value, op, high, ">"))

    @_tracked
    def in_(self, left, op, _lpar, values, _rpar):
        return _in(left, op, values, False)

    @_tracked
    def not_in(self, left, _not, op, _lpar, values, _rpar):
        return _in(left, op, values, True)

    def string_list(self, *tokens):
        return tuple(string_value(t) for t in tokens if t.type == "STRING")

    @_tracked
    def plus(self, _op, operand):
        return operand

    @_tracked
    def neg(self, _op, operand):
        return A.Neg(operand)

    @_tracked
    def not_(self, op, operand):
        return A.Not(as_boolean(operand, op))

    @_tracked
    def paren(self, _lpar, expr, _rpar):
        return expr

    @_tracked
    def string(self, token):
        return A.Constant(string_value(token), A.STRING)

    @_tracked
    def decimal(self, token):
        return integer_literal(token)

    @_tracked
    def float_(self, token):
        return float_literal(token)

    @_tracked
    def true(self, _token):
        return A.BoolConstant(True)

    @_tracked
    def false(self, _token):
        return A.BoolConstant(False)

    @_tracked
    def null(self, _token):
        return A.BoolConstant(None)

    @_tracked
    def property(self, token):
        return A.Property(token.value)

