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
