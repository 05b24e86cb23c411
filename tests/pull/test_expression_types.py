"""Only the expression types RocketMQ accepts (issue 19 §6.6): TAG (also null or "") and SQL92,
case-sensitive. ``ExpressionType.isTagType`` takes null, "" and "TAG"; any other type goes to the
broker's FilterFactory, which has only "SQL92", so "FOO", "tag" or "sql92" never filter anything.
Every API and source option that takes a type refuses the others instead of guessing."""
from __future__ import annotations

import pytest

import rocketfilter
from rocketfilter.config import MessageStoreConfig
from rocketfilter.source.options import SourceOptionError, SourceOptions
from rocketfilter.store import MessageStore
from rocketfilter.tags import check_expression_type

BAD = ["FOO", "tag", "sql92", "Sql92", " SQL92", "SQL"]


@pytest.mark.parametrize("expression_type", BAD)
def test_check_expression_type_refuses_what_rocketmq_refuses(expression_type):
    with pytest.raises(ValueError, match=f"expression type {expression_type!r} is not one "
                                         "RocketMQ accepts"):
        check_expression_type(expression_type)


def test_check_expression_type_accepts_tag_and_sql92():
    assert [check_expression_type(t) for t in (None, "", "TAG", "SQL92")] == \
        ["TAG", "TAG", "TAG", "SQL92"]


@pytest.mark.parametrize("expression_type", BAD)
def test_the_source_option_is_case_sensitive(expression_type):
    with pytest.raises(SourceOptionError, match="option expressionType: .* is not one RocketMQ"):
        SourceOptions.parse({"store": "/tmp/s", "topic": "K", "subExpression": "a > 1",
                             "expressionType": expression_type})


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    s = MessageStore.open(str(tmp_path_factory.mktemp("types") / "s"), spark,
                          MessageStoreConfig())
    s.create_topic("K", read_queue_nums=1, write_queue_nums=1)
    s.put_messages([{"topic": "K", "properties": {"a": "2"}}])
    return s


@pytest.mark.parametrize("expression_type", ["FOO", "tag", "sql92"])
def test_read_messages_and_the_pull_consumer_refuse_an_unknown_type(store, expression_type):
    for read in (rocketfilter.read_messages, rocketfilter.read_consume_queue):
        with pytest.raises(ValueError, match="is not one RocketMQ accepts"):
            read(store, "K", "a > 1", expression_type)
    from rocketfilter.pull.broker import Broker
    from rocketfilter.pull.client import PullConsumer

    consumer = PullConsumer(Broker(store), "G")
    with pytest.raises(ValueError, match="is not one RocketMQ accepts"):
        consumer.subscribe("K", "a > 1", expression_type)
    assert rocketfilter.read_messages(store, "K", "a > 1", "SQL92").count() == 1
