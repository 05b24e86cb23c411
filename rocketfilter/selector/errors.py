"""Errors raised by the selector engine."""
from __future__ import annotations

# Defined with Java's rules that raise it (rocketfilter.javalang); this is its public home.
from rocketfilter.javalang import SelectorEvaluationError  # noqa: F401


class SelectorSyntaxError(ValueError):
    """The selector does not compile (RocketMQ's MQFilterException at SqlFilter.compile).

    `position` is the 0-based character offset of the problem, `line`/`column` are 1-based,
    `expected` names what could have stood there, `reason` says what is wrong and `hint` (maybe
    empty) why RocketMQ refuses it and how to write what was probably meant.
    """

    def __init__(self, message: str, text: str = "", position: int = 0, expected: tuple = (),
                 hint: str = ""):
        self.text = text
        self.position = position
        self.line = text.count("\n", 0, position) + 1
        self.column = position - (text.rfind("\n", 0, position) + 1) + 1
        self.expected = tuple(expected)
        self.reason = message
        self.hint = hint
        where = f"line {self.line}, column {self.column}"
        rendered = f"{message} at {where} (offset {position})" if text else message
        super().__init__(f"{rendered}: {hint}" if hint else rendered)
