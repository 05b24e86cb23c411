"""Selector AST -> a vectorised program over Arrow batches, equal to the broker's decision
(SEMANTICS §5). The third backend, beside the Python evaluator and the Spark compiler, for code
that holds Arrow data and no Spark plan: the ``rocketmq`` data source's readers, on executors.

Compiling walks the tree once, children first, into a list of steps; running a step applies
one small function per node type (``_NODES``) to its children's results for every row of the
batch at once, with numpy and Arrow compute kernels. Java's short-circuits become masks: a
result is computed for every row, and the rows whose Java evaluation would have stopped earlier
take the earlier outcome (errors included), exactly as :mod:`.evaluate` decides one message.

>>> from rocketfilter.selector import parse
>>> props = pa.array([[("a", "7")], [("a", "x")], []], pa.map_(pa.string(), pa.string()))
>>> parse("a > 4").to_arrow().evaluate(props).matched.tolist()
[True, False, False]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import arrow_casts as C
from . import ast as A
from .arrow_values import (ERROR, FALSE, NONE, NULL, OBJECT, TRUE, Pair, Value, as_boolean,
                           codes, coerce, column_value, constant, double_key, equal, from_codes,
                           negate, sign)

_NODES: Dict[type, Callable] = {}

Batch = Union[pa.RecordBatch, pa.Table, pa.Array, pa.ChunkedArray]


def _node(node_type: type) -> Callable:
    """Register the vectorised rule for one AST node type."""
    def register(fn: Callable) -> Callable:
        _NODES[node_type] = fn
        return fn
    return register


class _Rows:
    """One batch being evaluated: its properties, and values computed once per batch (a
    property's lookup, a String's parse by one of Java's parsers)."""

    def __init__(self, batch: Batch, properties: Optional[str], columns: Mapping[str, str]):
        if isinstance(batch, pa.ChunkedArray):
            batch = batch.combine_chunks()
        if isinstance(batch, pa.Table):
            batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else \
                pa.RecordBatch.from_pylist([], batch.schema)
        self.batch = batch
        self.n = len(batch)
        self.properties, self.columns = properties, columns
        self._memo: dict = {}

    def prop(self, name: str) -> Value:
        key = ("prop", name)
        if key not in self._memo:
            self._memo[key] = self._lookup(name)
        return self._memo[key]

    def _lookup(self, name: str) -> Value:
        zeros = np.zeros(self.n, bool)
        if isinstance(self.batch, pa.Array):
            return self._from_map(self.batch, name)
        if self.properties is not None:
            return self._from_map(self.batch.column(self.properties), name)
        column = self.columns.get(name, name)
        if column not in self.batch.schema.names:
            return Value(NULL, None, zeros, zeros)  # an absent property is null, as on the broker
        return column_value(self.batch.column(column), column)

    def _from_map(self, properties: pa.Array, name: str) -> Value:
        found = pc.map_lookup(properties, pa.scalar(name, pa.string()), "last")
        valid = np.array(found.is_valid().to_numpy(zero_copy_only=False))
        return Value(A.STRING, found, valid, np.zeros(self.n, bool))

    def parse(self, value: Value, parser: Callable):
        """``parser(value.data)``, once per batch for the same String values."""
        key = ("parse", id(value.data), parser)
        if key not in self._memo:
            self._memo[key] = (value.data, parser(value.data))  # keeps data alive: ids stay unique
        return self._memo[key][1]


# --- leaves and unary nodes ---------------------------------------------------------------------

@_node(A.Constant)
def _constant(node: A.Constant, kids: List[Value], rows: _Rows) -> Value:
    return constant(node.kind, node.value, rows.n)


@_node(A.BoolConstant)
def _bool_constant(node: A.BoolConstant, kids: List[Value], rows: _Rows) -> Value:
    return constant(NULL if node.value is None else A.BOOLEAN, node.value, rows.n)


@_node(A.Property)
def _property(node: A.Property, kids: List[Value], rows: _Rows) -> Value:
    return rows.prop(node.name)


@_node(A.Neg)
def _neg(node: A.Neg, kids: List[Value], rows: _Rows) -> Value:
    return negate(kids[0])


@_node(A.BoolCast)
def _bool_cast(node: A.BoolCast, kids: List[Value], rows: _Rows) -> Value:
    (v,) = kids
    if v.kind == A.BOOLEAN:
        return v
    return Value(A.BOOLEAN, np.zeros(rows.n, bool), v.valid, v.error)  # "true" as a String: FALSE


# --- logic: outcome tables (False 0, True 1, null 2, error 3), left operand first ---------------

_NOT = np.array([TRUE, FALSE, NONE, ERROR], np.int8)
_AND = np.array([[FALSE] * 4,
                 [FALSE, TRUE, NONE, ERROR],
                 [FALSE, NONE, NONE, ERROR],
                 [ERROR] * 4], np.int8)
_OR = np.array([[FALSE, TRUE, NONE, ERROR],
                [TRUE] * 4,
                [NONE, TRUE, NONE, ERROR],
                [ERROR] * 4], np.int8)


@_node(A.Not)
def _not(node: A.Not, kids: List[Value], rows: _Rows) -> Value:
    return from_codes(_NOT[as_boolean(kids[0])])


@_node(A.And)
def _and(node: A.And, kids: List[Value], rows: _Rows) -> Value:
    return from_codes(_AND[as_boolean(kids[0]), as_boolean(kids[1])])


@_node(A.Or)
def _or(node: A.Or, kids: List[Value], rows: _Rows) -> Value:
    return from_codes(_OR[as_boolean(kids[0]), as_boolean(kids[1])])


# --- comparisons ---------------------------------------------------------------------------------

def _outcome(steps: List[Tuple[np.ndarray, int]], last: np.ndarray) -> Value:
    """The first step whose condition holds decides a row; ``last`` (True/False) the rest."""
    out = np.where(last, np.int8(TRUE), np.int8(FALSE))
    for condition, code in reversed(steps):
        out = np.where(condition, np.int8(code), out)
    return from_codes(out)


@_node(A.Equal)
def _equal(node: A.Equal, kids: List[Value], rows: _Rows) -> Value:
    """EQ(x, y) (§5.3): both evaluated; x null -> null, y null -> FALSE, both null -> TRUE;
    then equals, then the coercing comparison."""
    left, right = kids
    n = rows.n
    both = left.valid & right.valid
    conversion, same = np.zeros(n, bool), np.zeros(n, bool)
    if OBJECT in (left.kind, right.kind):
        # Java's `lv == rv`: an opaque object equals only itself (the same property).
        same[:] = left.kind == right.kind == OBJECT and left.token == right.token
    elif both.any():
        pair = coerce(left, right, rows.parse)
        same = equal(pair, n)
        if pair.error is not None:
            conversion = pair.error
    return _outcome([(left.error | right.error, ERROR),
                     (~left.valid & ~right.valid, TRUE),
                     (~left.valid, NONE),
                     (~right.valid, FALSE),
                     (conversion, ERROR)], same)


_ORDERINGS = {">": lambda s: s > 0, ">=": lambda s: s >= 0, "<": lambda s: s < 0, "<=": lambda s: s <= 0}


@_node(A.Compare)
def _compare(node: A.Compare, kids: List[Value], rows: _Rows) -> Value:
    """REL(op, x, y) (§5.5): x null -> null before y is evaluated; y null -> null; an Object
    is not Comparable; two Strings are both read as doubles; else the coercing comparison."""
    left, right = kids
    n = rows.n
    conversion, result = np.zeros(n, bool), np.zeros(n, bool)
    comparable = OBJECT not in (left.kind, right.kind) and NULL not in (left.kind, right.kind)
    if comparable and (left.valid & right.valid).any():
        if left.kind == right.kind == A.STRING:
            (lv, lok), (rv, rok) = rows.parse(left, C.double_value_of), rows.parse(right, C.double_value_of)
            pair = Pair(double_key(lv), double_key(rv), ~(lok & rok))
        else:
            pair = coerce(left, right, rows.parse)
        result = _ORDERINGS[node.op](sign(pair, n))
        if pair.error is not None:
            conversion = pair.error
    left_object = np.full(n, left.kind == OBJECT)
    right_object = np.full(n, right.kind == OBJECT)
    return _outcome([(left.error, ERROR), (~left.valid, NONE), (left_object, ERROR),
                     (right.error, ERROR), (~right.valid, NONE), (right_object, ERROR),
                     (conversion, ERROR)], result)


@_node(A.In)
def _in(node: A.In, kids: List[Value], rows: _Rows) -> Value:
    """Exact String membership; null, or any non-String, is null (no coercion)."""
    (v,) = kids
    if v.kind != A.STRING:
        return Value(A.BOOLEAN, np.zeros(rows.n, bool), np.zeros(rows.n, bool), v.error)
    hit = C._np(pc.is_in(v.data, value_set=pa.array(list(node.values), pa.string())), False)
    return Value(A.BOOLEAN, hit != node.negated, v.valid, v.error)


_STRING_TESTS = {"CONTAINS": pc.match_substring, "STARTSWITH": pc.starts_with, "ENDSWITH": pc.ends_with}


@_node(A.StringOp)
def _string_op(node: A.StringOp, kids: List[Value], rows: _Rows) -> Value:
    """`x [NOT] CONTAINS|STARTSWITH|ENDSWITH 's'`: FALSE for null or a non-String, in both
    forms; an empty search is FALSE without evaluating x."""
    n = rows.n
    ones = np.ones(n, bool)
    if node.search == "":
        return Value(A.BOOLEAN, np.zeros(n, bool), ones, np.zeros(n, bool))
    (v,) = kids
    if v.kind != A.STRING:
        return Value(A.BOOLEAN, np.zeros(n, bool), ones, v.error)
    hit = C._np(_STRING_TESTS[node.op](v.data, pattern=node.search), False)
    return Value(A.BOOLEAN, v.valid & (hit != node.negated), ones, v.error)


# --- the program ---------------------------------------------------------------------------------

@dataclass
class ArrowResult:
    """``matched``: the broker's decision (deliver only on TRUE), never null. ``raw``: Java's
    Boolean result, null where it is null or evaluation threw. ``error``: where it threw."""

    matched: np.ndarray
    raw: pa.BooleanArray
    error: np.ndarray


def _program(root: A.Node) -> List[Tuple[A.Node, Tuple[int, ...]]]:
    """The nodes children first, each with the indices of its children's steps (no recursion:
    a selector may nest hundreds of levels)."""
    steps: List[Tuple[A.Node, Tuple[int, ...]]] = []
    index: Dict[int, int] = {}
    stack: List[Tuple[A.Node, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in index:
            continue
        kids = A.children(node)
        if not ready:
            stack.append((node, True))
            stack.extend((kid, False) for kid in reversed(kids) if id(kid) not in index)
            continue
        index[id(node)] = len(steps)
        steps.append((node, tuple(index[id(kid)] for kid in kids)))
    return steps


class ArrowSelector:
    """A compiled selector that decides whole Arrow batches.

    ``properties`` names the ``map<string,string>`` column holding each message's properties
    (the broker's view: every property is a String). With ``properties=None`` each property is
    a top-level column, typed by its Arrow type, named as in ``columns`` (default: the same).
    Picklable, so Spark tasks can take it.
    """

    def __init__(self, root: A.Node, properties: Optional[str] = "properties",
                 columns: Optional[Mapping[str, str]] = None):
        self.properties, self.columns = properties, dict(columns or {})
        self.steps = _program(root)

    def evaluate(self, batch: Batch) -> ArrowResult:
        """The decision for every row of ``batch``: a RecordBatch or Table with the properties
        column (or the typed columns), or the properties map array itself."""
        rows = _Rows(batch, self.properties, self.columns)
        results: List[Value] = []
        for node, kids in self.steps:
            results.append(_NODES[type(node)](node, [results[k] for k in kids], rows))
        outcome = codes(results[-1]) if results else np.zeros(0, np.int8)
        raw = pa.array(outcome == TRUE, pa.bool_(), mask=outcome >= NONE)
        return ArrowResult(outcome == TRUE, raw, outcome == ERROR)

    def matches(self, batch: Batch) -> np.ndarray:
        """The broker's decision alone: a numpy boolean mask over the rows of ``batch``."""
        return self.evaluate(batch).matched


def compile_arrow(root: A.Node, properties: Optional[str] = "properties",
                  columns: Optional[Mapping[str, str]] = None) -> ArrowSelector:
    """Compile a selector's AST root for Arrow batches (see :class:`ArrowSelector`)."""
    return ArrowSelector(root, properties, columns)
