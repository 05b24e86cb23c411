"""The cluster test's scenario runs in the background (tests/cluster/background.py): started as
soon as the suite's shared session runs, its test ordered after every other but the real
broker's, and stopped with the session if it still runs."""
from __future__ import annotations

import pytest

from tests import conftest as shared

from . import background


@pytest.hookimpl(trylast=True)   # after -m/-k deselection: start nothing for a test that does not run
def pytest_collection_modifyitems(config, items) -> None:
    def is_scenario(item) -> bool:
        return item.get_closest_marker("cluster") is not None and item.name.startswith("test_import_replay")

    scenario = [item for item in items if is_scenario(item)]
    if not scenario:
        return
    broker = [item for item in items if item.get_closest_marker("broker") and not is_scenario(item)]
    rest = [item for item in items if not is_scenario(item) and not item.get_closest_marker("broker")]
    items[:] = rest + scenario + broker
    if not config.option.collectonly:
        shared.after_shared_session(background.start)


def pytest_sessionfinish() -> None:
    background.stop()
