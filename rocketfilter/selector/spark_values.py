"""Java values as Spark Columns, and RocketMQ's coercing comparison over them (SEMANTICS §5.4).

An ``Alt`` is one possible Java class of a value: its value Column (null = Java null), an
error Column (true where evaluating it threw) and, when the class is not certain, a guard.
Map properties are Strings and literals have their class, so there is usually one Alt; only
properties read from untyped top-level columns have several, one per ``typeof``.

Every Column operation is a JVM round trip, so pieces used more than once per compile are
built once, through a per-compile memo.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, Optional, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import ast as A
from .javacasts import (boolean_value_of, double_value_of, integer_value_of, is_negative_zero,
                        long_value_of)

NULL, OBJECT = "Null", "Object"
INT_MIN, LONG_MIN = -(1 << 31), -(1 << 63)
SPARK_TYPE = {A.INTEGER: "int", A.LONG: "bigint", A.DOUBLE: "double", A.BOOLEAN: "boolean",
              A.STRING: "string"}
TYPE_KIND = {T.IntegerType: A.INTEGER, T.LongType: A.LONG, T.DoubleType: A.DOUBLE,
             T.BooleanType: A.BOOLEAN, T.StringType: A.STRING}
OPAQUE_TYPES = (T.BinaryType, T.ArrayType, T.MapType, T.StructType)
NUMERIC = (A.INTEGER, A.LONG, A.DOUBLE)
NOT_LITERAL = object()  # Alt.literal when the value is not a constant


@dataclass(frozen=True)
class Alt:
    """One possible Java class of a value.

    ``value`` None means always null (kind Null); ``error`` None means it never throws;
    ``guard`` None means this class is certain; ``literal`` is the Python value of a constant.
    ``depth`` is how many expression levels the Columns nest (see spark.SPARK_DEPTH_LIMIT).
    """
    kind: str
    value: Optional[Column]
    error: Optional[Column] = None
    guard: Optional[Column] = None
    nullable: bool = True
    literal: object = NOT_LITERAL
    depth: int = 1


# --- per-compile memo ----------------------------------------------------------------------

MEMO: ContextVar[dict] = ContextVar("rocketfilter_selector_memo")


def memo(key: Hashable, build: Callable[[], object]) -> object:
    """``build()`` once per compile for ``key``; keys holding id()s keep their object alive."""
    table: Dict = MEMO.get()
    if key not in table:
        table[key] = build()
    return table[key]


def lit(value, spark_type: Optional[str] = None) -> Column:
    """A literal Column, built once per compile."""
    def build() -> Column:
        c = F.lit(value)
        return c.cast(spark_type) if spark_type else c
    return memo(("lit", type(value), value, spark_type), build)


def lit_array(values: Sequence, spark_type: Optional[str] = None) -> Column:
    """An array of literals (``lit(v, spark_type)`` each), built once per compile: chains and
    lookups repeat the same small tables term after term."""
    return memo(("lit_array", tuple((type(v), v) for v in values), spark_type),
                lambda: F.array(*[lit(v, spark_type) for v in values]))


def null_bool() -> Column:
    return lit(None, "boolean")


def parsed(parser: Callable, col: Column) -> Any:
    """``parser(col)`` built once per compile for the same Column object."""
    return memo((parser, id(col)), lambda: (col, parser(col)))[1]


def is_null(a: Alt) -> Column:
    if a.value is None:
        return lit(True)
    if not a.nullable:
        return lit(False)
    return memo(("isnull", id(a.value)), lambda: (a.value, a.value.isNull()))[1]


def not_null(a: Alt) -> Optional[Column]:
    """None when the value can never be null."""
    if a.value is None:
        return lit(False)
    if not a.nullable:
        return None
    return memo(("notnull", id(a.value)), lambda: (a.value, a.value.isNotNull()))[1]


# --- small algebra over optional Columns (None = statically false / absent) ---------------

def any_of(*cols: Optional[Column]) -> Optional[Column]:
    """OR of the present Columns; None when none is present."""
    present = [c for c in cols if c is not None]
    if not present:
        return None
    out = present[0]
    for c in present[1:]:
        out = out | c
    return out


def all_of(*cols: Optional[Column]) -> Optional[Column]:
    """AND of the present Columns; None (= always) when none is present."""
    present = [c for c in cols if c is not None]
    if not present:
        return None
    out = present[0]
    for c in present[1:]:
        out = out & c
    return out


def only_if(cond: Optional[Column], err: Optional[Column]) -> Optional[Column]:
    """``cond AND err`` for error propagation; cond None means always."""
    if err is None:
        return None
    return err if cond is None else (cond & err)


def guard_of(a: Alt, b: Alt) -> Optional[Column]:
    """The guard of a pair of alternatives."""
    if a.guard is None or b.guard is None:
        return a.guard if b.guard is None else b.guard
    return a.guard & b.guard


# --- the coercing comparison (ComparisonExpression.__compare, string conversion on) -------

@dataclass(frozen=True)
class Pair:
    """Both operands converted to one comparison domain; ``error`` where the conversion throws.

    Converted values are null wherever a conversion throws or an operand is null, so a
    comparison of them is null there too (``strict``): callers need no null guards.
    """
    domain: str  # int, long, double, string, boolean, incomparable, cce, object
    left: Optional[Column] = None
    right: Optional[Column] = None
    error: Optional[Column] = None

    @property
    def strict(self) -> bool:
        return self.domain not in ("incomparable", "cce", "object")


PARSERS = {A.INTEGER: integer_value_of, A.LONG: long_value_of, A.DOUBLE: double_value_of}
_DOMAIN = {A.INTEGER: "int", A.LONG: "long", A.DOUBLE: "double", A.STRING: "string",
           A.BOOLEAN: "boolean"}


def coerce(a: Alt, b: Alt) -> Pair:
    """Convert two non-null-kind alternatives as Java's ``__compare`` does (§5.4's table)."""
    ka, kb = a.kind, b.kind
    if OBJECT in (ka, kb):
        return Pair("object")
    if ka == kb:
        return Pair(_DOMAIN[ka], a.value, b.value)
    if ka in NUMERIC and kb in NUMERIC:
        domain = "double" if A.DOUBLE in (ka, kb) else "long"
        cast = "double" if domain == "double" else "bigint"
        return Pair(domain, a.value.cast(cast), b.value.cast(cast))
    if ka in NUMERIC and kb == A.STRING:
        value, valid = parsed(PARSERS[ka], b.value)
        return Pair(_DOMAIN[ka], a.value, value, ~valid)
    if ka == A.STRING and kb in NUMERIC:
        value, valid = parsed(PARSERS[kb], a.value)
        return Pair(_DOMAIN[kb], value, b.value, ~valid)
    if ka == A.STRING and kb == A.BOOLEAN:
        return Pair("boolean", parsed(boolean_value_of, a.value), b.value)
    if ka == A.BOOLEAN and kb == A.STRING:
        return Pair("cce")  # Java casts the Boolean to String: ClassCastException
    return Pair("incomparable")  # Boolean vs number: __compare answers -1


def both_doubles(a: Alt, b: Alt) -> Pair:
    """REL on two Strings: both are read with Double.valueOf, and either failing throws."""
    (left, lok), (right, rok) = parsed(double_value_of, a.value), parsed(double_value_of, b.value)
    return Pair("double", left, right, ~(lok & rok))


def _maybe_zero(a: Alt) -> bool:
    return a.literal is NOT_LITERAL or a.literal == 0


def equal_core(p: Pair, a: Alt, b: Alt) -> Column:
    """Java equals / compare()==0 of two converted values; Double is bitwise (NaN = NaN,
    -0.0 <> 0.0), Boolean against a TRUE/FALSE literal is the value itself or its negation."""
    l, r = p.left, p.right
    if p.domain == "double":
        eq = l == r  # Spark: NaN = NaN is true, as in Java
        if not (_maybe_zero(a) and _maybe_zero(b)):
            return eq
        return eq & (is_negative_zero(l) == is_negative_zero(r))
    if p.domain == "boolean" and isinstance(b.literal, bool):
        return l if b.literal else ~l
    if p.domain == "boolean" and isinstance(a.literal, bool):
        return r if a.literal else ~r
    return l == r


def relation_core(op: str, p: Pair, a: Alt, b: Alt) -> Column:
    """``l op r`` in Java's order; for Double that is Double.compare: NaN largest, -0.0 < 0.0."""
    l, r = p.left, p.right
    base = {">": l > r, ">=": l >= r, "<": l < r, "<=": l <= r}[op]
    if p.domain != "double" or not (_maybe_zero(a) and _maybe_zero(b)):
        return base
    lneg, rneg = is_negative_zero(l), is_negative_zero(r)
    zeros = (l == F.lit(0.0)) & (r == F.lit(0.0))
    java_lt, java_gt = zeros & lneg & ~rneg, zeros & rneg & ~lneg
    if op in (">", "<"):
        return base | (java_gt if op == ">" else java_lt)
    return base & ~(java_lt if op == ">=" else java_gt)


def negate(a: Alt) -> Alt:
    """Java's unary minus: Integer/Long wrap MIN_VALUE to itself, anything else gives null."""
    if isinstance(a.literal, (int, float)) and not isinstance(a.literal, bool):
        value = -a.literal
        if a.kind in (A.INTEGER, A.LONG) and value == -(INT_MIN if a.kind == A.INTEGER
                                                        else LONG_MIN):
            value = -value  # MIN_VALUE wraps to itself
        return Alt(a.kind, lit(value, SPARK_TYPE[a.kind]), a.error, a.guard, False, value)
    if a.kind in (A.INTEGER, A.LONG):
        low = lit(INT_MIN if a.kind == A.INTEGER else LONG_MIN, SPARK_TYPE[a.kind])
        # Spark's ANSI negation would raise on MIN_VALUE.
        value = F.when(a.value == low, low).otherwise(-a.value)
        return Alt(a.kind, value, a.error, a.guard, a.nullable, depth=a.depth + 2)
    if a.kind == A.DOUBLE:
        return Alt(a.kind, -a.value, a.error, a.guard, a.nullable, depth=a.depth + 1)
    return Alt(NULL, None, a.error, a.guard, depth=a.depth)
