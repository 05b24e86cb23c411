"""Issue 22.3: rocketfilter on a Spark standalone cluster (a master and one worker started from
pyspark's ``spark-class``) over a store on S3 (a moto server): ``rocketfilter import --master
spark://...``, ``replay_group`` and a streaming ``format("rocketmq")`` query, each answering as
the broker store's manifest says, with every task run by an executor (Spark's event log names
the executor of each finished task, and the master lists the application as its own).

The driver runs in its own process (a JVM of its own, apart from the suite's shared session). The S3 settings come from :mod:`.s3_local`.
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest
from deltalake import DeltaTable

from . import s3_local
from .standalone import spark_env, tasks_by_executor

pytestmark = pytest.mark.cluster

BUCKET = "rocketfilter-cluster"
STORE = f"s3://{BUCKET}/store"


def manifest_messages(broker_store):
    with open(broker_store / "manifest.jsonl", encoding="utf-8") as lines:
        return [m for m in map(json.loads, lines) if m["kind"] == "message"]


def run(argv, env, what):
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{what} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return done


def conf_of(standalone, s3_endpoint, event_dir):
    event_dir.mkdir()
    conf = standalone.driver_conf(event_dir)
    conf.update(s3_local.spark_s3_conf(s3_endpoint))
    return conf


def executor_tasks(event_dir):
    """Finished tasks by executor id of the one application whose event log is in ``event_dir``."""
    (log,) = list(event_dir.iterdir())
    return log.name, tasks_by_executor(log)


def test_import_replay_and_stream_on_a_standalone_cluster(standalone, s3_endpoint, broker_store, tmp_path):
    s3_local.create_bucket(s3_endpoint, BUCKET)
    env = spark_env(standalone.python_path)
    env.update(s3_local.aws_env(s3_endpoint))
    messages = manifest_messages(broker_store)

    # -- rocketfilter import (the command), replay_group and a streaming query, from one Python
    # driver on the cluster: one application, whose tasks the executor ran
    event_dir = tmp_path / "events_driver"
    conf = conf_of(standalone, s3_endpoint, event_dir)
    argv = ["import", "--master", conf["spark.master"], "--store", STORE, "--source", str(broker_store)]
    for key, value in conf.items():
        if key != "spark.master":
            argv += ["--conf", f"{key}={value}"]
    request = {"import": argv, "conf": conf, "store": STORE, "storage_options": s3_local.storage_options(s3_endpoint),
               "stream_out": str(tmp_path / "stream_out"), "stream_checkpoint": str(tmp_path / "checkpoint")}
    done = run([sys.executable, "-m", "tests.cluster.cluster_driver", json.dumps(request)], env, "the driver")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["import_exit"] == 0 and result["master"] == standalone.url
    driver_app, driver_tasks = executor_tasks(event_dir)
    assert driver_app == result["app_id"]

    commitlog = DeltaTable(f"{STORE}/commitlog", storage_options=s3_local.storage_options(s3_endpoint))
    rows = commitlog.to_pyarrow_table(columns=["topic", "queue_id", "queue_offset", "commitlog_offset"]).to_pylist()
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
    finished = {a["id"]: a for a in standalone.master_state()["completedapps"]}
    assert result["app_id"] in finished, finished.keys()
