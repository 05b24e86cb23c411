"""The demo job on the suite's session: what the tag subscription and the selector deliver."""
from __future__ import annotations

import argparse
import io
import re

from rocketfilter.demo import (
    DEFAULT_SELECTOR,
    DEFAULT_TAGS,
    add_demo_arguments,
    demo_command,
    format_table,
    run_demo,
    seed_messages,
)
from rocketfilter.tags import tags_code


def _delivered_ids(section: str) -> list:
    return [line.split()[0] for line in section.splitlines()
            if line.startswith("msg-") and line.rstrip().endswith("yes")]


def test_seed_messages(spark):
    rows = seed_messages(spark).collect()
    assert len(rows) == 10
    assert all(r.tags_code == tags_code(r.tags) for r in rows)
    assert {r.tags for r in rows} == {"TAG_A", "TAG_B", "TAG_C"}


def test_run_demo_output(spark):
    out = io.StringIO()
    run_demo(spark, out=out)
    tag_part, sql_part = out.getvalue().split("SQL92 selector")
    assert _delivered_ids(tag_part) == [f"msg-{i}" for i in range(10) if i % 3 != 1]
    assert "delivered: 7 of 10" in tag_part
    assert _delivered_ids(sql_part) == ["msg-6"]   # 8 has no name; 7 and 9 have isGender=false
    assert "delivered: 1 of 10" in sql_part


def test_demo_command_with_arguments(spark, capsys):
    parser = argparse.ArgumentParser()
    add_demo_arguments(parser)
    args = parser.parse_args(["--tags", "TAG_B", "--selector", "age >= 8"])
    assert (DEFAULT_TAGS, DEFAULT_SELECTOR) != (args.tags, args.selector)
    assert demo_command(args, spark=spark) == 0
    tag_part, sql_part = capsys.readouterr().out.split("SQL92 selector")
    assert _delivered_ids(tag_part) == ["msg-1", "msg-4", "msg-7"]
    assert _delivered_ids(sql_part) == ["msg-8", "msg-9"]


def test_format_table():
    text = format_table(["a", "long"], [[1, None], ["xyz", 2]])
    assert text.splitlines() == ["a    long", "---  ----", "1", "xyz  2"]
    assert re.match(r"^-+  -+$", text.splitlines()[1])
