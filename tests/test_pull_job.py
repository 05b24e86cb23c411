"""``rocketfilter pull`` on the suite's session: one consumer's pulls of two queues, the message
table (timestamps, an empty cell for no keys), one line per pull, committed offsets, and a second
run that resumes from them. Bad input is in test_cli.py."""
from __future__ import annotations

import re

from rocketfilter.cli import main
from rocketfilter.store.offsets import consumer_offsets
from rocketfilter.store.tables import StoreTables
from rocketfilter.config import MessageStoreConfig

from .conftest import ORDERS

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}"


def _committed(uri: str, group: str) -> dict:
    return {q: o for (_, _, q), o in consumer_offsets(StoreTables(uri, None, MessageStoreConfig()), group, ORDERS).items()}


def test_pull_two_queues_commit_then_resume(orders_store, capsys):
    # amount > 100.0: messages 1, 2, 5, 6, 9, 10. Queue 0 holds 0, 3, 6, 9; queue 1 holds 1, 4, 7, 10.
    argv = ["pull", "--store", orders_store, "--topic", ORDERS, "--group", "GID_pull", "--sql", "amount > 100.0",
            "--queue", "1", "--queue", "0", "--max-msg-nums", "2", "--pulls", "2", "--commit"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err and "error" not in err, err
    assert re.search(r"^queue +offset +msg_id +tags +keys +born +stored$", out, re.M)
    rows = re.findall(rf"^(\d) +(\d) +\w{{32}} +(TagA|TagB) +(order-\d+)? +{STAMP} +{STAMP}$", out, re.M)
    assert rows == [("0", "2", "TagA", "order-6"), ("0", "3", "TagB", "order-9"),
                    ("1", "0", "TagB", "order-1"), ("1", "3", "TagA", "")]  # message 10 has no keys
    assert "queue 0 offset 0: FOUND, 2 messages, next_begin_offset 4 (min 0, max 4)" in out
    assert "queue 0 offset 4: NO_NEW_MSG, 0 messages, next_begin_offset 4 (min 0, max 4)" in out
    assert out.rstrip().endswith(f"{ORDERS}: delivered 4 messages in 4 pulls from 2 queues "
                                 "(SQL92 'amount > 100.0', group GID_pull); offsets committed")
    assert _committed(orders_store, "GID_pull") == {0: 4, 1: 4}

    # Again, from the committed offsets (queue 2 never committed: a young queue starts at 0).
    assert main(["pull", "--store", orders_store, "--topic", ORDERS, "--group", "GID_pull", "--tags", "TagA"]) == 0
    out = capsys.readouterr().out
    assert "queue 0 offset 4: NO_NEW_MSG" in out and "queue 1 offset 4: NO_NEW_MSG" in out
    assert "queue 2 offset 0: FOUND, 2 messages, next_begin_offset 4" in out  # messages 2 and 8 (TagA)
    assert _committed(orders_store, "GID_pull") == {0: 4, 1: 4}  # no --commit: unchanged
