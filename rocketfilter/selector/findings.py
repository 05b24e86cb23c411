"""What the linter (lint.py) reports and looks at: SelectorWarning, its Claims, LintContext."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Dict, NamedTuple, Optional, Tuple

from . import ast as A
from .errors import SelectorEvaluationError, SelectorSyntaxError
from .evaluate import evaluate
from .parser import ParseTree, parse_ast

ERROR = "error"  # a claim's outcome where Java's evaluation throws


class Claim(NamedTuple):
    """The reference evaluator's answer: selector `expression` on `props` gives `outcome`
    (True, False, None for NULL, or ERROR where Java's evaluation throws)."""
    expression: str
    props: Mapping[str, str]
    outcome: object


class SelectorWarning(Warning):
    """One lint finding; ``str(w)`` is one line, ``"col N: message; fix"`` (``"line L col N: ..."``
    beyond the first line of the selector; N and L are 1-based).

    ``code`` is a stable kebab-case id, ``position`` the 0-based offset into the selector (or
    None), ``fix`` a concrete suggestion and ``claims`` the evaluations the message relies on.
    """

    def __init__(self, code: str, message: str, position: Optional[int] = None, fix: str = "",
                 text: str = "", claims: Tuple[Claim, ...] = ()):
        self.code, self.message, self.position, self.fix = code, message, position, fix
        self.text, self.claims = text, tuple(claims)
        super().__init__(str(self))

    def __str__(self) -> str:
        body = f"{self.message}; {self.fix}" if self.fix else self.message
        if self.position is None:
            return body
        line = self.text.count("\n", 0, self.position) + 1
        col = self.position - (self.text.rfind("\n", 0, self.position) + 1) + 1
        return f"{'' if line == 1 else f'line {line} '}col {col}: {body}"

    def __repr__(self) -> str:
        return f"SelectorWarning({self.code!r}, position={self.position!r}, {str(self)!r})"


def outcome(expression: str, props: Mapping[str, str]):
    """The reference evaluator's result for `expression` on `props`, ERROR where it throws."""
    try:
        return evaluate(parse_ast(expression), props)
    except SelectorEvaluationError:
        return ERROR


def knowledge(known) -> Tuple[Optional[frozenset], Dict[str, tuple], Dict[str, Dict[str, int]]]:
    """known_properties as (names or None, samples by name, {name: {value: count}}); refuses
    what cannot be meant. A property's values may be an iterable (each occurrence counts once)
    or a mapping value -> how many messages carry it (a store sample's counts)."""
    if known is None:
        return None, {}, {}
    if isinstance(known, (str, bytes)):
        raise TypeError("known_properties must be property names or a mapping of name -> sample "
                        f"values, not a single {type(known).__name__}")
    samples: Dict[str, tuple] = {}
    counts: Dict[str, Dict[str, int]] = {}
    if isinstance(known, Mapping):
        for name, values in known.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, (Iterable, type(None))):
                raise TypeError(f"known_properties[{name!r}] must be an iterable of sample "
                                f"values, not {type(values).__name__}")
            kept, counted = [], {}
            for v in values or ():
                if v is None or v == "":  # absent; the broker has no empty values (§5.1)
                    continue
                if not isinstance(v, str):
                    raise TypeError(f"sample value {v!r} of {name!r} is a {type(v).__name__}: "
                                    "give values as the broker sees them, as strings")
                n = values[v] if isinstance(values, Mapping) else 1
                if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                    raise TypeError(f"the count of sample value {v!r} of {name!r} must be a positive "
                                    f"int, got {n!r}")
                kept.append(v)
                counted[v] = counted.get(v, 0) + n
            samples[name] = tuple(dict.fromkeys(kept))
            counts[name] = counted
    names = frozenset(known)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"property names must be strings, got {bad[0]!r}")
    return names, samples, counts


@dataclass
class LintContext:
    """What the checks look at: the parse, the known properties and the tree's shape."""
    text: str
    tree: ParseTree
    names: Optional[frozenset]  # property names known to occur, or None (no knowledge)
    samples: Dict[str, tuple]  # sample values by property name (may be empty)
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)  # how often each sample occurs
    parents: Dict[int, A.Node] = field(default_factory=dict)
    _sole: Dict[int, Optional[str]] = field(default_factory=dict)
    _written: Dict[int, Optional[str]] = field(default_factory=dict)

    def __post_init__(self):
        order = list(self.nodes())
        for node in order:
            for child in A.children(node):
                self.parents[id(child)] = node
        for node in reversed(order):  # children first: one pass for every node's properties
            if isinstance(node, A.Property):
                self._sole[id(node)] = node.name
                continue
            names = {self._sole[id(c)] for c in A.children(node)} - {""}
            self._sole[id(node)] = "" if not names else (
                names.pop() if len(names) == 1 and None not in names else None)

    def sole_property(self, node) -> Optional[str]:
        """The one property `node` reads, or None when it reads none or several."""
        return self._sole[id(node)] or None

    def nodes(self) -> Iterator[A.Node]:
        """Every node, parents before children, left to right."""
        stack = [self.tree.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(A.children(node)))

    def position(self, node) -> int:
        return self.tree.span(node)[0]

    def parent(self, node) -> Optional[A.Node]:
        return self.parents.get(id(node))

    def written(self, node) -> Optional[str]:
        """The node's own text (or with its parentheses) when it compiles to the same node."""
        if id(node) not in self._written:
            self._written[id(node)] = self._compiles_alone(node)
        return self._written[id(node)]

    def _compiles_alone(self, node) -> Optional[str]:
        same = A.BoolCast(node) if isinstance(node, A.Property) else node
        for own in (True, False):
            start, end = self.tree.span(node, own)
            text = self.text[start:end]
            if "\n" in text or "\r" in text:
                continue
            try:
                if parse_ast(text) == same:
                    return text
            except SelectorSyntaxError:
                pass
        return None

    def source(self, node) -> str:
        """The node as written where that compiles to the same node, else its canonical text."""
        written = self.written(node)
        return A.to_text(node) if written is None else written

    def shown(self, node):
        """`node`, or the nearest enclosing node whose text is a selector of its own (`a <> 'x'`
        for its EQ, `a BETWEEN 1 AND 2` for its halves)."""
        shown = node
        for _ in range(2):
            if self.written(shown) is not None or self.parent(shown) is None:
                break
            shown = self.parent(shown)
        return shown if self.written(shown) is not None else node

    def prefix_not(self, node) -> Optional[A.Not]:
        """The left operand of `=` or CONTAINS/STARTSWITH/ENDSWITH when it is a NOT written as a
        prefix without parentheses (`NOT a = 'x'`), not one from `<>` or IS NOT NULL."""
        if not isinstance(node, (A.Equal, A.StringOp)):
            return None
        operand = node.left if isinstance(node, A.Equal) else node.operand
        if not isinstance(operand, A.Not):
            return None
        start, outer_start = self.tree.span(operand)[0], self.tree.span(operand, own=False)[0]
        written = start < self.tree.span(operand.operand, own=False)[0]
        return operand if written and outer_start == start else None

    def values(self, name: str) -> tuple:
        return self.samples.get(name, ())

    def count(self, name: str, value: str) -> int:
        """How many sampled messages carry ``value`` for ``name`` (1 when counts are unknown)."""
        return self.counts.get(name, {}).get(value, 1)

    def warning(self, code: str, where, message: str, fix: str,
                claims: Iterable[Claim] = ()) -> SelectorWarning:
        position = where if isinstance(where, int) or where is None else self.position(where)
        return SelectorWarning(code, message, position, fix, self.text, tuple(claims))
