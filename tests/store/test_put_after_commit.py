"""Once the CommitLog commit lands, the put has succeeded (issue 19 §6.4): a dispatch that loses
its commit races (ConcurrentCommitError) is finished or left to open's repair, and the put
returns what it stored; an error from put_messages means nothing was stored, so a caller that
retries never duplicates messages."""
from __future__ import annotations

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.store import MessageStore
from rocketfilter.store import dispatch as dispatch_module
from rocketfilter.store import put as put_module
from rocketfilter.delta.table import ConcurrentCommitError

CONFIG = MessageStoreConfig(consume_queue_rows_per_file=1000)


def _losing(real, losses):
    """``dispatch`` that loses ``losses`` commit races (None: every one) before it runs."""
    calls = []

    def dispatch(tables, **kwargs):
        calls.append(1)
        if losses is None or len(calls) <= losses:
            raise ConcurrentCommitError(tables.uri, 1, 2, "another dispatch landed first")
        return real(tables, **kwargs)
    return dispatch, calls


def _patch(monkeypatch, fake):
    """Every name the put may reach dispatch by."""
    monkeypatch.setattr(dispatch_module, "dispatch", fake)
    monkeypatch.setattr(put_module, "dispatch", fake, raising=False)


@pytest.mark.parametrize("losses", [1, 5])
def test_a_put_whose_dispatch_loses_races_still_returns_and_dispatches(spark, tmp_path,
                                                                        monkeypatch, losses):
    store = MessageStore.open(str(tmp_path / "s"), spark, CONFIG)
    store.create_topic("T", read_queue_nums=1, write_queue_nums=1)
    fake, calls = _losing(dispatch_module.dispatch, losses)
    _patch(monkeypatch, fake)
    put = store.put_messages([{"topic": "T", "body": f"m{i}"} for i in range(3)])
    assert [r["queue_offset"] for r in put] == [0, 1, 2]
    assert len(calls) == losses + 1
    assert store.get_max_offset_in_queue("T", 0) == 3


def test_a_dispatch_that_never_lands_is_left_to_open_repair(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "s")
    store = MessageStore.open(path, spark, CONFIG)
    store.create_topic("T", read_queue_nums=1, write_queue_nums=1)
    fake, _ = _losing(dispatch_module.dispatch, None)
    _patch(monkeypatch, fake)
    put = store.put_messages([{"topic": "T", "body": f"m{i}"} for i in range(3)])
    assert [r["queue_offset"] for r in put] == [0, 1, 2]   # stored: no error
    assert store.get_max_offset_in_queue("T", 0) == 0      # not dispatched yet
    monkeypatch.undo()
    reopened = MessageStore.open(path, spark, CONFIG)
    assert reopened.get_max_offset_in_queue("T", 0) == 3
    assert reopened.get_message("G", "T", 0, 0, 32).message_queue_offsets == [0, 1, 2]
