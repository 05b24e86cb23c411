"""notebooks/03_consumer_groups.py runs as plain Python on the suite's session and shows seed 003
as issue 11 states it."""
from __future__ import annotations

import runpy
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "03_consumer_groups.py"


def test_consumer_groups_notebook(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STORE", str(tmp_path / "store"))
    names = runpy.run_path(str(NOTEBOOK), init_globals={"spark": spark}, run_name="__notebook__")
    out = capsys.readouterr().out
    diagnosis = names["diagnosis"]
    assert diagnosis.consumed_counts() == {"A": 0, "B": 2}
    assert diagnosis.lost_counts() == {"filtered_by_group_subscription": 4, "dropped_by_client_recheck": 2}
    assert "Subscriptions: INCONSISTENT" in out and "lost: 6 message(s):" in out
    assert "stored groups: ['GID_seed003']" in out
    assert "consistent: True | consumed: {'A': 4, 'B': 4} | lost: {}" in out
