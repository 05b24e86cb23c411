"""`Selector`: a compiled SQL92 selector and the ways to run it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional, Union

from . import ast as A
from .errors import SelectorSyntaxError
from .hints import explain_ignored
from .parser import parse_tree, readable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class Selector:
    """A selector compiled exactly as the broker compiles it (``SqlFilter.compile``).

    Build one with :func:`parse`. ``text`` is what was given, ``ast`` the typed tree.
    """

    text: str
    ast: A.Node = field(repr=False)
    # Compiled Columns by (Spark context, properties column name): building one costs a few
    # hundred JVM calls, which a small pull would otherwise pay every time.
    _columns: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def properties(self) -> list:
        """The property names the selector reads, in first-use order."""
        return A.properties(self.ast)

    def evaluate(self, props: Mapping[str, object]):
        """The raw Java result on one message: True, False or None (SQL NULL).

        ``props`` maps a property name to a str (the broker's view) or a typed Python value
        (bool, int, float, ``javalang.Integer``/``javalang.Long``). Raises
        ``SelectorEvaluationError`` where Java's evaluation throws.

        >>> parse("a > 4").evaluate({"a": "5"})
        True
        >>> parse("'x' <> a").evaluate({}) , parse("a <> 'x'").evaluate({})
        (True, None)
        """
        from .evaluate import evaluate

        return evaluate(self.ast, props)

    def matches(self, props: Mapping[str, object]) -> bool:
        """The broker's decision: deliver only when the result is TRUE (errors do not deliver).

        >>> parse("a = 1 OR b = 2").matches({"a": "x", "b": "2"})  # a's error aborts first
        False
        """
        from .evaluate import matches

        return matches(self.ast, props)

    def explain(self, props: Mapping[str, object]):
        """:meth:`evaluate` with the conditions that decided it: an
        :class:`~rocketfilter.selector.explain.Evaluation` (``result`` is the evaluator's, or
        ``"error"`` where it throws; ``deciding`` the operators and property values that decided).

        >>> str(parse("a > 4 OR b IS NULL").explain({"a": "2", "b": "x"}))
        "FALSE: (a > 4) is FALSE with a = '2'; (b IS NULL) is FALSE with b = 'x'"
        """
        from .explain import explain_evaluation

        return explain_evaluation(self.ast, props, self.text)

    def to_column(self, properties: Union[str, "Column", None] = "properties",
                  schema: Optional["StructType"] = None, *,
                  promoted: Optional[Mapping[str, str]] = None) -> "Column":
        """The broker's decision as a never-null boolean Spark Column, for ``df.filter``.

        ``properties`` names (or is) a ``map<string,string>`` column: the broker's view, where
        every property is a string. With ``properties=None`` each property name is a top-level
        column of the DataFrame, typed by its Spark type (int -> Integer, bigint -> Long,
        double -> Double, boolean -> Boolean, string -> String); pass that DataFrame's
        ``schema`` so the types are known when the Column is built.

        ``promoted`` maps a property name to its promoted struct column in a store's CommitLog
        (``store.promoted_properties()``): the same decision, read from the values and
        conversions written at put time instead of parsing the map's strings.

        >>> df.filter(parse("age BETWEEN 6 AND 9").to_column("properties"))  # doctest: +SKIP
        >>> df.filter(parse("age > 6").to_column(None, df.schema))           # doctest: +SKIP
        """
        from .spark import compile_selector

        used = {n: promoted[n] for n in self.properties if n in promoted} if promoted else {}
        if not isinstance(properties, str) or schema is not None:
            return compile_selector(self.ast, properties, schema, promoted=used).decision
        from rocketfilter.spark_mode import column_cache_key

        context = column_cache_key()  # a classic Column is bound to one SparkContext, never to Connect
        if any(k[0] != context for k in self._columns):
            self._columns.clear()  # one live context (or Spark Connect) at a time
        key = (context, properties, tuple(sorted(used.items())))
        if key not in self._columns:
            self._columns[key] = compile_selector(self.ast, properties, promoted=used).decision
        return self._columns[key]

    def to_columns(self, properties: Union[str, "Column", None] = "properties",
                   schema: Optional["StructType"] = None, *,
                   promoted: Optional[Mapping[str, str]] = None) -> dict:
        """Diagnostics: ``{"matched", "raw", "error"}`` Columns by name.

        ``raw`` is the three-valued result (null where Java returns null or threw), ``error``
        is true where Java's evaluation threw, ``matched`` is :meth:`to_column`.

        >>> df.select([c.alias(k) for k, c in sel.to_columns().items()])  # doctest: +SKIP
        """
        from .spark import compile_selector

        compiled = compile_selector(self.ast, properties, schema, promoted=promoted)
        return {"matched": compiled.decision, "raw": compiled.raw, "error": compiled.error}

    def lint(self, known_properties=None) -> list:
        """What the selector does that its author may not expect, as ``SelectorWarning``s.

        ``known_properties`` is None (nothing known), an iterable of property names known to
        occur, or a mapping name -> iterable of sample values (strings, as the broker sees them).
        See ``rocketfilter.selector.lint``.

        >>> [w.code for w in parse("amount > 100.0 AN region = 'eu'").lint()]
        ['ignored-trailing-input']
        """
        from .lint import lint

        return lint(self.text, known_properties)

    def __str__(self) -> str:
        return self.text


def parse(text: str, strict: bool = False) -> Selector:
    """Compile a selector; raises ``SelectorSyntaxError`` where RocketMQ's compile fails.

    Text after a complete selector is ignored, as the broker ignores it (SEMANTICS §4.4);
    with ``strict=True`` it is a ``SelectorSyntaxError`` naming the first ignored token.

    >>> parse("(age BETWEEN 6 AND 9) AND (name IS NOT NULL)").properties
    ['age', 'name']
    >>> parse("a = 1 b = 2").ast == parse("a = 1").ast
    True
    """
    tree = parse_tree(text)
    if strict and tree.stop is not None:
        message, fix = explain_ignored(text, tree.last, tree.stop)
        raise SelectorSyntaxError(f"Encountered {tree.stop.value!r} after a complete selector",
                                  text, tree.stop.start, readable(tree.expected),
                                  f"{message}; {fix}")
    return Selector(text, tree.root)
