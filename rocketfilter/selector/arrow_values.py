"""Java values over an Arrow batch, and RocketMQ's coercing comparison over them (SEMANTICS §5.4).

The Arrow twin of :mod:`.spark_values`. A :class:`Value` is one selector node's result for every
row of a batch: its Java class is known when the selector is compiled (map properties are
Strings, literals have their class, typed columns take theirs from the Arrow type), so one
``kind`` covers the whole batch. Numbers and booleans are numpy arrays, Strings stay Arrow
arrays (for Arrow's string kernels); ``valid`` is false where Java's value is null and ``error``
true where its evaluation threw. Boolean outcomes are also handled as codes (False 0, True 1,
null 2, error 3), so AND/OR/NOT and ``=`` over booleans are table lookups.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import arrow_casts as C
from . import ast as A

NULL, OBJECT = "Null", "Object"
NUMERIC = (A.INTEGER, A.LONG, A.DOUBLE)
FALSE, TRUE, NONE, ERROR = 0, 1, 2, 3
_SIGN_MASK = np.int64(0x7FFFFFFFFFFFFFFF)
_CANONICAL_NAN = np.int64(0x7FF8000000000000)


@dataclass
class Value:
    """One node's Java result for each row. ``data`` is None for kinds Null and Object (an
    Object's only property is its identity, ``token``)."""

    kind: str
    data: object
    valid: np.ndarray
    error: np.ndarray
    token: object = None

    def __len__(self) -> int:
        return len(self.valid)


def codes(v: Value) -> np.ndarray:
    """A boolean node's outcome as codes: False 0, True 1, null 2, error 3."""
    out = np.full(len(v), NONE, np.int8)
    if v.kind == A.BOOLEAN:
        out[v.valid] = v.data[v.valid]
    return np.where(v.error, np.int8(ERROR), out)


def from_codes(c: np.ndarray) -> Value:
    return Value(A.BOOLEAN, c == TRUE, c <= TRUE, c == ERROR)


def as_boolean(v: Value) -> np.ndarray:
    """The ``(Boolean)`` cast of AND/OR/NOT operands, as codes: a non-null value of another
    class throws ClassCastException."""
    if v.kind in (A.BOOLEAN, NULL):
        return codes(v)
    return np.where(v.error | v.valid, np.int8(ERROR), np.int8(NONE))


def constant(kind: str, value, n: int) -> Value:
    """A literal, for every row."""
    ones, zeros = np.ones(n, bool), np.zeros(n, bool)
    if kind == NULL:
        return Value(NULL, None, zeros, zeros)
    if kind == A.STRING:
        return Value(kind, pa.array([value] * n, pa.string()), ones, zeros)
    dtype = {A.INTEGER: np.int64, A.LONG: np.int64, A.DOUBLE: np.float64, A.BOOLEAN: bool}[kind]
    return Value(kind, np.full(n, value, dtype), ones, zeros)


def null_like(v: Value) -> Value:
    """Java null for every row, keeping ``v``'s errors."""
    return Value(NULL, None, np.zeros(len(v), bool), v.error)


# --- typed columns ------------------------------------------------------------------------------

def column_value(column: pa.Array, token: str) -> Value:
    """A typed top-level column as a Java value: int -> Integer, bigint -> Long, double ->
    Double, boolean -> Boolean, string -> String, binary/nested -> an opaque Object."""
    t = column.type
    valid = np.array(column.is_valid().to_numpy(zero_copy_only=False))
    zeros = np.zeros(len(column), bool)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return Value(A.STRING, column.cast(pa.string()), valid, zeros)
    for check, kind, fill, dtype in ((pa.types.is_int32, A.INTEGER, 0, np.int64),
                                     (pa.types.is_int64, A.LONG, 0, np.int64),
                                     (pa.types.is_float64, A.DOUBLE, 0.0, np.float64),
                                     (pa.types.is_boolean, A.BOOLEAN, False, bool)):
        if check(t):
            return Value(kind, np.array(C._np(column, fill), dtype), valid, zeros)
    if pa.types.is_binary(t) or pa.types.is_nested(t):
        return Value(OBJECT, None, valid, zeros, token=token)
    raise ValueError(f"column {token!r} has Arrow type {t}, which has no RocketMQ counterpart; "
                     "cast it to int32, int64, float64, bool or string")


# --- negation -----------------------------------------------------------------------------------

def negate(v: Value) -> Value:
    """Java's unary minus: Integer/Long wrap MIN_VALUE to itself, non-numbers give null."""
    if v.kind == A.DOUBLE:
        return Value(v.kind, -v.data, v.valid, v.error)
    if v.kind in (A.INTEGER, A.LONG):
        low = -(1 << 31) if v.kind == A.INTEGER else -(1 << 63)
        with np.errstate(over="ignore"):
            data = np.where(v.data == low, v.data, -v.data)
        return Value(v.kind, data, v.valid, v.error)
    return null_like(v)


# --- the coercing comparison (ComparisonExpression.__compare, string conversion on) ------------

def double_key(d: np.ndarray) -> np.ndarray:
    """An int64 whose order is ``Double.compare``'s and whose equality is ``Double.equals``:
    -0.0 below 0.0, every NaN equal and above +Infinity."""
    bits = np.where(np.isnan(d), _CANONICAL_NAN, d.view(np.int64))
    return np.where(bits < 0, bits ^ _SIGN_MASK, bits)


_PARSERS = {A.INTEGER: C.integer_value_of, A.LONG: C.long_value_of, A.DOUBLE: C.double_value_of}


@dataclass
class Pair:
    """Both operands in one comparison domain: ``left``/``right`` numpy keys that compare as
    Java does, ``error`` where a conversion throws, or ``fixed``: the compare() result when
    it does not depend on the values (-1 for incomparable classes, None for string equality)."""

    left: Optional[np.ndarray] = None
    right: Optional[np.ndarray] = None
    error: Optional[np.ndarray] = None
    fixed: Optional[int] = None
    strings: Optional[Tuple[pa.Array, pa.Array]] = None


def _key(kind: str, data: np.ndarray) -> np.ndarray:
    return double_key(data) if kind == A.DOUBLE else data.astype(np.int64)


def coerce(a: Value, b: Value, parse: Callable) -> Pair:
    """Both non-null, comparable operands converted as Java's ``__compare`` does (§5.4's table);
    ``parse(value, parser)`` parses a String operand once per batch."""
    ka, kb = a.kind, b.kind
    n = len(a)
    if ka == kb == A.STRING:
        return Pair(strings=(a.data, b.data))
    if ka == kb:
        return Pair(_key(ka, a.data), _key(kb, b.data))
    if ka in NUMERIC and kb in NUMERIC:
        if A.DOUBLE in (ka, kb):
            return Pair(double_key(a.data.astype(np.float64)), double_key(b.data.astype(np.float64)))
        return Pair(a.data, b.data)
    if ka in NUMERIC and kb == A.STRING:
        values, ok = parse(b, _PARSERS[ka])
        return Pair(_key(ka, a.data), _key(ka, values), ~ok)
    if ka == A.STRING and kb in NUMERIC:
        values, ok = parse(a, _PARSERS[kb])
        return Pair(_key(kb, values), _key(kb, b.data), ~ok)
    if ka == A.STRING and kb == A.BOOLEAN:
        return Pair(parse(a, C.boolean_value_of).astype(np.int64), b.data.astype(np.int64))
    if ka == A.BOOLEAN and kb == A.STRING:
        return Pair(fixed=0, error=np.ones(n, bool))  # Java casts the Boolean to String: CCE
    return Pair(fixed=-1)  # Boolean against a number: __compare answers -1


def sign(p: Pair, n: int) -> np.ndarray:
    """compare()'s sign for every row (meaningful where both operands are valid)."""
    if p.fixed is not None:
        return np.full(n, p.fixed, np.int8)
    return (p.left > p.right).astype(np.int8) - (p.left < p.right).astype(np.int8)


def equal(p: Pair, n: int) -> np.ndarray:
    """Java ``equals``, then ``compare() == 0``, for every row."""
    if p.strings is not None:
        return C._np(pc.equal(*p.strings), False).astype(bool)
    if p.fixed is not None:
        return np.full(n, p.fixed == 0, bool)
    return p.left == p.right
