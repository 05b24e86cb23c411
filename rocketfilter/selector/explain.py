"""Why a selector gave its answer on one message: the reference evaluator's result, and the
comparisons that decided it.

:func:`explain_evaluation` returns exactly what :func:`~rocketfilter.selector.evaluate.evaluate`
returns (or the error it raises); it only adds *which* leaf conditions decided the result and
the property values they read. The evaluator is not changed: each node's value here is the
evaluator's own answer on that sub-tree (pure functions of the properties), so the walk follows
Java's short-circuit order and cannot disagree with it.

* FALSE from ``AND``: the first operand that was FALSE; NULL: the operands that were NULL;
* TRUE from ``OR``: the first operand that was TRUE;
* an error: the condition whose own evaluation threw (an operand's error aborts the whole
  selector, as in Java);
* otherwise every operand that was evaluated.

>>> from rocketfilter.selector import parse
>>> print(parse("a > 4 AND region = 'eu'").explain({"a": "3", "region": "eu"}))
FALSE: (a > 4) is FALSE with a = '3'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from . import ast as A
from .errors import SelectorEvaluationError
from .evaluate import evaluate

ERROR = "error"   # the result where Java's evaluation throws (as findings.ERROR)
_WORD = {True: "TRUE", False: "FALSE", None: "NULL", ERROR: "ERROR"}


@dataclass(frozen=True)
class Condition:
    """One deciding condition: its text, its operator, its value on the message (True, False,
    None for NULL, or :data:`ERROR`), the properties it reads as the message holds them (None:
    absent) and, on an error, Java's message."""

    text: str
    operator: str
    result: object
    properties: Dict[str, Optional[object]]
    error: Optional[str] = None

    def __str__(self) -> str:
        seen = ", ".join(f"{k} = {v!r}" if v is not None else f"{k} absent" for k, v in self.properties.items())
        verb = "throws" if self.result is ERROR else f"is {_WORD[self.result]}"
        line = f"{self.text} {verb}" + (f" with {seen}" if seen else "")
        return line + (f" ({self.error})" if self.error else "")


@dataclass(frozen=True)
class Evaluation:
    """The selector's result on one message (``result``: True, False, None or :data:`ERROR`,
    exactly the evaluator's) and the conditions that decided it."""

    selector: str
    result: object
    deciding: Tuple[Condition, ...]
    error: Optional[str] = None

    @property
    def matched(self) -> bool:
        """The broker's decision: deliver only on TRUE."""
        return self.result is True

    def __str__(self) -> str:
        return f"{_WORD[self.result]}: " + "; ".join(str(c) for c in self.deciding)


class _Raised:
    """A sub-tree whose evaluation threw."""

    def __init__(self, error: SelectorEvaluationError):
        self.message = str(error)


def _value(node: A.Node, props: Mapping[str, object]):
    try:
        return evaluate(node, props)
    except SelectorEvaluationError as error:
        return _Raised(error)


def _operator(node: A.Node) -> str:
    if isinstance(node, A.Not):
        inner = node.operand
        if isinstance(inner, A.Equal) and inner.right == A.BoolConstant(None):
            return "IS NOT NULL"
        return "<>" if isinstance(inner, A.Equal) else "NOT " + _operator(inner)
    if isinstance(node, A.Equal):
        return "IS NULL" if node.right == A.BoolConstant(None) else "="
    if isinstance(node, A.Compare):
        return node.op
    if isinstance(node, A.In):
        return "NOT IN" if node.negated else "IN"
    if isinstance(node, A.StringOp):
        return ("NOT " if node.negated else "") + node.op
    if isinstance(node, (A.And, A.Or)):
        return type(node).__name__.upper()
    if isinstance(node, A.BoolCast):
        return "boolean property"
    return "constant"


def _condition(node: A.Node, value, props: Mapping[str, object]) -> Condition:
    raised = isinstance(value, _Raised)
    return Condition(A.to_text(node), _operator(node), ERROR if raised else value,
                     {name: props.get(name) for name in A.properties(node)},
                     value.message if raised else None)


def _is_leaf(node: A.Node) -> bool:
    """A condition explained as a whole: anything but AND, OR and a NOT over them."""
    if isinstance(node, A.Not):
        return not isinstance(node.operand, (A.And, A.Or, A.Not))
    return not isinstance(node, (A.And, A.Or))


def _deciding(node: A.Node, value, props: Mapping[str, object]) -> List[Condition]:
    """The leaf conditions that gave ``node`` its ``value`` (the evaluator's answer on it)."""
    if _is_leaf(node):
        return [_condition(node, value, props)]
    if isinstance(node, A.Not):
        inner = node.operand
        return _deciding(inner, _value(inner, props), props)
    short = False if isinstance(node, A.And) else True   # the value that ends the evaluation
    found: List[Tuple[A.Node, object]] = []
    for child in (node.left, node.right):
        child_value = _value(child, props)
        found.append((child, child_value))
        if isinstance(child_value, _Raised) or child_value is short:
            return _deciding(child, child_value, props)
        if child_value is not None and not isinstance(child_value, bool):
            return [_condition(child, child_value, props)]   # the (Boolean) cast throws on it
    if value is None:
        found = [(c, v) for c, v in found if v is None]
    return [d for child, child_value in found for d in _deciding(child, child_value, props)]


def explain_evaluation(node: A.Node, props: Mapping[str, object], text: Optional[str] = None) -> Evaluation:
    """The evaluator's result of ``node`` on ``props`` with the conditions that decided it."""
    value = _value(node, props)
    deciding = tuple(_deciding(node, value, props))
    if isinstance(value, _Raised):
        return Evaluation(text or A.to_text(node), ERROR, deciding, value.message)
    return Evaluation(text or A.to_text(node), value, deciding)
