"""``rocketfilter lint``: findings with their place and fix, exit codes 0/1/2/3, and the known
properties sampled from a store's topic (bounded, without Spark)."""
from __future__ import annotations

import pytest

from rocketfilter.cli import main
from rocketfilter.config import MessageStoreConfig
from rocketfilter.jobs import common
from rocketfilter.store.sample import sample_properties
from rocketfilter.store.tables import StoreTables

from .conftest import ORDERS


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("lint must not start Spark")
    monkeypatch.setattr(common, "start_spark", refuse)


def test_findings_with_a_caret_exit_1(capsys):
    assert main(["lint", "region LIKE 'eu%'"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == ["  region LIKE 'eu%'", "  ^",
                         "col 1 [bare-property]: `region` alone is FALSE for every string value and NULL when "
                         "absent: RocketMQ casts a bare property to Boolean and broker properties are strings, "
                         "so this condition is never TRUE",
                         "  fix: compare it (`region = 'value'`, or `region = TRUE` for 'true'/'false' flags) or "
                         "test presence with `region IS NOT NULL`"]
    assert lines[4:6] == ["  region LIKE 'eu%'", "         ^"]
    assert lines[6].startswith("col 8 [ignored-trailing-input]: LIKE does not exist in RocketMQ's SQL92")
    assert lines[7] == "  fix: write `region STARTSWITH 'eu'`" and lines[-1] == "2 findings"


def test_clean_exit_0_syntax_error_exit_2(capsys):
    assert main(["lint", "amount > 100.0 AND region = 'eu'"]) == 0
    assert capsys.readouterr().out == "no findings\n"
    assert main(["lint", "age > '5'"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocketfilter lint: error: SelectorSyntaxError: ") and err.count("\n") == 1


def test_a_store_tells_the_known_properties(orders_store, capsys):
    argv = ["lint", "amount > 100 AND regoin = 'eu'", "--store", orders_store, "--topic", ORDERS]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert out.startswith("12 newest messages of Orders carry the properties: CLUSTER, KEYS, TAGS, WAIT, "
                          "amount, region\n")
    assert "col 10 [integer-literal-vs-decimal]: `amount > 100` throws on amount = '250.5' and '19.99'" in out
    assert "  fix: write `amount > 100.0`" in out
    assert "col 18 [unknown-property]: `regoin` is not among the known properties" in out
    assert "  fix: did you mean `region`?" in out
    assert main(["lint", "amount > 100.0", "--store", orders_store, "--topic", "Empty"]) == 0
    assert capsys.readouterr().out == "topic Empty has no messages: property names are not checked\nno findings\n"


def test_no_store_exit_3_unknown_topic_exit_2(orders_store, tmp_path, capsys):
    assert main(["lint", "a = 1", "--store", str(tmp_path / "nothing"), "--topic", ORDERS]) == 3
    assert "no rocketfilter store at" in capsys.readouterr().err
    assert main(["lint", "a = 1", "--store", orders_store, "--topic", "Nope"]) == 2
    assert "topic 'Nope' does not exist" in capsys.readouterr().err


def test_the_sample_is_the_newest_messages_and_bounded(orders_store):
    tables = StoreTables(orders_store, None, MessageStoreConfig())
    sample = sample_properties(tables, ORDERS, limit=3)
    assert sample.messages == 3 and sample.counts["amount"] == 3
    # Messages 11, 10, 9 (newest first): amounts 80, 250.5, 150.
    assert sample.values["amount"] == ["80", "250.5", "150"]
    assert sample.row_groups_read == 1
    capped = sample_properties(tables, ORDERS, limit=1000, max_row_groups=1)
    assert capped.messages == 12 and capped.row_groups_read == 1  # the one row group holds them all
    assert sample_properties(tables, "Empty").messages == 0
    with pytest.raises(ValueError, match="at least 1"):
        sample_properties(tables, ORDERS, limit=0)
