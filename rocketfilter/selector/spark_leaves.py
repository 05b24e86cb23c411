"""Comparisons of values (`=`, `>`...) as Native truths, and the guarded-alternatives lift.

Operands are Alt lists (spark_values): one Alt per possible Java class, each with its guard. A
comparison is computed per pair of alternatives and merged into one Native by a CASE over the
guards (usually there is one pair and no CASE). Values here are leaves of the selector tree
(properties, literals, their negations), so reading one a few times keeps the size linear.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

from pyspark.sql import Column
from pyspark.sql import functions as F

from .. import javalang as J
from . import ast as A
from .javacasts import boolean_value_of, integer_value_of
from .spark_truth import LEAF_LABELS, OTHER, STRING, Key, Native, Truth
from .spark_values import (NOT_LITERAL, OBJECT, Alt, Pair, all_of, any_of, both_doubles, coerce,
                           equal_core, guard_of, is_null, lit, not_null, null_bool, only_if,
                           parsed, relation_core)

LEAF_DEPTH = 16  # bound on a comparison's own expression depth (parse guards, Double order)

def leaf_depth(alts: List[Alt]) -> int:
    return max((a.depth for a in alts), default=1) + LEAF_DEPTH


def collapse(parts: List[Tuple[Optional[Column], Native]], depth: int) -> Native:
    """One Native from per-alternative results: a CASE over the guards."""
    if len(parts) == 1 and parts[0][0] is None:
        guard, only = parts[0]
        return Native(only.value, only.error(), only.strict, depth, only.null_error)
    value = error = None
    has_error = any(t.error() is not None for _, t in parts)
    for guard, t in parts:
        e = t.error() if t.error() is not None else lit(False)
        value = F.when(guard, t.value) if value is None else value.when(guard, t.value)
        if has_error:
            error = F.when(guard, e) if error is None else error.when(guard, e)
    if error is not None:
        error = error.otherwise(lit(False))
    return Native(value, error, all(t.strict for _, t in parts), depth + 1)


def lift1(alts: List[Alt], fn: Callable[[Alt], Native]) -> Native:
    return collapse([(a.guard, fn(a)) for a in alts], leaf_depth(alts))


def lift2(xs: List[Alt], ys: List[Alt], fn: Callable[[Alt, Alt], Native]) -> Native:
    return collapse([(guard_of(a, b), fn(a, b)) for a in xs for b in ys], leaf_depth(xs + ys))


def equal_values(a: Alt, b: Alt) -> Native:
    """EQ(x, y) of two values (§5.3): both evaluated; x null -> null, y null -> FALSE, both
    null -> TRUE; then equals, then the coercing comparison."""
    errors = any_of(a.error, b.error)
    strict = errors is None
    if a.value is None or b.value is None:  # a NULL literal or a negated non-number
        if a.value is None and b.value is None:
            return Native(lit(True), errors, strict)
        if b.value is None:  # x IS NULL
            return Native(is_null(a), errors, strict)
        return Native(F.when(is_null(b), lit(True)), errors, strict)
    p = coerce(a, b)
    if p.domain == "object":
        # Java's `lv == rv`: an opaque object equals only itself (the same property).
        core = lit(a.value is b.value)
    elif p.domain == "incomparable":
        core = lit(False)
    elif p.domain == "cce":
        core, p = null_bool(), Pair("cce", error=lit(True))
    else:
        core = equal_core(p, a, b)  # null where an operand is null or a conversion threw
    if b.nullable:  # y null -> x IS NULL; the core is null where x is
        value = F.when(is_null(b), is_null(a))
        value = value.when(is_null(a), null_bool()) if not p.strict else value
        value = value.otherwise(core)
    elif a.nullable and not p.strict:
        value = F.when(not_null(a), core)
    else:
        value = core
    conversion = only_if(all_of(not_null(a), not_null(b)), p.error)
    return Native(value, any_of(errors, conversion), strict)


def operand_key(compiled, left: bool) -> Key:
    """An `=` operand as a key over LEAF_LABELS, when the other side is a boolean node."""
    if isinstance(compiled, Truth):
        return compiled.key()
    parts = [(a.guard, alt_key(a, left)) for a in compiled]
    if len(parts) == 1 and parts[0][0] is None:
        column = parts[0][1]
    else:
        column = None
        for guard, k in parts:
            column = F.when(guard, k) if column is None else column.when(guard, k)
        column = column.otherwise(lit(2))  # no class matched: null
    return Key(column, LEAF_LABELS, leaf_depth(compiled))


NOT_CONSTANT = object()


def constant_label(compiled, left: bool):
    """The LEAF_LABELS label of an `=` operand that is a literal (the other side being a
    boolean node), else NOT_CONSTANT."""
    if isinstance(compiled, Truth) or len(compiled) != 1:
        return NOT_CONSTANT
    (a,) = compiled
    if a.guard is not None or a.error is not None:
        return NOT_CONSTANT
    if a.value is None:
        return None
    if a.literal is NOT_LITERAL:
        return NOT_CONSTANT
    if isinstance(a.literal, bool):
        return a.literal
    if a.kind == A.STRING:  # on the left: Boolean.valueOf(it); on the right: a String
        return J.boolean_value_of(a.literal) if left else STRING
    return OTHER


def alt_key(a: Alt, left: bool) -> Column:
    """Index into LEAF_LABELS: False 0, True 1, null 2, error 3, String 4, other 5."""
    if a.value is None:
        base = lit(2)
    elif a.kind == A.BOOLEAN or (a.kind == A.STRING and left):
        # A String on the left of a Boolean becomes Boolean.valueOf(it).
        b = a.value if a.kind == A.BOOLEAN else parsed(boolean_value_of, a.value)
        base = F.coalesce(b.cast("int"), lit(2))
    else:
        base = F.when(is_null(a), lit(2)).otherwise(lit(4 if a.kind == A.STRING else 5))
    return base if a.error is None else F.when(a.error, lit(3)).otherwise(base)


def relation(op: str, a: Alt, b: Alt) -> Native:
    """REL(op, x, y) of two values (§5.5): x null -> null before y is evaluated; y null ->
    null; two Strings are both read as doubles; else the coercing comparison."""
    a_nn, b_nn = not_null(a), not_null(b)
    err = any_of(a.error, only_if(a_nn, b.error))
    if a.kind == OBJECT and a.value is not None:
        # Java casts x to Comparable as it reads it, before y: a non-null Object throws even
        # where y is null.
        return Native(null_bool(), any_of(err, lit(True) if a_nn is None else a_nn), a.error is None)
    if a.value is None or b.value is None:
        return Native(null_bool(), err)
    p = both_doubles(a, b) if a.kind == b.kind == A.STRING else coerce(a, b)
    if p.domain in ("object", "cce"):
        core, p = null_bool(), Pair(p.domain, error=lit(True))
    elif p.domain == "incomparable":
        core = lit(op in ("<", "<="))  # __compare's -1
    else:
        core = relation_core(op, p, a, b)  # null where an operand is null or unparsable
    both = all_of(a_nn, b_nn)
    value = core if p.strict or both is None else F.when(both, core)
    # Strict, and nothing else throws: where the value is null, an operand is null or the
    # conversion threw, so the error is "both operands are there".
    null_error = (both if both is not None else lit(True)) \
        if err is None and p.strict and p.error is not None else None
    return Native(value, any_of(err, only_if(both, p.error)), a.error is None,
                  null_error=null_error)


def in_range(op: str, s: Alt, lo: int, hi: int) -> Native:
    """`s >= lo AND s <= hi` (op AND) or `s < lo OR s > hi` (op OR) for a String s and two
    Integer literals, reading Integer.valueOf(s) once.

    Exact: the first comparison is null where s is null and throws where s does not parse,
    and then the second is never reached or never decisive; otherwise both read one number.
    """
    number, valid = parsed(integer_value_of, s.value)
    # lo <= n <= hi  <=>  |2n - (lo + hi)| <= hi - lo; in bigint, so nothing overflows.
    inside = (F.abs(number.cast("bigint") * lit(2, "bigint") - lit(lo + hi, "bigint"))
              <= lit(hi - lo, "bigint"))
    present = not_null(s)
    return Native(inside if op == "AND" else ~inside, only_if(present, ~valid), True,
                  s.depth + LEAF_DEPTH, present if present is not None else lit(True))
