"""Shared fixtures: one SparkSession for the whole suite, and the conformance case files."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

CONFORMANCE_DIR = Path(__file__).parent / "conformance"


class Conformance:
    """Loads the fixture files produced by RocketMQ's own Java code (they are ground truth)."""

    directory = CONFORMANCE_DIR

    @staticmethod
    @lru_cache(maxsize=None)
    def json(name: str) -> dict:
        with open(CONFORMANCE_DIR / name, encoding="utf-8") as f:
            return json.load(f)

    @staticmethod
    def jsonl(name: str) -> list:
        with open(CONFORMANCE_DIR / name, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    @classmethod
    def cases(cls, name: str, section: str) -> list:
        """The cases of one section of a ``.json`` file, for ``pytest.mark.parametrize``."""
        return cls.json(name)[section]

    @classmethod
    def params(cls, name: str, section: str) -> list:
        """Cases as pytest params whose test id is the case id."""
        return [pytest.param(case, id=case["id"]) for case in cls.cases(name, section)]


conformance = Conformance


@pytest.fixture(scope="session", name="conformance")
def conformance_fixture() -> Conformance:
    return Conformance


@pytest.fixture(scope="session")
def spark():
    """One local[2] session for the whole suite: 2 shuffle partitions, no UI, 2g driver."""
    from rocketfilter.session import get_spark

    session = get_spark(app_name="rocketfilter-tests", testing=True)
    yield session
    session.stop()
