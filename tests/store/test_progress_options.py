"""The store's long operations take ``progress=``: a put shows its CommitLog write and its
dispatch in messages, off by default (the import's files are checked with the import command in
test_config_files.py)."""
from __future__ import annotations

import functools
import io
import re

import pytest

from rocketfilter.spark_progress import progress_block, spark_progress
from rocketfilter.store import MessageStore


def test_a_put_shows_its_write_and_its_dispatch(spark, tmp_path, capsys):
    store = MessageStore.open(str(tmp_path / "store"), spark)
    store.create_topic("T", read_queue_nums=2, write_queue_nums=2)
    shown = io.StringIO()
    display = functools.partial(spark_progress, spark, stream=shown, tty=False, delay=0)
    store.put_messages([{"topic": "T", "body": f"m{i}"} for i in range(3)], progress=display)
    lines = shown.getvalue().splitlines()
    assert [re.sub(r" in .*", "", line) for line in lines] == ["put: 3 messages", "dispatch: 3 messages"]
    store.put_messages([{"topic": "T", "body": "quiet"}])  # off by default
    assert capsys.readouterr().err == ""


def test_progress_must_be_a_bool_or_a_display(spark):
    with progress_block(spark, None, "x"), progress_block(spark, False, "x"):
        pass
    with pytest.raises(TypeError, match="progress must be True, False or a callable"):
        progress_block(spark, "yes", "x")


def honest(updates, phases) -> None:
    """What a display may report: ``phases`` in that order (one the watcher never saw may be
    missing); in each phase that counts, a count going up that reaches its total only with its
    last update (or the one before the final close); a phase after a finished count keeps that
    count; the final update last, at the total."""
    seen = [u.phase for u in updates]
    order = [p for i, p in enumerate(seen) if i == 0 or seen[i - 1] != p]
    assert len(order) == len(set(order)) and order == [p for p in phases if p in order], order
    assert updates[-1].final and not any(u.final for u in updates[:-1])
    assert not updates[-1].failed and updates[-1].done == updates[-1].total
    for phase in order:
        mine = [u for u in updates if u.phase == phase]
        counts = [u.done for u in mine]
        assert counts == sorted(counts), (phase, counts)
        full = [i for i, u in enumerate(mine) if u.total is not None and u.done >= u.total]
        if full and full[0] == 0 and len(set(counts)) == 1:
            continue   # a phase after a finished count (writing, committing): it keeps it
        tail = mine[full[0]:] if full else []
        assert len(tail) <= 1 or (len(tail) == 2 and tail[1].final), (phase, counts)


def test_a_real_import_reports_its_phases_in_order_and_its_total_at_the_end(spark, sample, tmp_path):
    updates = []
    store = MessageStore.open(str(tmp_path / "store"), spark)
    display = functools.partial(spark_progress, spark, stream=io.StringIO(), tty=False, delay=0,
                                poll_interval=0.05, listener=updates.append)
    report = store.import_store(str(sample), progress=display)
    assert report.commitlog_files and updates[0].phase == "reading"
    honest(updates, ["reading", "writing", "committing"])
    assert updates[-1].phase == "committing" and updates[-1].total == report.commitlog_files
    reading = [u for u in updates if u.phase == "reading"]
    assert all(u.done < u.total for u in reading[:-1])   # 100% only once every file was read


def test_the_replay_command_starts_spark_then_replays_and_ends_at_its_total(spark, orders_store, monkeypatch, capsys):
    from rocketfilter.jobs import common, replay

    updates = []
    monkeypatch.setattr(common, "PROGRESS_OPTIONS", {"delay": 0, "listener": updates.append})
    assert replay.main(["--store", orders_store, "--topic", "Orders", "--tags", "TagA", "--summary"], spark=spark) == 0
    assert [u.phase for u in updates][:1] == ["starting Spark"]
    honest(updates, ["starting Spark", "replaying"])
    assert updates[-1].phase == "replaying" and updates[-1].total == 12
    assert all(u.done < 12 for u in updates[:-2])   # the block's end, then the command's
    assert re.fullmatch(r"replay: 12 messages in \d+:\d\d \([\d.,]+ messages/s\)\n", capsys.readouterr().err)
