"""The real-broker tests run last, and their harness starts as soon as they are collected
(tests/broker/harness_runs.py says why)."""
from __future__ import annotations

import pytest

from tests.broker import harness_runs


@pytest.hookimpl(trylast=True)   # after -m/-k deselection: start the harness only for tests that run
def pytest_collection_modifyitems(config, items) -> None:
    broker = [item for item in items if item.get_closest_marker("broker")]
    if broker:
        items[:] = [item for item in items if not item.get_closest_marker("broker")] + broker
        if not config.option.collectonly:
            harness_runs.start()


def pytest_sessionfinish() -> None:
    harness_runs.stop()
