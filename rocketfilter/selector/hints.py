"""Plain-language explanations of selector mistakes, shared by compile errors and the linter.

Each function gets what the parser saw (tokens, a literal, an operator) and returns short text:
why RocketMQ reads the selector the way it does, and what to write instead. Nothing here changes
what compiles or what it means.
"""
from __future__ import annotations

import re
from typing import AbstractSet, Iterable, List, Optional, Tuple

from .errors import SelectorSyntaxError
from .tokenizer import KEYWORDS, Token, tokenize

# SQL words people reach for that RocketMQ's grammar does not have (SEMANTICS §3).
UNSUPPORTED_WORDS = {
    "LIKE": "LIKE does not exist in RocketMQ's SQL92 (use STARTSWITH, ENDSWITH or CONTAINS)",
    "ILIKE": "ILIKE does not exist in RocketMQ's SQL92 (matching is case-sensitive: use "
             "STARTSWITH, ENDSWITH or CONTAINS)",
    "ESCAPE": "ESCAPE does not exist in RocketMQ's SQL92 (there is no LIKE)",
    "REGEXP": "regular expressions are not supported (use STARTSWITH, ENDSWITH or CONTAINS)",
    "RLIKE": "regular expressions are not supported (use STARTSWITH, ENDSWITH or CONTAINS)",
    "MATCHES": "regular expressions are not supported (use STARTSWITH, ENDSWITH or CONTAINS)",
    "EXISTS": "EXISTS does not exist in RocketMQ's SQL92 (test presence with x IS NOT NULL)",
    "XOR": "XOR does not exist in RocketMQ's SQL92 (combine AND, OR and NOT)",
}
_CONNECTIVES = ("AND", "OR", "NOT", "IS", "IN", "BETWEEN", "NULL", "TRUE", "FALSE", "CONTAINS",
                "STARTSWITH", "ENDSWITH")
# Tokens that continue an operand: an identifier followed by one of these starts a comparison.
_OPERATORS = {"EQ", "NE", "GT", "GE", "LT", "LE", "IS", "IN", "BETWEEN", "CONTAINS", "STARTSWITH",
              "ENDSWITH", "NOT"}
_COMPARISONS = {"EQ", "NE", "GT", "GE", "LT", "LE"}
_NUMBER_RUN = re.compile(r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?")


def edit_distance(a: str, b: str) -> int:
    """Edits between `a` and `b`: insert, delete or substitute a character, or swap two
    neighbours (optimal string alignment distance).

    >>> edit_distance("AN", "AND"), edit_distance("ADN", "AND"), edit_distance("amout", "amount")
    (1, 1, 1)
    """
    before, previous = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        before, previous = previous, current
    return previous[-1]


def close_names(name: str, candidates: Iterable[str], limit: int = 3) -> List[str]:
    """Up to `limit` candidates close to `name`: same name in another case first, then by edit
    distance (at most a third of the name's length: names of one or two letters get none).

    >>> close_names("Region", ["region", "regions", "amount"])
    ['region', 'regions']
    """
    budget = len(name) // 3
    low = name.lower()
    scored = []
    for candidate in set(candidates):
        if candidate == name or abs(len(candidate) - len(name)) > budget:
            continue  # the length difference alone exceeds the budget
        d = edit_distance(low, candidate.lower())
        if d <= budget:
            scored.append((d, edit_distance(name, candidate), candidate))
    return [c for _, _, c in sorted(scored)[:limit]]


def keyword_typo(word: str) -> Optional[str]:
    """The keyword `word` probably misspells (one edit for short keywords, two for long ones).

    >>> keyword_typo("AN"), keyword_typo("ADN"), keyword_typo("region")
    ('AND', 'AND', None)
    """
    upper = word.upper()
    if upper in KEYWORDS:
        return None
    for keyword in _CONNECTIVES:
        allowed = 1 if len(keyword) <= 4 else 2
        if abs(len(upper) - len(keyword)) <= allowed and edit_distance(upper, keyword) <= allowed:
            return keyword
    return None


def quote(value: str) -> str:
    """A string literal for `value` (quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def like_rewrite(subject: str, pattern: str, negated: bool = False) -> Optional[str]:
    """The RocketMQ spelling of `subject [NOT] LIKE pattern`, when one exists.

    >>> like_rewrite("region", "eu%"), like_rewrite("region", "%eu%", True)
    ("region STARTSWITH 'eu'", "region NOT CONTAINS 'eu'")
    """
    if "_" in pattern:
        return None  # a one-character wildcard has no equivalent
    core = pattern.strip("%")
    if "%" in core:
        return None
    if not core:
        return f"{subject} IS {'NULL' if negated else 'NOT NULL'}"
    starts, ends = pattern.endswith("%"), pattern.startswith("%")
    if starts and ends:
        op = "CONTAINS"
    elif starts:
        op = "STARTSWITH"
    elif ends:
        op = "ENDSWITH"
    else:
        return f"{subject} {'<>' if negated else '='} {quote(core)}"
    return f"{subject} {'NOT ' if negated else ''}{op} {quote(core)}"


def shorten(text: str, limit: int = 60) -> str:
    """`text` on one line, whitespace runs collapsed, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _string_value(token: Token) -> str:
    return token.value[1:-1].replace("''", "'")


def _glued_number(text: str, last: Token, stop: Token) -> Optional[Tuple[str, str]]:
    """Why a number literal ended early, when `stop` is glued to the number `last` (`007`)."""
    if last is None or last.end != stop.start or last.type not in ("DECIMAL", "FLOAT"):
        return None
    if last.value == "0" and stop.type in ("DECIMAL", "FLOAT"):
        run = _NUMBER_RUN.match(text, last.start).group()
        meant = run.lstrip("0") or "0"
        if meant.startswith("."):
            meant = "0" + meant
        return (f"a number cannot start with 0 (no octal, no leading zeros): `{shorten(run)}` "
                f"reads as 0 followed by `{shorten(stop.value)}`", f"write {shorten(meant)}")
    if stop.type != "ID":
        return None
    word = stop.value
    if last.value == "0" and word[:1] in "xX":
        digits = word[1:]
        value = int(digits, 16) if digits and re.fullmatch("[0-9a-fA-F]+", digits) else None
        fix = f"write the decimal value {value}" if value is not None else "write a decimal number"
        return f"hexadecimal literals do not exist: `0{shorten(word)}` reads as 0", fix
    if word in ("l", "L"):
        what = "0" if last.value == "0" else last.value
        return (f"only integer literals from 1 up take an L suffix: `{what}{word}` reads as "
                f"{what}", "remove the L")
    if word in ("f", "F", "d", "D"):
        return (f"number literals take no {word} suffix: `{last.value}{word}` reads as "
                f"{last.value}", f"remove the {word}")
    if word[:1] in "eE":
        return (f"an exponent needs digits: `{last.value}{shorten(word)}` reads as {last.value}",
                f"write {last.value}E1 or remove the {word[0]}")
    return (f"a name cannot be glued to a number: `{last.value}{shorten(word)}` reads as "
            f"{last.value}", "put an operator between them")


def _following(text: str, stop: Token) -> List[Token]:
    """Up to three tokens after `stop`, for hints (RocketMQ itself never lexes them)."""
    found: List[Token] = []
    try:
        for token in tokenize(text, stop.end):
            found.append(token)
            if len(found) == 3:
                break
    except SelectorSyntaxError:
        pass  # only hints are lost
    return found


def explain_ignored(text: str, last: Optional[Token], stop: Token) -> Tuple[str, str]:
    """(message, fix) for `stop`, the first token RocketMQ's parser ignores (SEMANTICS §4.4),
    after `last`, the last token it used."""
    following = _following(text, stop)
    kept = shorten(text[:last.end]) if last is not None else ""
    tail = f"so the selector means only `{kept}`"
    shown = shorten(stop.value, 30)
    glued = _glued_number(text, last, stop)
    if glued is not None:
        why, fix = glued
    elif stop.type == "ID" and stop.value.upper() in UNSUPPORTED_WORDS:
        why = UNSUPPORTED_WORDS[stop.value.upper()]
        fix = "rewrite the condition"
        if (stop.value.upper() in ("LIKE", "ILIKE") and last is not None and last.type == "ID"
                and following and following[0].type == "STRING"):
            rewrite = like_rewrite(last.value, _string_value(following[0]))
            if rewrite is not None:
                fix = f"write `{rewrite}`"
    elif stop.type == "ID" and following and following[0].type in _OPERATORS:
        why = f"a new condition starts at `{shown}` without AND or OR before it"
        fix = f"join the conditions: `... AND {shown} ...` (or OR)"
        if stop.value.upper().startswith("AND") and len(stop.value) > 3:
            fix = f"put a space after AND (`AND {stop.value[3:]}`), or {fix}"
    elif stop.type == "ID" and keyword_typo(stop.value):
        keyword = keyword_typo(stop.value)
        why = f"`{shown}` is not {keyword}: it reads as a name where no name can stand"
        fix = f"write {keyword}"
    elif stop.type == "RPAR":
        why = "this ')' has no matching '('"
        fix = "remove it, or add the missing '('"
    elif stop.type == "COMMA":
        why = "a ',' does not join conditions"
        fix = "write AND or OR"
    elif stop.type in ("ID", "LPAR"):
        why = f"a new condition starts at `{shown}` without AND or OR before it"
        fix = "join the conditions with AND or OR"
    else:
        why = f"`{shown}` cannot follow a complete condition"
        fix = "join the conditions with AND or OR, or remove it"
    return f"{why}; RocketMQ ignores everything from `{shown}` on, {tail}", fix


def syntax_hint(prev: Optional[Token], found: Optional[Token], expected: AbstractSet[str]) -> str:
    """Why the token `found` (None at the end) cannot stand after `prev`, and what to write."""
    p = prev.type if prev is not None else None
    f = found.type if found is not None else None
    if found is None and prev is None:
        return "a selector cannot be empty"
    if p == "EQ" and f == "EQ":
        return "there is no '==': write a single '='"
    if p == "EQ" and f in ("GT", "LT"):
        return f"there is no '={found.value}': write '{found.value}='"
    if p in _COMPARISONS and f in _COMPARISONS:
        return f"'{prev.value}{found.value}' is not an operator: use one of = <> > >= < <="
    if p == "IS":
        if f in ("TRUE", "FALSE"):
            return (f"IS {found.value.upper()} does not exist: write `= {found.value.upper()}` "
                    "(a string property reads TRUE only for 'true' in any case)")
        return "IS must be followed by NULL or NOT NULL"
    if p == "NOT" and f == "ID" and found.value.upper() in UNSUPPORTED_WORDS:
        return UNSUPPORTED_WORDS[found.value.upper()]
    if p == "NOT" and "IN" in expected:
        return ("after an operand, NOT must be followed by IN, BETWEEN, CONTAINS, STARTSWITH "
                "or ENDSWITH; to negate a condition write NOT (...)")
    if p == "IN":
        return "IN takes a parenthesised list of string literals: `x IN ('a', 'b')`"
    if expected == {"STRING"}:
        if p in ("CONTAINS", "STARTSWITH", "ENDSWITH"):
            op = prev.value.upper()
            if found is None:
                return f"{op} needs a string literal after it: `x {op} 'text'`"
            what = {"ID": "a property", "DECIMAL": "a number", "FLOAT": "a number"}.get(
                f, repr(found.value))
            return f"{op} takes a string literal, not {what}: `x {op} 'text'`"
        if f == "RPAR":
            return ("an IN list needs at least one string" if p == "LPAR"
                    else "an IN list has no trailing comma")
        if f in ("DECIMAL", "FLOAT", "ID", "TRUE", "FALSE"):
            return (f"IN lists take string literals only: write {quote(found.value)} "
                    "(it matches the exact text)")
        return "IN lists take string literals only"
    if set(expected) == {"AND"}:
        return "BETWEEN needs both bounds: `x BETWEEN low AND high`"
    if set(expected) == {"COMMA", "RPAR"}:
        return "separate the strings of an IN list with ',' and close it with ')'"
    if found is None and "RPAR" in expected:
        return "a '(' is never closed: add ')'"
    if f in KEYWORDS and "ID" in expected:
        if f in ("AND", "OR"):
            return f"a condition is missing before {found.value.upper()}"
        return f"{found.value.upper()} is a reserved word and cannot name a property"
    if f == "RPAR" and "ID" in expected:
        return "something is missing before this ')'"
    if prev is None and "ID" in expected:
        return "a selector starts with a property, a value, NOT or '('"
    if found is None:
        if prev is not None and p in ("AND", "OR", "NOT", "EQ", "NE", "GT", "GE", "LT", "LE",
                                      "PLUS", "MINUS", "LPAR", "BETWEEN"):
            return f"the selector ends after {prev.value!r}: something must follow it"
        return "the selector is incomplete"
    return ""
