"""The source names an unknown topic as the ``topic`` option's problem (issue 19 §6.8), not as
a ``startingOffsets`` one. Planning opens the store through its Delta tables: no Spark here."""
from __future__ import annotations

import pytest

from rocketfilter.config import MessageStoreConfig
from rocketfilter.source.datasource import open_store
from rocketfilter.source.options import SourceOptionError, SourceOptions
from rocketfilter.store.store import MessageStore


def test_an_unknown_topic_is_the_topic_options_error(tmp_path):
    store = MessageStore(str(tmp_path / "s"), None, MessageStoreConfig())
    store.create_topic("Known", read_queue_nums=1, write_queue_nums=1)
    options = SourceOptions.parse({"store": store.uri, "topic": "Nope"})
    with pytest.raises(SourceOptionError, match=r"^option topic: topic 'Nope' does not exist in "
                                                r"store .* \(topics: Known\)$") as info:
        open_store(options)
    assert "startingOffsets" not in str(info.value)
    assert open_store(SourceOptions.parse({"store": store.uri, "topic": "Known"})).uri == store.uri


@pytest.mark.parametrize("options,message", [
    ({"maxOffsetsPerTrigger": "0"}, "option maxOffsetsPerTrigger: expected a positive integer"),
    ({"startingOffsetz": "earliest"}, "unknown option"),
    ({"expression_type": "sql92", "sub_expression": "a > 1"}, "option expressionType:"),
    ({"expression_type": "SQL92", "sub_expression": "a >"}, "option subExpression"),
])
def test_the_read_helpers_check_options_before_spark(options, message):
    """rocketfilter.read/read_stream check the options on the driver: one line, before Spark
    wraps a worker's traceback around it (spark=None here: Spark is never reached)."""
    import rocketfilter.source as source

    args = {"sub_expression": options.pop("sub_expression", "*"),
            "expression_type": options.pop("expression_type", "TAG")}
    for read in (source.read, source.read_stream):
        with pytest.raises(SourceOptionError, match=message) as info:
            read(None, "/tmp/no-store", "T", **args, **options)
        assert "\n" not in str(info.value)
