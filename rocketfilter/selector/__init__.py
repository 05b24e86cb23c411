"""RocketMQ's SQL92 message selector: parse once, then evaluate in Python or compile to Spark.

>>> from rocketfilter.selector import parse
>>> s = parse("(age BETWEEN 6 AND 9) AND name IS NOT NULL")
>>> s.matches({"age": "7", "name": "x"})
True
>>> s.evaluate({"age": "seven", "name": "x"})
Traceback (most recent call last):
  ...
rocketfilter.selector.errors.SelectorEvaluationError: ...
"""
from __future__ import annotations

from .errors import SelectorEvaluationError, SelectorSyntaxError
from .findings import SelectorWarning
from .selector import Selector, parse

__all__ = ["parse", "Selector", "SelectorSyntaxError", "SelectorEvaluationError", "SelectorWarning"]
