"""Selector AST -> one Spark Column equal to the broker's decision (SEMANTICS §5).

Every node compiles to Java values held as Columns: an ``Alt`` is one possible Java class of a
node's value, with its value Column (null = Java null) and an error Column (true where Java's
evaluation would have thrown). Errors are values, not exceptions, so AND/OR/NOT short-circuit
over them exactly as Java does and Spark never raises, in ANSI mode or not.

Java classes are known when the Column is built: map properties are Strings, literals have their
class, typed columns take theirs from the schema. Without a schema each typed property becomes
one Alt per possible class, guarded by ``typeof(col)``, which Spark folds away once the plan is
analysed. One small function per node type, gathered in ``_COMPILERS``.
"""
from __future__ import annotations

from dataclasses import dataclass
from contextvars import ContextVar
from typing import Callable, Mapping, Optional, Union

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import ast as A
from .javacasts import (boolean_value_of, double_value_of, integer_value_of, is_negative_zero,
                        long_value_of)

NULL, OBJECT = "Null", "Object"
INT_MIN, LONG_MIN = -(1 << 31), -(1 << 63)
_SPARK_TYPE = {A.INTEGER: "int", A.LONG: "bigint", A.DOUBLE: "double", A.BOOLEAN: "boolean",
               A.STRING: "string"}
_TYPE_KIND = {T.IntegerType: A.INTEGER, T.LongType: A.LONG, T.DoubleType: A.DOUBLE,
              T.BooleanType: A.BOOLEAN, T.StringType: A.STRING}
_OPAQUE_TYPES = (T.BinaryType, T.ArrayType, T.MapType, T.StructType)
_NUMERIC = (A.INTEGER, A.LONG, A.DOUBLE)


@dataclass(frozen=True)
class Alt:
    """One possible Java class of a value. ``value`` None means always null (kind Null);
    ``error`` None means it never throws; ``guard`` None means this class is certain."""
    kind: str
    value: Optional[Column]
    error: Optional[Column] = None
    guard: Optional[Column] = None
    nullable: bool = True


@dataclass(frozen=True)
class CompiledSelector:
    decision: Column  # never null: TRUE delivers
    raw: Column       # Java's Boolean result, null where it is null or evaluation threw
    error: Column     # never null: true where evaluation threw


# --- per-compile memo: every Column op is a JVM round trip, so build each piece once ----------

_MEMO: ContextVar[dict] = ContextVar("rocketfilter_selector_memo")


def _memo(key, build: Callable):
    memo = _MEMO.get()
    if key not in memo:
        memo[key] = build()
    return memo[key]


def _lit(value, spark_type: Optional[str] = None) -> Column:
    def build():
        c = F.lit(value)
        return c.cast(spark_type) if spark_type else c
    return _memo(("lit", type(value), value, spark_type), build)


def _parsed(parser: Callable, col: Column) -> tuple:
    return _memo((parser, id(col)), lambda: (col, parser(col)))[1]


# --- small algebra over optional Columns (None = statically false / absent) -------------------

def _any(*cols: Optional[Column]) -> Optional[Column]:
    present = [c for c in cols if c is not None]
    if not present:
        return None
    out = present[0]
    for c in present[1:]:
        out = out | c
    return out


def _when(cond: Optional[Column], err: Optional[Column]) -> Optional[Column]:
    """``cond AND err`` for error propagation; cond None means always."""
    if err is None:
        return None
    return err if cond is None else (cond & err)


def _is_null(a: Alt) -> Column:
    if a.value is None:
        return _lit(True)
    if not a.nullable:
        return _lit(False)
    return _memo(("isnull", id(a.value)), lambda: (a.value, a.value.isNull()))[1]


def _not_null(a: Alt) -> Optional[Column]:
    """None when the value can never be null."""
    if a.value is None:
        return _lit(False)
    if not a.nullable:
        return None
    return _memo(("notnull", id(a.value)), lambda: (a.value, a.value.isNotNull()))[1]


def _null_bool() -> Column:
    return _lit(None, "boolean")


def _bool(a: Alt) -> Column:
    return _null_bool() if a.value is None else a.value


def _boolean(value: Optional[Column], error: Optional[Column] = None) -> Alt:
    return Alt(A.BOOLEAN, value, error)


def _collapse(alts: list) -> Alt:
    """Merge guarded boolean alternatives into one Alt (a CASE over the guards)."""
    if len(alts) == 1 and alts[0].guard is None:
        return alts[0]
    value = error = None
    for a in alts:
        v = _bool(a)
        e = _lit(False) if a.error is None else a.error
        value = F.when(a.guard, v) if value is None else value.when(a.guard, v)
        error = F.when(a.guard, e) if error is None else error.when(a.guard, e)
    return _boolean(value, F.coalesce(error, _lit(False)))


def _lift1(xs: list, fn: Callable) -> list:
    out = []
    for a in xs:
        r = fn(a)
        out.append(Alt(r.kind, r.value, r.error, a.guard, r.nullable))
    return out


def _lift2(xs: list, ys: list, fn: Callable) -> Alt:
    out = []
    for a in xs:
        for b in ys:
            r = fn(a, b)
            guard = a.guard if b.guard is None else (b.guard if a.guard is None else a.guard & b.guard)
            out.append(Alt(r.kind, r.value, r.error, guard))
    return _collapse(out)


# --- the coercing comparison (ComparisonExpression.__compare, string conversion on) -----------

@dataclass(frozen=True)
class _Pair:
    """Both operands converted to one comparison domain; ``error`` where the conversion throws."""
    domain: str  # int, long, double, string, boolean, incomparable, cce, object
    left: Optional[Column] = None
    right: Optional[Column] = None
    error: Optional[Column] = None


_PARSERS = {A.INTEGER: integer_value_of, A.LONG: long_value_of, A.DOUBLE: double_value_of}
_DOMAIN = {A.INTEGER: "int", A.LONG: "long", A.DOUBLE: "double", A.STRING: "string",
           A.BOOLEAN: "boolean"}


def _coerce(a: Alt, b: Alt) -> _Pair:
    ka, kb = a.kind, b.kind
    if OBJECT in (ka, kb):
        return _Pair("object")
    if ka == kb:
        return _Pair(_DOMAIN[ka], a.value, b.value)
    if ka in _NUMERIC and kb in _NUMERIC:
        domain = "double" if A.DOUBLE in (ka, kb) else "long"
        cast = "double" if domain == "double" else "bigint"
        return _Pair(domain, a.value.cast(cast), b.value.cast(cast))
    if ka in _NUMERIC and kb == A.STRING:
        value, valid = _parsed(_PARSERS[ka], b.value)
        return _Pair(_DOMAIN[ka], a.value, value, ~valid)
    if ka == A.STRING and kb in _NUMERIC:
        value, valid = _parsed(_PARSERS[kb], a.value)
        return _Pair(_DOMAIN[kb], value, b.value, ~valid)
    if ka == A.STRING and kb == A.BOOLEAN:
        return _Pair("boolean", _parsed(boolean_value_of, a.value), b.value)
    if ka == A.BOOLEAN and kb == A.STRING:
        return _Pair("cce")  # Java casts the Boolean to String: ClassCastException
    return _Pair("incomparable")  # Boolean vs number: __compare answers -1


def _maybe_zero(c: Column, node_value) -> bool:
    return not isinstance(node_value, (int, float)) or node_value == 0


def _double_eq(l: Column, r: Column, lv=None, rv=None) -> Column:
    """Java Double.equals / compare()==0: bitwise, so NaN equals NaN and -0.0 differs from 0.0."""
    eq = l == r  # Spark: NaN = NaN is true, as in Java
    if not (_maybe_zero(l, lv) and _maybe_zero(r, rv)):
        return eq
    return eq & (is_negative_zero(l) == is_negative_zero(r))


def _double_rel(op: str, l: Column, r: Column, lv=None, rv=None) -> Column:
    """Double.compare order: Spark's NaN-largest order, plus -0.0 < 0.0."""
    base = {">": l > r, ">=": l >= r, "<": l < r, "<=": l <= r}[op]
    if not (_maybe_zero(l, lv) and _maybe_zero(r, rv)):
        return base
    lneg, rneg = is_negative_zero(l), is_negative_zero(r)
    zeros = (l == F.lit(0.0)) & (r == F.lit(0.0))
    java_lt, java_gt = zeros & lneg & ~rneg, zeros & rneg & ~lneg
    if op in (">", "<"):
        return base | (java_gt if op == ">" else java_lt)
    return base & ~(java_lt if op == ">=" else java_gt)


# --- node compilers ---------------------------------------------------------------------------

class _Context:
    def __init__(self, properties: Union[str, Column, None], schema: Optional[T.StructType],
                 columns: Optional[Mapping[str, str]] = None):
        self.map = F.col(properties) if isinstance(properties, str) else properties
        self.schema = schema
        self.columns = columns or {}

    def prop(self, name: str) -> list:
        return _memo(("prop", name), lambda: self._resolve(name))

    def _resolve(self, name: str) -> list:
        if self.map is not None:
            return [Alt(A.STRING, self.map.getItem(name))]
        if self.schema is not None:
            return [self._typed(name)]
        return self._untyped(name)

    def _typed(self, name: str) -> Alt:
        column = self.columns.get(name, name)
        if column not in self.schema.fieldNames():
            return Alt(NULL, None)  # an absent property is null, as on the broker
        field = self.schema[column]
        kind = _TYPE_KIND.get(type(field.dataType))
        if kind is not None:
            return Alt(kind, F.col(column), nullable=field.nullable)
        if isinstance(field.dataType, _OPAQUE_TYPES):
            return Alt(OBJECT, F.col(column), nullable=field.nullable)
        raise ValueError(
            f"column {column!r} has type {field.dataType.simpleString()}, which has no RocketMQ "
            "counterpart; cast it to int, bigint, double, boolean or string")

    def _untyped(self, name: str) -> list:
        col = F.col(self.columns.get(name, name))
        kind_of = F.typeof(col)
        return [Alt(kind, col.cast(spark), guard=kind_of == F.lit(spark))
                for kind, spark in _SPARK_TYPE.items()]


def _constant(node: A.Constant, ctx) -> list:
    value = F.lit(node.value)
    if node.kind in (A.INTEGER, A.LONG):
        value = value.cast(_SPARK_TYPE[node.kind])
    return [Alt(node.kind, value, nullable=False)]


def _bool_constant(node: A.BoolConstant, ctx) -> list:
    if node.value is None:
        return [Alt(NULL, None)]
    return [Alt(A.BOOLEAN, F.lit(node.value), nullable=False)]


def _property(node: A.Property, ctx) -> list:
    return ctx.prop(node.name)


def _neg(node: A.Neg, ctx) -> list:
    def negate(a: Alt) -> Alt:
        if a.kind == A.INTEGER or a.kind == A.LONG:
            low = INT_MIN if a.kind == A.INTEGER else LONG_MIN
            lit_low = F.lit(low).cast(_SPARK_TYPE[a.kind])
            # Java's -x wraps MIN_VALUE to itself; Spark's ANSI negation would raise.
            return Alt(a.kind, F.when(a.value == lit_low, lit_low).otherwise(-a.value),
                       a.error, nullable=a.nullable)
        if a.kind == A.DOUBLE:
            return Alt(a.kind, -a.value, a.error, nullable=a.nullable)
        return Alt(NULL, None, a.error)  # negating a non-number yields null
    return _lift1(compile_node(node.operand, ctx), negate)


def _bool_cast(node: A.BoolCast, ctx) -> list:
    def cast(a: Alt) -> Alt:
        if a.kind in (A.BOOLEAN, NULL):
            return _boolean(a.value, a.error)
        return _boolean(F.when(a.value.isNotNull(), _lit(False)), a.error)
    return [_collapse(_lift1(compile_node(node.operand, ctx), cast))]


def _operand(node, ctx) -> Alt:
    return _collapse(compile_node(node, ctx))


def _not(node: A.Not, ctx) -> list:
    a = _operand(node.operand, ctx)
    return [_boolean(None if a.value is None else ~a.value, a.error)]


def _and(node: A.And, ctx) -> list:
    l, r = _operand(node.left, ctx), _operand(node.right, ctx)
    # r is evaluated, and its error counts, unless l is FALSE.
    return [_boolean(_bool(l) & _bool(r), _any(l.error, _when(F.coalesce(_bool(l), _lit(True)),
                                                             r.error)))]


def _or(node: A.Or, ctx) -> list:
    l, r = _operand(node.left, ctx), _operand(node.right, ctx)
    return [_boolean(_bool(l) | _bool(r), _any(l.error, _when(F.coalesce(~_bool(l), _lit(True)),
                                                             r.error)))]


def _equal(node: A.Equal, ctx) -> list:
    lv = getattr(node.left, "value", None)
    rv = getattr(node.right, "value", None)

    def eq(a: Alt, b: Alt) -> Alt:
        errors = _any(a.error, b.error)
        if a.value is None or b.value is None:  # a NULL literal or a negated non-number
            if a.value is None and b.value is None:
                return _boolean(_lit(True), errors)
            if b.value is None:  # x IS NULL
                return _boolean(_is_null(a), errors)
            return _boolean(F.when(_is_null(b), _lit(True)), errors)
        p = _coerce(a, b)
        if p.domain == "double":
            core = _double_eq(p.left, p.right, lv, rv)
        elif p.domain == "object":
            # Java's `lv == rv`: an opaque object equals only itself (the same property).
            same = isinstance(node.left, A.Property) and node.left == node.right
            core = _lit(same)
        elif p.domain == "incomparable":
            core = _lit(False)
        elif p.domain == "cce":
            core, p = _null_bool(), _Pair("cce", error=_lit(True))
        else:
            core = p.left == p.right
        both = [c for c in (_not_null(a), _not_null(b)) if c is not None]
        if a.nullable and b.nullable:
            value = (F.when(_is_null(a) & _is_null(b), _lit(True))
                     .when(_is_null(a), _null_bool()).when(_is_null(b), _lit(False))
                     .otherwise(core))
        elif a.nullable:
            value = F.when(_not_null(a), core)  # x null, y not: null
        elif b.nullable:
            value = F.when(_is_null(b), _lit(False)).otherwise(core)
        else:
            value = core
        conv = p.error if not both else _when(_and_all(both), p.error)
        return _boolean(value, _any(errors, conv))
    return [_lift2(compile_node(node.left, ctx), compile_node(node.right, ctx), eq)]


def _and_all(cols: list) -> Column:
    out = cols[0]
    for c in cols[1:]:
        out = out & c
    return out


def _compare(node: A.Compare, ctx) -> list:
    op = node.op
    lv = getattr(node.left, "value", None)
    rv = getattr(node.right, "value", None)

    def rel(a: Alt, b: Alt) -> Alt:
        # x null -> null before y is evaluated; y null -> null.
        a_nn, b_nn = _not_null(a), _not_null(b)
        err = _any(a.error, _when(a_nn, b.error))
        if a.value is None or b.value is None:
            return _boolean(_null_bool(), err)
        if a.kind == A.STRING and b.kind == A.STRING:  # both parsed with Double.valueOf
            (l, lok), (r, rok) = _parsed(double_value_of, a.value), _parsed(double_value_of, b.value)
            p = _Pair("double", l, r, ~(lok & rok))
        else:
            p = _coerce(a, b)
        if p.domain in ("object", "cce"):
            core, p = _null_bool(), _Pair(p.domain, error=_lit(True))
        elif p.domain == "incomparable":
            core = F.lit(op in ("<", "<="))  # __compare's -1
        elif p.domain == "double":
            core = _double_rel(op, p.left, p.right, lv, rv)
        else:
            core = {">": p.left > p.right, ">=": p.left >= p.right,
                    "<": p.left < p.right, "<=": p.left <= p.right}[op]
        guards = [c for c in (a_nn, b_nn) if c is not None]
        value = core if not guards else F.when(_and_all(guards), core)
        return _boolean(value, _any(err, p.error if not guards else _when(_and_all(guards),
                                                                         p.error)))
    return [_lift2(compile_node(node.left, ctx), compile_node(node.right, ctx), rel)]


def _in(node: A.In, ctx) -> list:
    def member(a: Alt) -> Alt:
        if a.kind != A.STRING:
            return _boolean(_null_bool(), a.error)
        hit = a.value.isin(list(node.values))
        return _boolean(~hit if node.negated else hit, a.error)
    return [_collapse(_lift1(compile_node(node.operand, ctx), member))]


_STRING_OPS = {"CONTAINS": Column.contains, "STARTSWITH": Column.startswith,
               "ENDSWITH": Column.endswith}


def _string_op(node: A.StringOp, ctx) -> list:
    if node.search == "":
        return [_boolean(_lit(False))]  # the operand is not even evaluated

    def test(a: Alt) -> Alt:
        if a.kind != A.STRING:
            return _boolean(_lit(False), a.error)
        hit = _STRING_OPS[node.op](a.value, F.lit(node.search))
        return _boolean(F.coalesce(~hit if node.negated else hit, _lit(False)), a.error)
    return [_collapse(_lift1(compile_node(node.operand, ctx), test))]


_COMPILERS = {
    A.Constant: _constant, A.BoolConstant: _bool_constant, A.Property: _property,
    A.Neg: _neg, A.BoolCast: _bool_cast, A.Not: _not, A.And: _and, A.Or: _or,
    A.Equal: _equal, A.Compare: _compare, A.In: _in, A.StringOp: _string_op,
}


def compile_node(node: A.Node, ctx: _Context) -> list:
    """The alternatives (usually one) of a node's Java value."""
    return _COMPILERS[type(node)](node, ctx)


def compile_selector(root: A.Node, properties: Union[str, Column, None] = "properties",
                     schema: Optional[T.StructType] = None,
                     columns: Optional[Mapping[str, str]] = None) -> CompiledSelector:
    """Compile a selector's AST root to the broker's decision and its diagnostics.

    With ``properties=None``, ``columns`` may map a property name to the top-level column that
    holds it (default: the column of the same name).
    """
    token = _MEMO.set({})
    try:
        return _finish(_operand(root, _Context(properties, schema, columns)))
    finally:
        _MEMO.reset(token)


def _finish(result: Alt) -> CompiledSelector:
    value = _bool(result)
    if result.error is None:
        return CompiledSelector(F.coalesce(value, _lit(False)), value, _lit(False))
    error = F.coalesce(result.error, _lit(False))
    return CompiledSelector(F.coalesce(~error & value, _lit(False)),
                            F.when(~error, value), error)
