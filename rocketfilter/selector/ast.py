"""The typed AST of a compiled selector: what RocketMQ's SelectorParser builds (SEMANTICS §4.2).

Nodes are small frozen dataclasses. `<>`, `IS [NOT] NULL`, `BETWEEN` and unary `+` have no node
of their own: the parser desugars them exactly as RocketMQ does, so evaluators see only these.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

INTEGER, LONG, DOUBLE, STRING, BOOLEAN = "Integer", "Long", "Double", "String", "Boolean"


@dataclass(frozen=True)
class Constant:
    """A number or string literal. `kind` is its Java class: Integer, Long, Double or String."""
    value: Union[int, float, str]
    kind: str


@dataclass(frozen=True)
class BoolConstant:
    """TRUE, FALSE or NULL (value None): RocketMQ's BooleanConstantExpression."""
    value: Union[bool, None]


@dataclass(frozen=True)
class Property:
    """A message property looked up by its case-sensitive name."""
    name: str


@dataclass(frozen=True)
class Neg:
    """Unary minus, applied at evaluation time (literals are never negative)."""
    operand: "Node"


@dataclass(frozen=True)
class BoolCast:
    """A bare property in boolean position: null if missing, else TRUE only for a Java Boolean true."""
    operand: "Node"


@dataclass(frozen=True)
class Not:
    operand: "Node"


@dataclass(frozen=True)
class And:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Or:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Equal:
    """EQ(x, y): also the core of `<>` (Not(Equal)) and `IS [NOT] NULL` (Equal(x, NULL))."""
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Compare:
    """REL(op, x, y) for op in `>`, `>=`, `<`, `<=`; BETWEEN desugars to two of these."""
    op: str
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class In:
    """`p [NOT] IN ('a', ...)`: exact string membership; the left side is always a property."""
    operand: Property
    values: tuple
    negated: bool


@dataclass(frozen=True)
class StringOp:
    """`x [NOT] CONTAINS|STARTSWITH|ENDSWITH 's'`."""
    op: str
    operand: "Node"
    search: str
    negated: bool


Node = Union[Constant, BoolConstant, Property, Neg, BoolCast, Not, And, Or, Equal, Compare, In, StringOp]

BOOLEAN_NODES = (BoolConstant, BoolCast, Not, And, Or, Equal, Compare, In, StringOp)


def is_boolean(node: Node) -> bool:
    """True for nodes RocketMQ types as BooleanExpression (valid in AND/OR/NOT and as a selector)."""
    return isinstance(node, BOOLEAN_NODES)


def is_constant(node: Node) -> bool:
    """True for ConstantExpression nodes: number/string literals and TRUE/FALSE/NULL."""
    return isinstance(node, (Constant, BoolConstant))


def children(node: Node) -> tuple:
    """The child nodes of `node`, in evaluation order."""
    if isinstance(node, (And, Or, Equal, Compare)):
        return (node.left, node.right)
    if isinstance(node, (Neg, BoolCast, Not, In, StringOp)):
        return (node.operand,)
    return ()


def properties(node: Node) -> list:
    """Names of all properties referenced, in first-use order, without duplicates."""
    seen: dict = {}
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Property):
            seen.setdefault(n.name, None)
        stack.extend(reversed(children(n)))
    return list(seen)


def chain_operands(node: Node) -> list:
    """The operands of the flat AND/OR chain ``node`` heads, left to right, found without
    recursion (its length is not nesting: a chain may have thousands of terms)."""
    rights = []
    while type(node.left) is type(node):
        rights.append(node.right)
        node = node.left
    return [node.left, node.right] + rights[::-1]


def to_text(node: Node) -> str:
    """A canonical, re-parseable rendering (with explicit parentheses) for messages and tests."""
    if isinstance(node, Constant):
        if node.kind == STRING:
            return "'" + node.value.replace("'", "''") + "'"
        if node.kind == DOUBLE:
            return repr(float(node.value))
        return str(node.value)
    if isinstance(node, BoolConstant):
        return {True: "TRUE", False: "FALSE", None: "NULL"}[node.value]
    if isinstance(node, Property):
        return node.name
    if isinstance(node, Neg):
        return f"(-{to_text(node.operand)})"
    if isinstance(node, BoolCast):
        return to_text(node.operand)
    if isinstance(node, Not):
        return f"(NOT {to_text(node.operand)})"
    if isinstance(node, (And, Or)):  # a chain in a loop: it may have thousands of terms
        word = " AND " if isinstance(node, And) else " OR "
        operands = chain_operands(node)
        text = to_text(operands[0])
        for operand in operands[1:]:
            text = f"({text}{word}{to_text(operand)})"
        return text
    if isinstance(node, Equal):
        if node.right == BoolConstant(None):  # `x = NULL` does not compile; IS NULL built it
            return f"({to_text(node.left)} IS NULL)"
        return f"({to_text(node.left)} = {to_text(node.right)})"
    if isinstance(node, Compare):
        return f"({to_text(node.left)} {node.op} {to_text(node.right)})"
    if isinstance(node, In):
        items = ", ".join("'" + v.replace("'", "''") + "'" for v in node.values)
        return f"({node.operand.name} {'NOT IN' if node.negated else 'IN'} ({items}))"
    if isinstance(node, StringOp):
        neg = "NOT " if node.negated else ""
        search = "'" + node.search.replace("'", "''") + "'"
        return f"({to_text(node.operand)} {neg}{node.op} {search})"
    raise TypeError(f"not a selector node: {node!r}")
