"""Outcomes of boolean selector nodes as Spark Columns: TRUE, FALSE, NULL or an error.

Java's evaluation of a boolean node ends in one of four outcomes. A ``Truth`` offers it in
several *forms*, each built on demand and at most once:

* ``value``: the native three-valued boolean, for nodes that never throw (``Native``);
* ``decides()``: TRUE exactly where Java's result is TRUE without an error (elsewhere FALSE or
  null): all the broker's decision needs, and usually plain Spark boolean algebra;
* ``key()``: one non-null int Column with the outcome each of its values stands for, which
  packs all four outcomes into one Column for the nodes above to combine;
* ``error()`` and ``raw()``: the diagnostics.

**Size stays linear.** A Spark expression is a tree: a Column used twice is copied twice, and a
node that copies its child's Columns twice doubles at every level. So every form of a node uses,
for each child, one form, once (a ``Native`` truth's ``value`` and ``error`` may both be used:
its value never contains another truth, and its error contains one at most once). AND/OR chains
are combined flat: natively as balanced trees, in key form as one ``least`` over ranks.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from pyspark.sql import Column
from pyspark.sql import functions as F

from .spark_values import lit, lit_array, null_bool


class _Error:
    """The outcome "evaluation threw", next to True, False and None (null)."""

    def __repr__(self) -> str:
        return "ERROR"


ERROR = _Error()
# Two more labels for operands of `=` that are not booleans (see equal_keys).
STRING, OTHER = "String", "Other"
# The labels of a Key built from a leaf operand, by index: see spark_leaves.alt_key.
LEAF_LABELS = (False, True, None, ERROR, STRING, OTHER)


@dataclass(frozen=True)
class Key:
    """A non-null int Column; where it holds ``i``, the outcome is ``labels[i]``."""
    column: Column
    labels: Tuple
    depth: int


def lookup(key: Key, label_value: Callable[[object], object]) -> Column:
    """The Column mapping each key to ``label_value(its label)`` (a bool or None)."""
    values = [label_value(label) for label in key.labels]
    if len(set(values)) == 1:
        return lit(values[0], "boolean")
    hits = [i for i, v in enumerate(values) if v is True]
    if None not in values and len(hits) == 1:
        return key.column == lit(hits[0])
    return F.get(lit_array(values, "boolean"), key.column)


def _negated(label):
    return (not label) if isinstance(label, bool) else label


def balanced(cols: Sequence[Column], op: Callable[[Column, Column], Column]) -> Column:
    """``c0 op c1 op ...`` as a balanced tree: same order and result for an associative op,
    but depth log2(n), so long chains do not overflow the JVM's stack."""
    if len(cols) == 1:
        return cols[0]
    mid = len(cols) // 2
    return op(balanced(cols[:mid], op), balanced(cols[mid:], op))


def _log_depth(n: int) -> int:
    return max(1, math.ceil(math.log2(max(n, 2))))


class Truth(ABC):
    """A boolean node's Java outcome (see the module docstring).

    ``depth`` bounds the expression depth of ``decides()`` (and of ``value``), ``key_depth``
    that of ``key()``, ``error()`` and ``raw()``: they decide whether Spark can take them.
    """

    depth: int
    key_depth: int

    @property
    @abstractmethod
    def error_free(self) -> bool: ...

    @abstractmethod
    def negate(self) -> "Truth": ...

    @abstractmethod
    def decides(self) -> Column: ...

    @abstractmethod
    def key(self) -> Key: ...

    @abstractmethod
    def error(self) -> Optional[Column]:
        """True where evaluation throws; None when it never does."""

    @property
    def error_depth(self) -> int:
        """The depth of ``error()``."""
        return self.key_depth + 1

    @abstractmethod
    def raw(self) -> Column:
        """Java's Boolean result, null where it is null or where evaluation throws."""


class Native(Truth):
    """A native boolean ``value`` plus an optional ``error``, both at most ``depth`` deep.

    ``strict`` means the value is null wherever the error is true, so it can stand for
    ``decides()`` and ``raw()`` as it is. ``null_error``, for a strict Native, is a cheap
    Column equal to the error wherever the value is null (a comparison's "the operand is
    there", where its parse failing is the error): the key and the OR chain then read the
    value once instead of the value and the error, each of which holds the parse.
    """

    def __init__(self, value: Column, error: Optional[Column] = None, strict: bool = True,
                 depth: int = 1, null_error: Optional[Column] = None):
        self.value, self._error = value, error
        self.strict = strict or error is None
        self.null_error = null_error if error is not None and self.strict else None
        self.value_depth = depth
        self.depth = depth + (0 if self.strict else 1)
        self.key_depth = depth + 3
        self._key: Optional[Key] = None

    @property
    def error_free(self) -> bool:
        return self._error is None

    def negate(self) -> "Native":
        return Native(~self.value, self._error, self.strict, self.value_depth + 1,
                      self.null_error)

    def decides(self) -> Column:
        return self.value if self.strict else self.value & ~self._error

    def key(self) -> Key:
        if self._key is None:
            base = F.coalesce(self.value.cast("int"), lit(2))  # False 0, True 1, null 2
            if self._error is None:
                self._key = Key(base, LEAF_LABELS[:3], self.value_depth + 2)
            elif self.null_error is not None:  # null: an error where null_error holds
                self._key = Key(F.coalesce(self.value.cast("int"), F.when(
                    self.null_error, lit(3)).otherwise(lit(2))), LEAF_LABELS[:4],
                    self.value_depth + 2)
            else:
                self._key = Key(F.when(self._error, lit(3)).otherwise(base), LEAF_LABELS[:4],
                                self.value_depth + 3)
        return self._key

    def error(self) -> Optional[Column]:
        return self._error

    @property
    def error_depth(self) -> int:
        return self.value_depth

    def raw(self) -> Column:
        return self.value if self.strict else F.when(~self._error, self.value)


class Keyed(Truth):
    """An outcome known only through its key (such as `=` over boolean operands)."""

    def __init__(self, key: Key):
        self._fixed = key
        self.key_depth, self.depth = key.depth, key.depth + 1  # a lookup adds one level

    def key(self) -> Key:
        return self._fixed

    @property
    def error_free(self) -> bool:
        return ERROR not in self.key().labels

    def negate(self) -> "Keyed":
        k = self.key()
        return Keyed(Key(k.column, tuple(_negated(x) for x in k.labels), k.depth))

    def decides(self) -> Column:
        return lookup(self.key(), lambda x: x is True)

    def error(self) -> Optional[Column]:
        return None if self.error_free else lookup(self.key(), lambda x: x is ERROR)

    def raw(self) -> Column:
        return lookup(self.key(), lambda x: x if isinstance(x, bool) else None)


class Chain(Keyed):
    """AND/OR over two or more terms of which at least one may throw (§5.2).

    Java evaluates terms in order and stops at the first *decisive* one: an error, or FALSE
    for AND (TRUE for OR); failing that the result is null if any term was null, else TRUE for
    AND (FALSE for OR). In key form each term's outcome becomes a rank: an error at position
    i is 2i, a decisive value 2i+1, null 2n, the rest 2n+1; the smallest rank is the outcome.
    ``decides()`` needs no key: for AND it is a balanced AND of the terms' ``decides()``; for
    OR a flat CASE when the earlier terms are Native (their value and error are cheap to read).
    """

    def __init__(self, op: str, terms: List[Truth]):
        self.op, self.terms = op, terms
        self.stop = op == "OR"  # the decisive value
        self.key_depth = max(t.key_depth for t in terms) + 2  # get + least
        self.flat = op == "AND" or all(isinstance(t, Native) for t in terms[:-1])
        if op == "AND":
            self.depth = max(t.depth for t in terms) + _log_depth(len(terms))
        elif self.flat and any(_reads_key(t) for t in terms[:-1]):
            # a coalesce of lookups in keys and CASEs (see decides): the last term sits in a
            # CASE only when the term before it is read through its value
            wrapped = 0 if _reads_key(terms[-2]) else 1
            self.depth = max([t.key_depth if _reads_key(t) else t.depth + 1 for t in terms[:-1]]
                             + [terms[-1].depth + wrapped]) + 1
        elif self.flat:
            self.depth = max(t.depth for t in terms) + 1
        else:
            self.depth = self.key_depth + 1
        self._fixed: Optional[Key] = None
        self._decides: Optional[Column] = None

    @property
    def error_free(self) -> bool:
        return False

    def key(self) -> Key:
        if self._fixed is None:
            n = len(self.terms)
            ranks = []
            for i, term in enumerate(self.terms):
                k = term.key()
                table = [self._rank(label, i, n) for label in k.labels]
                ranks.append(F.get(lit_array(table), k.column))
            labels = tuple(ERROR if r % 2 == 0 else self.stop for r in range(2 * n))
            labels += (None, not self.stop)
            self._fixed = Key(F.least(*ranks), labels, self.key_depth)
        return self._fixed

    def _rank(self, label, i: int, n: int) -> int:
        if label is ERROR:
            return 2 * i
        if label is self.stop:
            return 2 * i + 1
        return 2 * n if label is None else 2 * n + 1

    def decides(self) -> Column:
        if self._decides is None:
            self._decides = self._native_decides()
        return self._decides

    def _native_decides(self) -> Column:
        if self.op == "AND":  # TRUE iff every term is TRUE without an error
            return balanced([t.decides() for t in self.terms], lambda a, b: a & b)
        if not self.flat:
            return lookup(self.key(), lambda x: x is True)
        # OR: TRUE iff some term is TRUE and no earlier one threw: the first term to stop
        # the chain decides (a CASE of those read through error and value, then a lookup in
        # the key of those with a null_error), the last one's decides() if none does.
        stops, case = [], None
        for t in self.terms[:-1]:
            if _reads_key(t):
                if case is not None:
                    stops, case = stops + [case], None
                stops.append(lookup(t.key(), _OR_STOP.get))
                continue
            for cond, result in ((t.error(), False), (t.value, True)):
                if cond is not None:
                    case = F.when(cond, lit(result)) if case is None else case.when(cond,
                                                                                   lit(result))
        if not stops:
            return case.otherwise(self.terms[-1].decides())
        last = self.terms[-1].decides() if case is None else \
            case.otherwise(self.terms[-1].decides())
        return F.coalesce(*stops, last)


# An OR term's key label -> the chain's answer when the term stops it (TRUE, or FALSE on an
# error), else null: go on.
_OR_STOP = {True: True, ERROR: False}


def _reads_key(term: Truth) -> bool:
    """Whether an OR chain reads this term through its key (a Native with a null_error)."""
    return isinstance(term, Native) and term.null_error is not None


def chain(op: str, terms: List[Truth]) -> Truth:
    """AND/OR of ``terms`` in order: natively when none can throw, else a ``Chain``."""
    if len(terms) == 1:
        return terms[0]
    if all(t.error_free for t in terms):
        # Spark's three-valued AND/OR is Java's when nothing throws; balanced, as associative.
        combine = (lambda a, b: a & b) if op == "AND" else (lambda a, b: a | b)
        values = [t.value if isinstance(t, Native) else t.raw() for t in terms]
        depth = max(t.depth if isinstance(t, Native) else t.key_depth + 1 for t in terms)
        return Native(balanced(values, combine), depth=depth + _log_depth(len(terms)))
    return Chain(op, terms)


# --- `=` with a boolean node on either side (EQ of §5.3 over outcomes) ---------------------

def equal_outcome(left, right):
    """EQ over operand outcomes: both are evaluated (errors win), then the null rules, then
    Boolean equality; a Boolean against a non-null String throws (ClassCastException), against
    anything else it is incomparable (FALSE)."""
    if left is ERROR or right is ERROR:
        return ERROR
    if left is None or right is None:
        return True if left is None and right is None else (None if left is None else False)
    if isinstance(left, bool) and isinstance(right, bool):
        return left == right
    if right == STRING:
        return ERROR
    return False


def _outcome_code(outcome) -> int:
    return 3 if outcome is ERROR else {False: 0, True: 1, None: 2}[outcome]


def equal_keys(left: Key, right: Key) -> Keyed:
    """EQ of two operands given as keys: one lookup in a 2-D table, each key read once.

    ``get(get(table, outer), inner)``: the deeper key goes outside, one level above the result.
    """
    left_outer = left.depth >= right.depth
    outer, inner = (left, right) if left_outer else (right, left)

    def code(i_label, o_label) -> int:
        pair = (o_label, i_label) if left_outer else (i_label, o_label)
        return _outcome_code(equal_outcome(*pair))

    rows = F.array(*[lit_array([code(i, o) for o in outer.labels]) for i in inner.labels])
    column = F.get(F.get(rows, inner.column), outer.column)
    return Keyed(Key(column, LEAF_LABELS[:4], max(outer.depth + 1, inner.depth + 2)))


def equal_constant(truth: Truth, label, truth_on_left: bool) -> Keyed:
    """EQ of a boolean node and a literal: a function of the node's outcome alone, so the
    node's key is reused as it is, with new labels (no new Column, no added depth)."""
    k = truth.key()
    labels = tuple(equal_outcome(x, label) if truth_on_left else equal_outcome(label, x)
                   for x in k.labels)
    return Keyed(Key(k.column, labels, k.depth))


def constant(value: Optional[bool]) -> Native:
    """A TRUE/FALSE/NULL constant outcome."""
    return Native(null_bool() if value is None else lit(value))
