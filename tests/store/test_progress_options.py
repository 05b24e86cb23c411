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
