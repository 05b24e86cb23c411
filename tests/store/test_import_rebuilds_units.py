"""The CommitLog is the source of truth on import (issue 19 §6.2): a consume-queue file lost to
damage (emptied) leaves CommitLog records no unit points to; ``import_store(skip_damaged=True)``
rebuilds their units from the records, as a broker's recovery re-dispatches, counts them in the
report, and get_message/pull_sequence, ``format("rocketmq")`` and read_messages return the same
set of messages."""
from __future__ import annotations

import shutil

import rocketfilter
from rocketfilter.config import MessageStoreConfig
from rocketfilter.pull.sequence import pull_sequence
from rocketfilter.store import MessageStore

TOPIC, QUEUE = "TopicTest", 1
EMPTIED = f"consumequeue/{TOPIC}/{QUEUE}/00000000000000001280"   # units 64.. of the queue


def test_units_of_an_emptied_consume_queue_file_are_rebuilt(spark, sample, tmp_path):
    source = tmp_path / "broker"
    shutil.copytree(sample, source)
    lost = (source / EMPTIED).stat().st_size // 20
    (source / EMPTIED).write_bytes(b"")
    store = MessageStore.open(str(tmp_path / "store"), spark,
                              MessageStoreConfig(consume_queue_rows_per_file=1000))
    report = store.import_store(str(source), skip_damaged=True)
    assert report.messages == 2997

    result = store.get_message("g", TOPIC, QUEUE, 64, 4)
    assert result.status == "FOUND" and result.message_queue_offsets == [64, 65, 66, 67]

    n = store.get_max_offset_in_queue(TOPIC, QUEUE)
    everything = set(range(n))
    pulled = {r.queue_offset for r in pull_sequence(store, TOPIC).collect() if r.queue_id == QUEUE}
    read = {r.queue_offset for r in rocketfilter.read_messages(store, TOPIC, "*")
            .where(f"queue_id = {QUEUE}").select("queue_offset").collect()}
    source_rows = {r.queue_offset for r in spark.read.format("rocketmq")
                   .option("store", store.uri).option("topic", TOPIC).load()
                   .where(f"queue_id = {QUEUE}").select("queue_offset").collect()}
    assert pulled == read == source_rows == everything
    assert lost > 0 and report.cq_units_rebuilt == lost
