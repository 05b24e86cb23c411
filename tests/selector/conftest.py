"""The SQL92 conformance cases (produced by RocketMQ's own Java code) as pytest parameters.

A test asks for `sql92_case` (sql92_cases.jsonl) or `typed_case` (sql92_typed_cases.jsonl), or
their `..._compiled_case` subsets, and runs once per case with the case id as its test id.
The files are read once per session.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from rocketfilter.javalang import Integer, Long

CONFORMANCE_DIR = Path(__file__).resolve().parent.parent / "conformance"

# argument name -> (file, which cases): every case for the compile tests, the compiled ones
# for the evaluation tests.
CASE_PARAMETERS = {
    "sql92_case": ("sql92_cases.jsonl", False),
    "sql92_compiled_case": ("sql92_cases.jsonl", True),
    "typed_case": ("sql92_typed_cases.jsonl", False),
    "typed_compiled_case": ("sql92_typed_cases.jsonl", True),
}


@lru_cache(maxsize=None)
def load_cases(filename: str) -> tuple:
    with open(CONFORMANCE_DIR / filename, encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


_TYPED = {
    "Integer": lambda v: Integer(int(v)),
    "Long": lambda v: Long(int(v)),
    "Double": float,  # Python's float() reads Java's "NaN", "Infinity", "-0.0", "4.9E-324"
    "Boolean": lambda v: v == "true",
    "String": str,
    "Object": lambda v: object(),  # an arbitrary non-Comparable Java object
}


def typed_props(spec: dict) -> dict:
    """`{"a": {"type": "Integer", "value": "5"}}` -> `{"a": Integer(5)}`."""
    return {name: _TYPED[p["type"]](p.get("value")) for name, p in spec.items()}


@pytest.fixture(name="typed_props", scope="session")
def typed_props_fixture():
    """The converter from a case's `typed_props` to typed Python values."""
    return typed_props


def pytest_generate_tests(metafunc):
    for argname, (filename, compiled_only) in CASE_PARAMETERS.items():
        if argname in metafunc.fixturenames:
            cases = [c for c in load_cases(filename) if c["compiled"] or not compiled_only]
            metafunc.parametrize(argname, cases, ids=[c["id"] for c in cases])
