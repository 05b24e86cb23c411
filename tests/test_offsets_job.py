"""``rocketfilter offsets show|reset``: committed offset, min/max and lag per queue, and resets
checked against each queue's range before anything is committed. No Spark runs here (the store
fixture's put does). Bad input is in test_cli.py."""
from __future__ import annotations

import pytest

from rocketfilter.cli import main
from rocketfilter.config import MessageStoreConfig
from rocketfilter.jobs import common
from rocketfilter.store.offsets import commit_consumer_offsets, consumer_offsets
from rocketfilter.store.tables import StoreTables

from .conftest import ORDERS


@pytest.fixture
def tables(orders_store, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("offsets must not start Spark")
    monkeypatch.setattr(common, "start_spark", refuse)
    return StoreTables(orders_store, None, MessageStoreConfig())


def _table(out: str) -> list:
    """The table's rows as lists of cells ('' for an empty one)."""
    lines = out.splitlines()
    widths = [len(part) for part in lines[1].split("  ")]
    rows = []
    for line in lines[2:]:
        if not line.startswith(ORDERS):
            break
        cells, start = [], 0
        for w in widths:
            cells.append(line[start:start + w].strip())
            start += w + 2
        rows.append(cells)
    return rows


def test_show_committed_min_max_and_lag(tables, orders_store, capsys):
    commit_consumer_offsets(tables, [("GID_show", ORDERS, 0, 1), ("GID_show", ORDERS, 2, 4)])
    assert main(["offsets", "show", "--store", orders_store, "--group", "GID_show"]) == 0
    out = capsys.readouterr().out
    # Queue 1 has no committed offset: an empty cell, and the lag counts from 0 (mqadmin's Diff).
    assert _table(out) == [[ORDERS, "0", "1", "0", "4", "3"], [ORDERS, "1", "", "0", "4", "4"],
                           [ORDERS, "2", "4", "0", "4", "0"]]
    assert out.rstrip().endswith("GID_show: lag 7 over 3 queues")
    assert main(["offsets", "show", "--store", orders_store, "--group", "GID_none"]) == 0
    assert capsys.readouterr().out.startswith("group GID_none has no committed offsets in store ")
    assert main(["offsets", "show", "--store", orders_store, "--group", "GID_none", "--topic", "Empty"]) == 0
    assert "Empty  1" in capsys.readouterr().out


def test_reset_checks_every_queue_before_committing(tables, orders_store, capsys):
    base = ["offsets", "reset", "--store", orders_store, "--group", "GID_reset", "--topic", ORDERS]
    assert main(base + ["--to-latest"]) == 0
    assert "GID_reset: committed 3 offsets of Orders" in capsys.readouterr().out
    assert consumer_offsets(tables, "GID_reset", ORDERS) == {("GID_reset", ORDERS, q): 4 for q in range(3)}
    # The broker's range is [min, max + 1]; 6 is outside on every queue: nothing is committed.
    assert main(base + ["--to-offset", "6"]) == 2
    assert "queue 0: Target offset 6 not in consume queue range [0-4]" in capsys.readouterr().err
    assert main(base + ["--to-offset", "2", "--queue", "1"]) == 0
    out = capsys.readouterr().out
    assert _table(out) == [[ORDERS, "1", "4", "2"]]
    assert main(base + ["--to-earliest", "--queue", "5"]) == 2
    assert "topic 'Orders' has 3 read queues (0..2); queue 5 is out of range" in capsys.readouterr().err
    assert main(base[:-2] + ["--topic", "Nope", "--to-earliest"]) == 2
    assert "topic 'Nope' does not exist" in capsys.readouterr().err
    assert consumer_offsets(tables, "GID_reset", ORDERS) == {("GID_reset", ORDERS, 0): 4, ("GID_reset", ORDERS, 1): 2,
                                                             ("GID_reset", ORDERS, 2): 4}


def test_reset_to_time_is_reset_offset_by_time(tables, orders_store, capsys):
    base = ["offsets", "reset", "--store", orders_store, "--group", "GID_time", "--topic", ORDERS]
    assert main(base + ["--to-latest"]) == 0
    capsys.readouterr()
    # Before every message: each queue's first offset (RocketMQ's LOWER answer), in one commit.
    assert main(base + ["--to-time", "1970-01-01T00:00:00Z"]) == 0
    assert _table(capsys.readouterr().out) == [[ORDERS, str(q), "4", "0"] for q in range(3)]
    assert consumer_offsets(tables, "GID_time", ORDERS) == {("GID_time", ORDERS, q): 0 for q in range(3)}
    # After every message: the max offset; one queue only with --queue.
    assert main(base + ["--to-time", "32503680000000", "--queue", "2"]) == 0
    assert _table(capsys.readouterr().out) == [[ORDERS, "2", "0", "4"]]
    assert main(base + ["--to-time", "yesterday"]) == 2
    assert "--to-time: expected 'earliest', 'latest', a time" in capsys.readouterr().err
