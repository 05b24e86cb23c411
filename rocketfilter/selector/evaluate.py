"""The pure-Python reference evaluator: SEMANTICS §5 as readable code, one function per node.

`evaluate` returns what RocketMQ's `Expression.evaluate` returns (True, False or None for null)
and raises `SelectorEvaluationError` where it throws; `matches` is the broker's decision
(`isMatchedByCommitLog`): deliver only on TRUE.

Values follow `rocketfilter.javalang`: None, str, Integer, Long, float (Double), bool, or an
opaque Object. A property is looked up with `props.get(name)`: on the broker every value is a
str, but typed values (client-side Java maps) are accepted too.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

from .. import javalang as J
from . import ast as A
from .errors import SelectorEvaluationError

_EVALUATORS: dict = {}


def evaluator(node_type: type) -> Callable:
    """Register the evaluation rule for one AST node type."""
    def register(fn: Callable) -> Callable:
        _EVALUATORS[node_type] = fn
        return fn
    return register


def evaluate(node: A.Node, props: Mapping[str, object]) -> Optional[bool]:
    """The raw Java result of `node` on a message with properties `props`."""
    return _eval(node, props)


def matches(node: A.Node, props: Mapping[str, object]) -> bool:
    """The broker's decision: TRUE delivers; FALSE, null, a non-Boolean or an error do not."""
    try:
        return evaluate(node, props) is True
    except SelectorEvaluationError:
        return False


def _eval(node, props):
    try:
        rule = _EVALUATORS[type(node)]
    except KeyError:
        raise TypeError(f"not a selector node: {node!r}") from None
    return rule(node, props)


def _as_boolean(value):
    """The `(Boolean)` cast RocketMQ applies to the operands of AND/OR/NOT."""
    if value is None or isinstance(value, bool):
        return value
    raise SelectorEvaluationError(
        f"ClassCastException: {J.java_class(value)} cannot be cast to java.lang.Boolean")


# Java compares UTF-16 code units. A str without surrogate code points (U+D800-U+DFFF) has one
# UTF-16 form, so Python's own ==, `in`, startswith and endswith give Java's answer on it; only
# text with surrogates (lone, or a pair kept as two code points) needs the UTF-16 path.


def _surrogate_free(s: str) -> bool:
    """No surrogate code point in `s`: isascii() is O(1); the strict UTF-8 encoder refuses
    surrogates and runs at C speed (measured 3-6x faster than a regex search)."""
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _string_equals(a: str, b: str) -> bool:
    """Java `a.equals(b)` (also `a.compareTo(b) == 0`) without building UTF-16 code units."""
    if a == b:
        return True
    if _surrogate_free(a) and _surrogate_free(b):
        return False
    return J.string_equals(a, b)


def _not_comparable(value) -> SelectorEvaluationError:
    return SelectorEvaluationError(
        f"ClassCastException: {type(value).__name__} cannot be cast to java.lang.Comparable")


# --- leaves ------------------------------------------------------------------------------------

_CONSTANT_TYPES = {A.INTEGER: J.Integer, A.LONG: J.Long, A.DOUBLE: float, A.STRING: str}


@evaluator(A.Constant)
def _constant(node: A.Constant, props):
    return _CONSTANT_TYPES[node.kind](node.value)


@evaluator(A.BoolConstant)
def _bool_constant(node: A.BoolConstant, props):
    return node.value


@evaluator(A.Property)
def _property(node: A.Property, props):
    return J.java_value(props.get(node.name))


# --- unary -------------------------------------------------------------------------------------

@evaluator(A.Neg)
def _neg(node: A.Neg, props):
    value = _eval(node.operand, props)
    if J.java_class(value) in (J.INTEGER, J.LONG, J.DOUBLE):
        return J.negate(value)
    return None  # null, and anything that is not a Number (even a string of digits)


@evaluator(A.BoolCast)
def _bool_cast(node: A.BoolCast, props):
    value = _eval(node.operand, props)
    if value is None:
        return None
    return value if isinstance(value, bool) else False  # "true" as a String is still FALSE


@evaluator(A.Not)
def _not(node: A.Not, props):
    value = _as_boolean(_eval(node.operand, props))
    return None if value is None else not value


# --- logic: three-valued, short-circuit in operand order (an error on the right is skipped) ---

def _logic(node, props, decisive: bool):
    """Java's left-deep LogicExpression fold: each step takes the result so far and, unless it
    is `decisive`, the next operand (an error on a skipped operand is never raised)."""
    operands = A.chain_operands(node)
    result = _as_boolean(_eval(operands[0], props))
    for operand in operands[1:]:
        if result is decisive:
            continue
        right = _as_boolean(_eval(operand, props))
        if right is decisive:
            result = decisive
        else:
            result = None if result is None or right is None else (not decisive)
    return result


@evaluator(A.And)
def _and(node: A.And, props):
    return _logic(node, props, False)


@evaluator(A.Or)
def _or(node: A.Or, props):
    return _logic(node, props, True)


# --- comparisons -------------------------------------------------------------------------------

@evaluator(A.Equal)
def _equal(node: A.Equal, props):
    left = _eval(node.left, props)
    right = _eval(node.right, props)
    if left is None or right is None:
        # asymmetric on purpose: `a = 'x'` is null for a missing a, `'x' = a` is FALSE
        if left is None and right is None:
            return True
        return None if left is None else False
    if type(left) is str and type(right) is str:
        return _string_equals(left, right)
    if J.java_equals(left, right):
        return True
    if J.is_comparable(left) and J.is_comparable(right):
        return J.compare(left, right) == 0
    return False


_ORDERINGS = {
    ">": lambda c: c > 0, ">=": lambda c: c >= 0,
    "<": lambda c: c < 0, "<=": lambda c: c <= 0,
}


@evaluator(A.Compare)
def _compare(node: A.Compare, props):
    left = _eval(node.left, props)
    if left is None:
        return None  # the right side is not even evaluated
    if not J.is_comparable(left):
        raise _not_comparable(left)
    right = _eval(node.right, props)
    if right is None:
        return None
    if not J.is_comparable(right):
        raise _not_comparable(right)
    if isinstance(left, str) and isinstance(right, str):
        # ordering two strings is only legal when both read as doubles
        try:
            left, right = J.double_value_of(left), J.double_value_of(right)
        except J.NumberFormatError as e:
            raise SelectorEvaluationError(
                f"It's illegal to compare string by '{node.op}': {e}") from e
    return _ORDERINGS[node.op](J.compare(left, right))


@evaluator(A.In)
def _in(node: A.In, props):
    value = _eval(node.operand, props)
    if not isinstance(value, str):
        return None  # null, or any non-String: no coercion to the listed strings
    if value in node.values:  # Python equality implies Java's
        found = True
    elif _surrogate_free(value) and all(_surrogate_free(v) for v in node.values):
        found = False
    else:
        found = any(J.string_equals(value, v) for v in node.values)
    return found != node.negated


_STRING_TESTS = {
    "CONTAINS": J.string_contains,
    "STARTSWITH": J.string_starts_with,
    "ENDSWITH": J.string_ends_with,
}
_PYTHON_STRING_TESTS = {
    "CONTAINS": lambda s, search: search in s,
    "STARTSWITH": str.startswith,
    "ENDSWITH": str.endswith,
}


@evaluator(A.StringOp)
def _string_op(node: A.StringOp, props):
    if node.search == "":
        return False  # both forms, and the operand is not evaluated
    value = _eval(node.operand, props)
    if not isinstance(value, str):
        return False  # null or a non-String: FALSE for the NOT form as well
    plain = _surrogate_free(value) and _surrogate_free(node.search)
    return (_PYTHON_STRING_TESTS if plain else _STRING_TESTS)[node.op](value, node.search) \
        != node.negated
