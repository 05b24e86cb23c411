"""Selector AST -> one Spark Column equal to the broker's decision (SEMANTICS §5).

Value nodes (literals, properties, unary minus) compile to ``Alt`` lists (spark_values), one
per possible Java class; boolean nodes compile to a ``Truth`` (spark_truth), which carries
Java's evaluation errors as values, so AND/OR/NOT short-circuit over them exactly as Java does
and Spark never raises, in ANSI mode or not.

Java classes are known when the Column is built: map properties are Strings, literals have their
class, typed columns take theirs from the schema. Without a schema each typed property becomes
one Alt per possible class, guarded by ``typeof(col)``, which Spark folds away once the plan is
analysed.

The tree is walked without recursion, pushing NOT down to the leaves (De Morgan holds for Java's
short-circuit logic, errors included) and flattening AND/OR chains, so the Columns stay linear in
the selector's size and shallow enough for the JVM. One small function per node type, gathered in
``_COMPILERS``.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Dict, List, Mapping, Optional, Tuple, Union

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rocketfilter.py4j_calls import cache_jvm_lookups

from . import ast as A
from .javacasts import boolean_value_of, double_value_of, integer_value_of, long_value_of
from .spark_leaves import (NOT_CONSTANT, constant_label, equal_values, in_range, lift1, lift2,
                           operand_key, relation)
from .spark_truth import Native, Truth, chain, constant, equal_constant, equal_keys
from .spark_values import (MEMO, NULL, NUMERIC, OBJECT, OPAQUE_TYPES, SPARK_TYPE, TYPE_KIND, Alt,
                           lit, memo, negate, null_bool)

# Spark converts, analyses and generates code for expressions recursively, on a py4j thread
# with the JVM's default 1 MB stack: measured, a cold JVM overflows between 250 and 300 levels.
# Long AND/OR chains and NOT add no depth here (see spark_truth); AND inside OR inside AND...
# and `=` over booleans add one or two levels each.
SPARK_DEPTH_LIMIT = 200
# A selector's Columns are hundreds of pyspark function calls: half their py4j traffic was looking
# up the same JVM methods again.
cache_jvm_lookups()

Compiled = Union[Truth, List[Alt]]
Task = Tuple[A.Node, bool]  # a node and whether it is negated


class CompiledSelector:
    """The broker's decision and its diagnostics, as Columns.

    ``decision`` is never null: TRUE delivers. ``raw`` is Java's Boolean result, null where it
    is null or evaluation threw; ``error`` is never null, true where evaluation threw. The
    diagnostics can nest deeper than the decision: reading them raises ValueError when they
    are too deep for Spark, even if the decision is not.
    """

    def __init__(self, result: Truth):
        _check_depth(result.depth + 1, "")
        self.decision: Column = F.coalesce(result.decides(), lit(False))
        self._depth = result.key_depth + 1
        self._raw = self._error = None
        if self._depth <= SPARK_DEPTH_LIMIT:
            error = result.error()
            self._raw = result.raw()
            self._error = lit(False) if error is None else F.coalesce(error, lit(False))

    @property
    def raw(self) -> Column:
        _check_depth(self._depth, " (its raw result)")
        return self._raw

    @property
    def error(self) -> Column:
        _check_depth(self._depth, " (its error flag)")
        return self._error


def _check_depth(depth: int, what: str) -> None:
    if depth > SPARK_DEPTH_LIMIT:
        raise ValueError(
            f"selector nests too deeply for Spark{what}: about {depth} expression levels, the "
            f"limit is SPARK_DEPTH_LIMIT = {SPARK_DEPTH_LIMIT}. Long AND/OR chains and NOT add "
            "no depth; AND inside OR inside AND ... and '=' over booleans add one to three "
            "levels each")


# --- properties -------------------------------------------------------------------------------

class _Context:
    def __init__(self, properties: Union[str, Column, None], schema: Optional[T.StructType],
                 columns: Optional[Mapping[str, str]] = None,
                 promoted: Optional[Mapping[str, str]] = None):
        self.map = F.col(properties) if isinstance(properties, str) else properties
        self.schema = schema
        self.columns = columns or {}
        self.promoted = promoted or {}

    def prop(self, name: str) -> List[Alt]:
        return memo(("prop", name), lambda: self._resolve(name))

    def _resolve(self, name: str) -> List[Alt]:
        if self.map is not None and name in self.promoted:
            target = self.promoted[name]
            if target.endswith(FLAT):  # one top-level column per field: `<prefix>value`, ...
                return [_promoted(lambda field: F.col(target[:-len(FLAT)] + field))]
            return [_promoted(F.col(target).getField)]
        if self.map is not None:
            return [Alt(A.STRING, self.map.getItem(name), depth=2)]
        if self.schema is not None:
            return [self._typed(name)]
        return self._untyped(name)

    def _typed(self, name: str) -> Alt:
        column = self.columns.get(name, name)
        if column not in self.schema.fieldNames():
            return Alt(NULL, None)  # an absent property is null, as on the broker
        field = self.schema[column]
        kind = TYPE_KIND.get(type(field.dataType))
        if kind is not None:
            return Alt(kind, F.col(column), nullable=field.nullable)
        if isinstance(field.dataType, OPAQUE_TYPES):
            return Alt(OBJECT, F.col(column), nullable=field.nullable)
        raise ValueError(
            f"column {column!r} has type {field.dataType.simpleString()}, which has no RocketMQ "
            "counterpart; cast it to int, bigint, double, boolean or string")

    def _untyped(self, name: str) -> List[Alt]:
        col = F.col(self.columns.get(name, name))
        kind_of = F.typeof(col)
        return [Alt(kind, col.cast(spark), guard=kind_of == F.lit(spark), depth=2)
                for kind, spark in SPARK_TYPE.items()]


# A ``promoted`` target ending with this names the prefix of one top-level column per field
# (``<prefix>value``, ``<prefix>as_int``...): parses shared by the selectors of one projection
# (rocketfilter.store.sub_bits), which Spark keeps in a projection of their own.
FLAT = "*"


def _promoted(field: Callable[[str], Column]) -> Alt:
    """A promoted property (rocketfilter.store.promoted): the String, with its conversions and
    null tests answered by the columns written at put time (``field(name)`` reads one) instead
    of parsed here. Seeding the per-compile memo is all it takes: every parse goes through
    ``parsed``, every null test through ``is_null``/``not_null``. ``as_boolean`` is null exactly
    where the value is (Boolean.valueOf never throws), and a boolean column is cheaper to test
    than a string one."""
    value, flag = field("value"), field("as_boolean")
    table = MEMO.get()
    for parser, name in ((integer_value_of, "as_int"), (long_value_of, "as_long"),
                         (double_value_of, "as_double")):
        converted = field(name)
        table[(parser, id(value))] = (value, (converted, converted.isNotNull()))
    table[(boolean_value_of, id(value))] = (value, flag)
    table[("isnull", id(value))] = (value, flag.isNull())
    table[("notnull", id(value))] = (value, flag.isNotNull())
    return Alt(A.STRING, value, depth=2)


# --- node compilers ---------------------------------------------------------------------------

def as_truth(compiled: Compiled) -> Truth:
    """A boolean node's result; TRUE/FALSE/NULL literals compile as values, not truths."""
    if isinstance(compiled, Truth):
        return compiled
    (alt,) = compiled
    return constant(alt.literal if alt.value is not None else None)


def _constant(node: A.Constant, kids: list, ctx: _Context) -> List[Alt]:
    value = F.lit(node.value)
    if node.kind in (A.INTEGER, A.LONG):
        value = value.cast(SPARK_TYPE[node.kind])
    return [Alt(node.kind, value, nullable=False, literal=node.value)]


def _bool_constant(node: A.BoolConstant, kids: list, ctx: _Context) -> List[Alt]:
    if node.value is None:
        return [Alt(NULL, None)]
    return [Alt(A.BOOLEAN, lit(node.value), nullable=False, literal=node.value)]


def _property(node: A.Property, kids: list, ctx: _Context) -> List[Alt]:
    return ctx.prop(node.name)


def _neg(node: A.Neg, kids: list, ctx: _Context) -> List[Alt]:
    (operand,) = kids
    if isinstance(operand, Truth):  # negating a Boolean gives null; its errors remain
        return [Alt(NULL, None, operand.error(), depth=operand.error_depth)]
    if _neg_count(node) % 2:
        return [negate(a) for a in operand]
    # -(-x) is x for a number (MIN_VALUE wraps back to itself), null for anything else.
    return [a if a.kind in NUMERIC else Alt(NULL, None, a.error, a.guard, depth=a.depth)
            for a in operand]


def _bool_cast(node: A.BoolCast, kids: list, ctx: _Context) -> Native:
    def cast(a: Alt) -> Native:
        if a.kind == NULL:
            return Native(null_bool(), a.error, a.error is None)
        if a.kind == A.BOOLEAN:
            return Native(a.value, a.error)
        return Native(F.when(a.value.isNotNull(), lit(False)), a.error)  # "true" too
    return lift1(kids[0], cast)


def _equal(node: A.Equal, kids: list, ctx: _Context) -> Truth:
    left, right = kids
    if not (isinstance(left, Truth) or isinstance(right, Truth)):
        return lift2(left, right, equal_values)
    # `=` over a boolean node: against a literal, relabel its key; else one table lookup.
    if isinstance(left, Truth) and constant_label(right, False) is not NOT_CONSTANT:
        return equal_constant(left, constant_label(right, False), True)
    if isinstance(right, Truth) and constant_label(left, True) is not NOT_CONSTANT:
        return equal_constant(right, constant_label(left, True), False)
    return equal_keys(operand_key(left, True), operand_key(right, False))


def _compare(node: A.Compare, kids: list, ctx: _Context) -> Native:
    return lift2(kids[0], kids[1], partial(relation, node.op))


def _in(node: A.In, kids: list, ctx: _Context) -> Native:
    def member(a: Alt) -> Native:
        if a.kind != A.STRING:
            return Native(null_bool(), a.error, a.error is None)
        hit = a.value.isin(list(node.values))
        return Native(~hit if node.negated else hit, a.error)
    return lift1(kids[0], member)


_STRING_OPS = {"CONTAINS": Column.contains, "STARTSWITH": Column.startswith,
               "ENDSWITH": Column.endswith}


def _string_op(node: A.StringOp, kids: list, ctx: _Context) -> Native:
    if node.search == "":
        return constant(False)  # the operand is not even evaluated
    (operand,) = kids
    if isinstance(operand, Truth):  # a Boolean is not a String: FALSE, unless it threw
        if operand.error_free:
            return constant(False)
        return Native(lit(False), operand.error(), False, operand.error_depth)

    def test(a: Alt) -> Native:
        if a.kind != A.STRING:
            return Native(lit(False), a.error, a.error is None)
        hit = _STRING_OPS[node.op](a.value, F.lit(node.search))
        return Native(F.coalesce(~hit if node.negated else hit, lit(False)), a.error)
    return lift1(operand, test)


# NOT, AND and OR have no entry: the walk pushes NOT into the nodes below it and hands whole
# AND/OR chains to _chain.
_COMPILERS: Dict[type, Callable[[A.Node, list, _Context], Compiled]] = {
    A.Constant: _constant, A.BoolConstant: _bool_constant, A.Property: _property,
    A.Neg: _neg, A.BoolCast: _bool_cast, A.Equal: _equal, A.Compare: _compare, A.In: _in,
    A.StringOp: _string_op,
}


# --- AND/OR chains ----------------------------------------------------------------------------

_OPS = {A.And: "AND", A.Or: "OR"}
_SWAP = {"AND": "OR", "OR": "AND"}


def _chain(op: str, terms: List[Task], kids: List[Compiled],
           compiled: Callable[[A.Node], Compiled]) -> Truth:
    """AND/OR of the terms in order; a BETWEEN's two comparisons share one parse."""
    truths, i = [], 0
    while i < len(kids):
        merged = _range(op, terms[i:i + 2], compiled) if i + 1 < len(kids) else None
        truths.append(merged if merged is not None else as_truth(kids[i]))
        i += 2 if merged is not None else 1
    return chain(op, truths)


_COMPLEMENT = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}


def _range(op: str, terms: List[Task],
           compiled: Callable[[A.Node], Compiled]) -> Optional[Native]:
    """`s >= lo AND s <= hi` (BETWEEN) or `s < lo OR s > hi` (NOT BETWEEN) on one String and
    two Integer literals: one Integer.valueOf(s) and one range test, instead of two of each.

    Exact: the first comparison is null when s is null and throws when s does not parse, and
    then the second one is never decisive; otherwise both read the same number.
    """
    (lo_node, _), (hi_node, _) = terms
    if not (isinstance(lo_node, A.Compare) and isinstance(hi_node, A.Compare)
            and isinstance(lo_node.left, A.Property) and lo_node.left == hi_node.left):
        return None
    ops = tuple(_COMPLEMENT[n.op] if neg else n.op for n, neg in terms)
    if ops != {"AND": (">=", "<="), "OR": ("<", ">")}[op]:
        return None
    bounds = (lo_node.right, hi_node.right)
    if not all(isinstance(b, A.Constant) and b.kind == A.INTEGER for b in bounds):
        return None
    operand = compiled(lo_node.left)  # compiled already, as the comparisons' operand
    if isinstance(operand, Truth) or len(operand) != 1:
        return None
    (s,) = operand
    if s.kind != A.STRING or s.guard is not None or s.error is not None:
        return None
    return in_range(op, s, *(b.value for b in bounds))


# --- the walk ---------------------------------------------------------------------------------

def _task(node: A.Node, negated: bool = False) -> Task:
    """Strip NOTs into the negation flag: Java's NOT(NOT(x)) is x for a boolean x."""
    while isinstance(node, A.Not):
        node, negated = node.operand, not negated
    return node, negated


def _neg_count(node: A.Node) -> int:
    count = 0
    while isinstance(node, A.Neg):
        node, count = node.operand, count + 1
    return count


def _chain_terms(node: A.Node, negated: bool) -> Tuple[str, List[Task]]:
    """The flattened terms of an AND/OR chain (NOT pushed in by De Morgan), in order."""
    op = _OPS[type(node)] if not negated else _SWAP[_OPS[type(node)]]
    terms: List[Task] = []
    stack = [(node, negated)]
    while stack:
        n, neg = _task(*stack.pop())
        if type(n) in _OPS and (_OPS[type(n)] if not neg else _SWAP[_OPS[type(n)]]) == op:
            stack.append((n.right, neg))
            stack.append((n.left, neg))
        else:
            terms.append((n, neg))
    return op, terms


def _kids(node: A.Node, negated: bool) -> List[Task]:
    """What a node's compiler receives compiled: a chain's terms, the operand under a run of
    unary minus, else the node's children."""
    if type(node) in _OPS:
        return _chain_terms(node, negated)[1]
    if isinstance(node, A.Neg):
        while isinstance(node, A.Neg):
            node = node.operand
        return [_task(node)]
    return [_task(child) for child in A.children(node)]


def compile_tree(root: A.Node, ctx: _Context) -> Truth:
    """Compile every node once, children first, with an explicit stack (deep selectors would
    overflow Python's)."""
    done: Dict[Tuple[int, bool], Compiled] = {}
    kids_of: Dict[Tuple[int, bool], List[Task]] = {}

    def compiled(node: A.Node) -> Compiled:
        return done[(id(node), False)]

    top = _task(root)
    stack: List[Tuple[Task, bool]] = [(top, False)]
    while stack:
        (node, negated), ready = stack.pop()
        key = (id(node), negated)
        if key in done:
            continue
        if not ready:
            kids_of[key] = _kids(node, negated)
            stack.append(((node, negated), True))
            stack.extend((kid, False) for kid in reversed(kids_of[key])
                         if (id(kid[0]), kid[1]) not in done)
            continue
        kids = [done[(id(n), neg)] for n, neg in kids_of[key]]
        if type(node) in _OPS:
            op = _chain_terms(node, negated)[0]
            done[key] = _chain(op, kids_of[key], kids, compiled)
            continue
        result = _COMPILERS[type(node)](node, kids, ctx)
        done[key] = as_truth(result).negate() if negated else result
    return as_truth(done[(id(top[0]), top[1])])


def compile_selector(root: A.Node, properties: Union[str, Column, None] = "properties",
                     schema: Optional[T.StructType] = None,
                     columns: Optional[Mapping[str, str]] = None,
                     promoted: Optional[Mapping[str, str]] = None) -> CompiledSelector:
    """Compile a selector's AST root to the broker's decision and its diagnostics.

    With ``properties=None``, ``columns`` may map a property name to the top-level column that
    holds it (default: the column of the same name). With a properties map, ``promoted`` maps a
    property name to its promoted struct column (rocketfilter.store.promoted), read instead of
    the map, or to ``"<prefix>*"``: the same fields as top-level columns ``<prefix>value``... Raises ValueError for a selector nested too deeply for Spark (see
    SPARK_DEPTH_LIMIT).
    """
    token = MEMO.set({})
    try:
        return CompiledSelector(compile_tree(root, _Context(properties, schema, columns, promoted)))
    finally:
        MEMO.reset(token)
