"""The demo on the suite's session: what the tag subscription and the selector deliver, and
``rocketfilter demo`` (rocketfilter/jobs/demo.py) with its arguments and its selector's lint."""
from __future__ import annotations

import io
import re

from rocketfilter.jobs.demo_run import DEFAULT_SELECTOR, run_demo, seed_messages, seed_properties
from rocketfilter.jobs import demo as demo_job
from rocketfilter.selector import parse
from rocketfilter.tags import tags_code
from rocketfilter.text_table import format_table


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


def test_demo_command_with_arguments_and_lint_warnings(spark, capsys):
    argv = ["--tags", "TAG_B", "--selector", "age >= 8 AND nmae IS NOT NULL OR age = 9"]
    assert demo_job.main(argv, spark=spark) == 0
    out, err = capsys.readouterr()
    tag_part, sql_part = out.split("SQL92 selector")
    assert _delivered_ids(tag_part) == ["msg-1", "msg-4", "msg-7"]
    assert _delivered_ids(sql_part) == ["msg-9"]
    # Linted against the sample's own properties: the misspelt name is named, nothing else.
    assert err.splitlines() == ["rocketfilter demo: warning: selector col 14: `nmae` is not among the known "
                                "properties, so it reads as absent (NULL) on every message, and `nmae IS NOT NULL` "
                                "is FALSE; did you mean `name`? [unknown-property]"]


def test_the_default_selector_is_clean_on_the_sample():
    assert parse(DEFAULT_SELECTOR).lint(known_properties=seed_properties()) == []


def test_format_table():
    text = format_table(["a", "long"], [[1, None], ["xyz", 2]])
    assert text.splitlines() == ["a    long", "---  ----", "1", "xyz  2"]
    assert re.match(r"^-+  -+$", text.splitlines()[1])
