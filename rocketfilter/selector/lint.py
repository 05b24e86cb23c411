"""Selector lint: what RocketMQ accepts but does not mean what it seems to.

``lint(text, known_properties)`` (also ``parse(text).lint(...)``) returns one
:class:`SelectorWarning` per finding: a stable ``code``, the ``position`` in the text, a
``message`` and a ``fix``. Each check is one small function in ``CHECKS``, given a
:class:`LintContext`. Whatever a message says a condition evaluates to was computed with the
reference evaluator and is kept in the warning's ``claims``, so that it can be verified.

>>> [(w.code, w.position) for w in lint("region LIKE 'eu%'")]
[('bare-property', 0), ('ignored-trailing-input', 7)]
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional

from .. import javalang as J
from . import ast as A
from .findings import ERROR, Claim, LintContext, SelectorWarning, knowledge, outcome
from .hints import close_names, explain_ignored, quote
from .parser import parse_tree

__all__ = ["lint", "CHECKS", "check", "SelectorWarning", "Claim", "ERROR"]

CHECKS: Dict[str, Callable[[LintContext], Iterable[SelectorWarning]]] = {}
_WORD = {True: "TRUE", False: "FALSE", None: "NULL", ERROR: "throws"}


def check(code: str) -> Callable:
    """Register a check: a function of a LintContext yielding SelectorWarnings of `code`."""
    def register(fn: Callable) -> Callable:
        CHECKS[code] = fn
        return fn
    return register


def lint(text: str, known_properties=None) -> List[SelectorWarning]:
    """The findings for selector `text`, in text order; SelectorSyntaxError if it does not compile.

    `known_properties` is None (nothing known), an iterable of property names known to occur,
    or a mapping name -> sample values (strings, as the broker sees them): an iterable, or a
    mapping value -> how many messages carry it (what a store sample gives).

    >>> [str(w) for w in lint("amount > 100", {"amount": ["19.99"]})]  # doctest: +ELLIPSIS
    ["col 10: `amount > 100` throws on amount = '19.99'...; write `amount > 100.0`..."]
    """
    names, samples, counts = knowledge(known_properties)
    context = LintContext(text, parse_tree(text), names, samples, counts)
    order = {code: i for i, code in enumerate(CHECKS)}
    found = [w for fn in CHECKS.values() for w in fn(context)]
    return sorted(found, key=lambda w: (w.position is None, w.position or 0, order[w.code]))


# --- helpers ------------------------------------------------------------------------------------

def _listing(values) -> str:
    shown = [quote(v) for v in values[:3]]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _is_null_test(node) -> bool:
    return isinstance(node, A.Equal) and A.BoolConstant(None) in (node.left, node.right)


def _numeric_literal(node) -> Optional[A.Constant]:
    """The number literal `node` is, possibly negated."""
    if isinstance(node, A.Neg):
        node = node.operand
    return node if isinstance(node, A.Constant) and node.kind != A.STRING else None


def _numeric_comparisons(ctx: LintContext):
    """(display node, property, [number literals]) for comparisons of a property that has
    sample values with numbers; a BETWEEN is shown whole (its halves do not compile alone)."""
    groups: Dict[int, tuple] = {}
    for node in ctx.nodes():
        if not isinstance(node, (A.Equal, A.Compare)):
            continue
        sides = (node.left, node.right)
        prop = next((s.name for s in sides if isinstance(s, A.Property)), None)
        literal = next((lit for lit in map(_numeric_literal, sides) if lit is not None), None)
        if prop is None or literal is None or not ctx.values(prop):
            continue
        display = ctx.shown(node)  # a BETWEEN for its halves
        if ctx.sole_property(display) != prop:
            display = node
        entry = groups.setdefault(id(display), (display, prop, []))
        entry[2].append(literal)
    return list(groups.values())


def _float_literals(node, literals):
    """`node` with each integer literal in `literals` (by identity) made a Double."""
    if any(node is lit for lit in literals):
        return A.Constant(float(node.value), A.DOUBLE)
    if isinstance(node, A.Neg):
        return A.Neg(_float_literals(node.operand, literals))
    if isinstance(node, A.Compare):
        return A.Compare(node.op, _float_literals(node.left, literals),
                         _float_literals(node.right, literals))
    if isinstance(node, (A.And, A.Or, A.Equal)):
        return type(node)(_float_literals(node.left, literals),
                          _float_literals(node.right, literals))
    return node


def _with_float_literals(ctx: LintContext, display, integers) -> str:
    """`display` as written, each literal in `integers` turned into a float literal."""
    text = ctx.written(display)
    start = ctx.tree.span(display)[0]
    if text is None or text != ctx.text[start:start + len(text)]:
        return A.to_text(_float_literals(display, integers))  # not written as itself
    for s, e in sorted((ctx.tree.span(lit) for lit in integers), reverse=True):
        text = text[:s - start] + ctx.text[s:e].rstrip("lL") + ".0" + text[e - start:]
    return text


# --- the checks, in the order their findings are listed at one position ------------------------

@check("ignored-trailing-input")
def _ignored_trailing_input(ctx: LintContext):
    """SEMANTICS §4.4: after a complete selector, the rest of the text is silently dropped."""
    if ctx.tree.stop is not None:
        message, fix = explain_ignored(ctx.text, ctx.tree.last, ctx.tree.stop)
        yield ctx.warning("ignored-trailing-input", ctx.tree.stop.start, message, fix)


@check("bare-property")
def _bare_property(ctx: LintContext):
    """BOOLCAST: a property alone is FALSE for every string, NULL when absent (§5.2)."""
    for node in ctx.nodes():
        if not isinstance(node, A.BoolCast) or not isinstance(node.operand, A.Property):
            continue
        name = node.operand.name
        present = ctx.values(name)[:3] or ("true",)
        parent = ctx.parent(node)
        if isinstance(parent, A.Not):
            grandparent = ctx.parent(parent)
            if grandparent is not None and ctx.prefix_not(grandparent) is parent:
                continue  # `NOT a = 'x'`: not-binds-tightest says what matters
            src = ctx.source(parent)
            message = (f"`{src}` is TRUE whenever `{name}` is present, whatever its value, and "
                       f"NULL when it is absent (a bare property is FALSE for every string)")
            fix = f"say so with `{name} IS NOT NULL`, or compare it: `{name} <> 'value'`"
        else:
            src = name
            message = (f"`{name}` alone is FALSE for every string value and NULL when absent: "
                       "RocketMQ casts a bare property to Boolean and broker properties are "
                       "strings, so this condition is never TRUE")
            fix = (f"compare it (`{name} = 'value'`, or `{name} = TRUE` for 'true'/'false' flags) "
                   f"or test presence with `{name} IS NOT NULL`")
        claims = [Claim(src, {name: v}, outcome(src, {name: v})) for v in present]
        claims.append(Claim(src, {}, outcome(src, {})))
        yield ctx.warning("bare-property", node, message, fix, claims)


_CONSTANT_EFFECT = {
    (True, None): "so the selector matches every message",
    (True, A.Or): "so the OR is always TRUE",
    (True, A.And): "so it adds nothing to the AND",
    (False, None): "so the selector matches nothing",
    (False, A.And): "so the AND is never TRUE",
    (False, A.Or): "so it adds nothing to the OR",
}


@check("constant-condition")
def _constant_condition(ctx: LintContext):
    """TRUE, FALSE or NULL standing as a condition of its own."""
    for node in ctx.nodes():
        parent = ctx.parent(node)
        condition = parent is None or isinstance(parent, (A.And, A.Or, A.Not))
        if not isinstance(node, A.BoolConstant) or not condition:
            continue
        word = _WORD[node.value]
        effect = _CONSTANT_EFFECT.get((node.value, type(parent) if parent else None),
                                      "so it decides nothing about the message")
        if node.value is None:
            effect = "never TRUE, " + effect
        fix = ("to test for a missing property write `x IS NULL`" if node.value is None
               else "remove it, or compare a property with it (`flag = " + word + "`)")
        yield ctx.warning("constant-condition", node,
                          f"`{word}` as a condition is always {word}, {effect}", fix,
                          [Claim(word, {}, node.value)])


def _reads_as_double(value: str) -> bool:
    try:
        J.double_value_of(value)
        return True
    except J.NumberFormatError:
        return False


@check("integer-literal-vs-decimal")
def _integer_literal_vs_decimal(ctx: LintContext):
    """An integer literal makes RocketMQ parse the property with Integer/Long.valueOf (§5.4)."""
    for display, prop, literals in _numeric_comparisons(ctx):
        integers = [lit for lit in literals if lit.kind != A.DOUBLE]
        if not integers:
            continue
        src = ctx.source(display)
        bad = [v for v in ctx.values(prop)
               if _reads_as_double(v) and outcome(src, {prop: v}) == ERROR]
        if not bad:
            continue
        parser = "Long" if all(lit.kind == A.LONG for lit in integers) else "Integer"
        message = (f"`{src}` throws on {prop} = {_listing(bad)}: an integer literal makes "
                   f"RocketMQ read {prop} with {parser}.valueOf, which takes plain integers only, "
                   "and a throw aborts the whole selector (the message is not delivered)")
        if any(lit.value == 0 for lit in integers):
            fix = ("0 has no float literal (RocketMQ refuses 0.0): compare with the smallest "
                   f"double instead, e.g. `{prop} >= 4.9E-324` for {prop} > 0")
        else:
            fix = (f"write `{_with_float_literals(ctx, display, integers)}` (a float literal "
                   f"reads {prop} as a double)")
        yield ctx.warning("integer-literal-vs-decimal", integers[0], message, fix,
                          [Claim(src, {prop: v}, ERROR) for v in bad[:3]])


@check("non-numeric-value")
def _non_numeric_value(ctx: LintContext):
    """A sample value no Java number parser reads makes every numeric comparison throw."""
    for display, prop, literals in _numeric_comparisons(ctx):
        src = ctx.source(display)
        bad = [v for v in ctx.values(prop)
               if not _reads_as_double(v) and outcome(src, {prop: v}) == ERROR]
        if not bad:
            continue
        listed = ", ".join(quote(v) for v in bad[:3])
        message = (f"`{src}` throws on {prop} = {_listing(bad)}, which is not a number, and a "
                   "throw aborts the whole selector (the message is not delivered)")
        fix = (f"rule such values out first: `{prop} NOT IN ({listed}) AND {src}` "
               "(AND stops at FALSE)")
        yield ctx.warning("non-numeric-value", literals[0], message, fix,
                          [Claim(src, {prop: v}, ERROR) for v in bad[:3]])


def _special_double(value: str) -> Optional[str]:
    """"NaN" or "Infinity" when Double.valueOf reads `value` as such, else None."""
    try:
        number = J.double_value_of(value)
    except J.NumberFormatError:
        return None
    if number != number:
        return "NaN"
    return "Infinity" if number in (float("inf"), float("-inf")) else None


@check("nan-or-infinity-value")
def _nan_or_infinity_value(ctx: LintContext):
    """Double.valueOf reads 'NaN' and 'Infinity'; Double.compareTo puts NaN above every number
    and Infinity above every finite one, so such values pass `>` comparisons (docs/selector.md)."""
    for display, prop, literals in _numeric_comparisons(ctx):
        src = ctx.source(display)
        met = [(v, outcome(src, {prop: v})) for v in ctx.values(prop) if _special_double(v)]
        met = [(v, result) for v, result in met if result in (True, False)]
        if not met:
            continue
        total = sum(ctx.count(prop, v) for v, _ in met)
        parts = []
        for result in (True, False):
            values = [v for v, r in met if r is result][:3]
            if values:
                counted = [quote(v) + ("" if len(met) == 1 else f" ({ctx.count(prop, v)})") for v in values]
                parts.append(f"{_WORD[result]} on {prop} = " + (counted[0] if len(counted) == 1 else
                             ", ".join(counted[:-1]) + " and " + counted[-1]))
        many = "" if total == 1 else "s"
        counted = f" ({total} sampled message{many})" if len(met) == 1 else f", {total} sampled messages in all"
        message = (f"`{src}` is " + " and ".join(parts) + counted + ": "
                   "Double.valueOf reads such values as NaN or Infinity, and Java's Double.compareTo "
                   "orders NaN above every number and Infinity beyond every finite one")
        listed = ", ".join(quote(v) for v, _ in met)
        passing = [v for v, result in met if result is True]
        if passing:
            fix = f"to leave them out write `{prop} NOT IN ({listed}) AND {src}`"
        else:
            fix = f"to deliver them too write `{prop} IN ({listed}) OR {src}`"
        yield ctx.warning("nan-or-infinity-value", display, message, fix,
                          [Claim(src, {prop: v}, result) for v, result in met])


@check("absent-property-negation")
def _absent_property_negation(ctx: LintContext):
    """`<>`, NOT IN, NOT CONTAINS and NOT (...) on a property that may be absent (§5.3, §5.6)."""
    guarded = {n.left.name for n in ctx.nodes()
               if _is_null_test(n) and isinstance(n.left, A.Property)}
    for node in ctx.nodes():
        negation = (isinstance(node, A.Not) and not isinstance(node.operand, A.BoolCast)
                    and not _is_null_test(node.operand)) or \
                   (isinstance(node, (A.In, A.StringOp)) and node.negated)
        prop = ctx.sole_property(node) if negation else None
        if (prop is None or prop in guarded or isinstance(ctx.parent(node), A.Not)
                or ctx.tree.records[id(node)][3] > 8):
            continue
        src = ctx.source(node)
        result = outcome(src, {})
        if result is None:
            message = (f"`{src}` is NULL when `{prop}` is absent, so messages without `{prop}` "
                       "are not delivered")
            fix = (f"to deliver them write `{prop} IS NULL OR {src}`; to make the exclusion "
                   f"explicit, `{prop} IS NOT NULL AND {src}`")
        elif result is True:
            message = (f"`{src}` is TRUE when `{prop}` is absent, so messages without `{prop}` "
                       "pass it")
            fix = f"to exclude them write `{prop} IS NOT NULL AND {src}`"
        elif result is False:
            message = (f"`{src}` is FALSE when `{prop}` is absent, so messages without `{prop}` "
                       "never pass it")
            fix = f"to let them pass write `{prop} IS NULL OR {src}`"
        else:
            continue
        yield ctx.warning("absent-property-negation", node, message, fix,
                          [Claim(src, {}, result)])


_TRUTHY = ("1", "yes", "y", "on", "t")
_FALSY = ("false", "0", "no", "n", "off", "f")


@check("boolean-literal-comparison")
def _boolean_literal_comparison(ctx: LintContext):
    """`= TRUE`/`= FALSE` read a string with Boolean.valueOf; `TRUE = p` throws (§5.4)."""
    for node in ctx.nodes():
        if not isinstance(node, A.Equal):
            continue
        left, right = node.left, node.right
        if isinstance(left, A.Property) and isinstance(right, A.BoolConstant) \
                and right.value is not None:
            yield from _property_equals_boolean(ctx, node, left.name, right.value)
        elif isinstance(right, A.Property) and isinstance(left, A.BoolConstant) \
                and left.value is not None:
            word, prop = _WORD[left.value], right.name
            expr = f"{word} = {prop}"
            present = ctx.values(prop)[:3] or ("true",)
            yield ctx.warning(
                "boolean-literal-comparison", node,
                f"`{expr}` throws for every value of {prop} (RocketMQ casts the Boolean to a "
                "String), and a throw aborts the whole selector (the message is not delivered)",
                f"write `{prop} = {word}`", [Claim(expr, {prop: v}, ERROR) for v in present])


def _property_equals_boolean(ctx: LintContext, node, prop: str, value: bool):
    word = _WORD[value]
    expr = f"{prop} = {word}"
    samples = ctx.values(prop)
    if value:  # TRUE only for "true" in any case: truthy-looking text is FALSE
        surprising = [v for v in samples if v.lower() in _TRUTHY] if samples else ["yes", "1"]
        listed = ", ".join(quote(v) for v in ["true"] + surprising[:3])
        result, fix = False, f"compare the text: `{prop} IN ({listed})`"
    else:  # FALSE matches anything but "true": text that does not look false matches too
        surprising = ([v for v in samples if v.lower() not in _FALSY + ("true",)] if samples
                      else ["abc", "yes"])
        result, fix = True, f"compare the text: `{prop} = 'false'`"
    if not surprising:
        return
    message = (f"`{expr}` reads {prop} with Boolean.valueOf: only 'true' in any letter case is "
               f"true, so it is {_WORD[result]} for {prop} = {_listing(surprising)}")
    yield ctx.warning("boolean-literal-comparison", node, message, fix,
                      [Claim(expr, {prop: v}, outcome(expr, {prop: v})) for v in surprising[:3]])


@check("not-binds-tightest")
def _not_binds_tightest(ctx: LintContext):
    """`NOT a = 'x'` is `(NOT a) = 'x'`: the Boolean NOT a compared with a string (§4.1)."""
    for node in ctx.nodes():
        operand = ctx.prefix_not(node)
        prop = None if operand is None else ctx.sole_property(node)
        if prop is None:
            continue
        src = ctx.source(node)
        inner = ctx.text[ctx.tree.span(operand.operand, own=False)[0]:ctx.tree.span(node)[1]]
        intended = f"NOT ({inner})"
        present = (ctx.values(prop) or ("x",))[0]
        when_present, when_absent = outcome(src, {prop: present}), outcome(src, {})
        verb = "throws" if when_present == ERROR else f"is {_WORD[when_present]}"
        message = (f"`{src}` reads as `{A.to_text(node)}` because NOT binds tighter than "
                   f"comparisons: it {verb} for {prop} = {quote(present)} and is "
                   f"{_WORD[when_absent]} when {prop} is absent")
        yield ctx.warning("not-binds-tightest", node, message, f"write `{intended}`",
                          [Claim(src, {prop: present}, when_present),
                           Claim(src, {}, when_absent)])


@check("empty-string-literal")
def _empty_string_literal(ctx: LintContext):
    """The broker drops empty property values (§5.1): nothing is ever equal to ''."""
    for node in ctx.nodes():
        if not isinstance(node, (A.Equal, A.In)):
            continue
        prop = ctx.sole_property(node)
        empty = ("" in node.values) if isinstance(node, A.In) else \
            A.Constant("", A.STRING) in (node.left, node.right)
        if not empty or prop is None:
            continue
        src = ctx.source(ctx.shown(node))  # `a <> ''` for its EQ
        result = outcome(src, {})
        yield ctx.warning(
            "empty-string-literal", node,
            f"a property is never '' on the broker (empty values are dropped, so {prop} is "
            f"absent): `{src}` is then {_WORD[result]}",
            f"to find messages without {prop} write `{prop} IS NULL`", [Claim(src, {}, result)])


@check("unknown-property")
def _unknown_property(ctx: LintContext):
    """Property names that do not occur in known_properties (only when it is given)."""
    if ctx.names is None:
        return
    first: Dict[str, A.Property] = {}
    for node in ctx.nodes():
        if isinstance(node, A.Property) and node.name not in ctx.names:
            if node.name not in first or ctx.position(node) < ctx.position(first[node.name]):
                first[node.name] = node
    for name, node in first.items():
        condition = node
        while condition is not None and not A.is_boolean(condition):
            condition = ctx.parent(condition)
        condition = condition if condition is None else ctx.shown(condition)
        message = (f"`{name}` is not among the known properties, so it reads as absent (NULL) "
                   "on every message")
        claims = []
        if condition is not None and ctx.sole_property(condition) == name:
            src = ctx.source(condition)
            result = outcome(src, {})
            message += f", and `{src}` is {_WORD[result]}"
            claims.append(Claim(src, {}, result))
        near = close_names(name, ctx.names)
        fix = (f"did you mean {' or '.join(f'`{n}`' for n in near)}?" if near
               else "check the name (property names are case-sensitive)")
        yield ctx.warning("unknown-property", node, message, fix, claims)

