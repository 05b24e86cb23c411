"""notebooks/03_consumer_groups.py runs as plain Python on the suite's session and shows seed 003
as issue 11 states it; notebooks/04_why_not_delivered.py traces a consumed, a filtered, a dropped
and an expired message."""
from __future__ import annotations

import runpy
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "03_consumer_groups.py"


def test_consumer_groups_notebook(spark, tmp_path, monkeypatch, capsys):
    """Without STORE the notebook makes a temporary store, and removes it at the end (issue 19.3)."""
    import tempfile

    monkeypatch.delenv("STORE", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # where mkdtemp makes it
    names = runpy.run_path(str(NOTEBOOK), init_globals={"spark": spark}, run_name="__notebook__")
    out = capsys.readouterr().out
    assert names["TEMPORARY"] and names["STORE"].startswith(str(tmp_path))
    assert f"removed the temporary store {names['STORE']}" in out and list(tmp_path.iterdir()) == []
    diagnosis = names["diagnosis"]
    assert diagnosis.consumed_counts() == {"A": 0, "B": 2}
    assert diagnosis.lost_counts() == {"filtered_by_group_subscription": 4, "dropped_by_client_recheck": 2}
    assert "Subscriptions: INCONSISTENT" in out and "lost: 6 message(s):" in out
    assert "stored groups: ['GID_seed003']" in out
    assert "consistent: True | consumed: {'A': 4, 'B': 4} | lost: {}" in out


WHY = Path(__file__).resolve().parents[1] / "notebooks" / "04_why_not_delivered.py"


def test_why_not_delivered_notebook(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STORE", str(tmp_path / "why"))
    names = runpy.run_path(str(WHY), init_globals={"spark": spark}, run_name="__notebook__")
    out = capsys.readouterr().out
    traces = names["traces"]
    assert {name: (t.verdict.value, t.client_id) for name, t in traces.items()} == {
        "consumed": ("CONSUMED", "B"), "filtered": ("FILTERED_BY_TAG_CODE", "A"),
        "dropped": ("DROPPED_BY_CLIENT_RECHECK", "A"), "expired": ("EXPIRED", None)}
    for line in ("SUBSCRIBE_TEST queue 2 offset 2 for group GID_seed003, consumer B: CONSUMED",
                 "committed offset of queue 2 is 3 > 2: consumed", "[STOP] tag_code:", "[STOP] client_recheck:",
                 "below the CommitLog's min offset 1000: retention removed it"):
        assert line in out, out


STREAMING = Path(__file__).resolve().parents[1] / "notebooks" / "05_streaming.py"


def test_streaming_notebook(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STORE", str(tmp_path / "streaming"))
    names = runpy.run_path(str(STREAMING), init_globals={"spark": spark}, run_name="__notebook__")
    out = capsys.readouterr().out
    assert names["matches"] is True and len(names["streamed"]) > 0
    assert len(names["batches"]) >= 3   # one stream across three puts, batches of at most 25 offsets
    assert names["committed"] == {q: names["store"].get_max_offset_in_queue("Orders", q) for q in range(4)}
    assert "same as read_messages, each once: True" in out
