"""Issue 22.3: rocketfilter on a Spark standalone cluster (a master and one worker started from
pyspark's ``spark-class``) over a store on S3 (a moto server): ``rocketfilter import --master
spark://...``, ``replay_group`` and a streaming ``format("rocketmq")`` query, each answering as
the broker store's manifest says, with every task run by an executor (Spark's event log names
the executor of each finished task, and the master lists the application as its own).

The driver runs in its own process (a JVM of its own, apart from the suite's shared session). The
scenario runs in the background while the rest of the suite does (:mod:`.background` says why);
this test checks what it saw.
"""
from __future__ import annotations

from collections import Counter

import pytest

from . import background

pytestmark = pytest.mark.cluster


def test_import_replay_and_stream_on_a_standalone_cluster():
    pytest.importorskip("moto.server", reason="the cluster test needs pip install -e '.[test]' (moto[server])")
    seen = background.facts()
    messages, result = seen["messages"], seen["result"]
    assert result["import_exit"] == 0 and result["master"] == seen["master_url"]
    driver_app, driver_tasks = seen["driver_app"], seen["driver_tasks"]
    assert driver_app == result["app_id"]

    rows = seen["commitlog"]
    assert sorted((r["topic"], r["queue_id"], r["queue_offset"], r["commitlog_offset"]) for r in rows) == \
        sorted((m["topic"], m["queueId"], m["queueOffset"], m["commitLogOffset"]) for m in messages)

    replayed = result["replayed"]
    wanted = {(m["queueId"], m["queueOffset"]) for m in messages
              if m["topic"] == "TopicTest" and m.get("tags") in ("TagA", "TagB")}
    assert len(replayed) == len(wanted) == 400
    assert {(q, o) for _, q, o in replayed} == wanted            # each message once, none missing
    queues = {}
    for client, queue, _ in replayed:
        queues.setdefault(client, set()).add(queue)
    assert queues == {"consumer-a": {0, 1}, "consumer-b": {2, 3}}  # AllocateMessageQueueAveragely

    streamed = result["streamed"]
    wanted = Counter((m["queueId"], m["queueOffset"]) for m in messages
                     if m["topic"] == "OrderEvents" and m.get("tags") in ("created", "paid"))
    assert Counter((q, o) for q, o, _ in streamed) == wanted and len(streamed) == 185 + 138
    assert sum(result["stream_batches"]) == len(streamed) and len(result["stream_batches"]) >= 2

    # -- the work was done by the executor, in an application run by this cluster's master
    assert driver_tasks and "driver" not in driver_tasks, driver_tasks
    assert sum(driver_tasks.values()) > 0
    assert result["app_id"] in seen["completed_apps"], seen["completed_apps"]
