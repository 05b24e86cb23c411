"""The standalone-cluster scenario, run in a background thread of the suite.

The scenario (a moto S3 server, a master and a worker, one driver application: 75 to 140 s) is
spent almost wholly waiting on its own processes, which use about two thirds of one core. So, as
the real broker's harness does (tests/broker/harness_runs.py), it runs while the rest of the suite
does: :func:`start` as soon as the suite's shared session runs (not before: both resolve hadoop-aws
through Ivy, and two first resolutions at once could race on an empty cache), its test ordered
last but the broker's, which reads the facts it gathered (:func:`facts`). Run alone, the test
starts the scenario itself.

The environment is copied when :func:`start` is called, so variables tests patch meanwhile
(``SPARK_CONNECT_MODE_ENABLED``, ``AWS_*``) never reach the cluster's processes.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Dict, Optional

from . import s3_local
from .standalone import Standalone, spark_env, tasks_by_executor

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "tests" / "data" / "rocketmq_store_sample.tar.xz"
BUCKET = "rocketfilter-cluster"
STORE = f"s3://{BUCKET}/store"


class _State:
    thread: Optional[threading.Thread] = None
    facts: Optional[dict] = None
    error: Optional[BaseException] = None
    stopping = False
    standalone: Optional[Standalone] = None
    driver: Optional[subprocess.Popen] = None


def start() -> None:
    """Start the scenario in a daemon thread (once)."""
    if _State.thread is not None:
        return
    environ = dict(os.environ)
    _State.thread = threading.Thread(target=_run, args=(environ,), name="cluster-scenario", daemon=True)
    _State.thread.start()


def facts() -> dict:
    """What the scenario saw (see :func:`_scenario`), once it has run; raises what it raised."""
    start()
    _State.thread.join()
    if _State.error is not None:
        raise _State.error
    return _State.facts


def stop() -> None:
    """Stop a scenario still running (a session that ended early): its driver and daemons."""
    _State.stopping = True
    if _State.driver is not None and _State.driver.poll() is None:
        _State.driver.kill()
    if _State.standalone is not None:
        _State.standalone.stop()


def _run(environ: Dict[str, str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="rf-cluster-"))
    try:
        _State.facts = _scenario(work, environ)
    except BaseException as error:   # noqa: BLE001 - re-raised in the test
        _State.error = error
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _scenario(work: Path, environ: Dict[str, str]) -> dict:
    broker_store = work / "broker_store"
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(broker_store, filter="data")
    with open(broker_store / "manifest.jsonl", encoding="utf-8") as lines:
        messages = [m for m in map(json.loads, lines) if m["kind"] == "message"]
    python_path = os.pathsep.join(p for p in (str(ROOT), environ.get("PYTHONPATH", "")) if p)
    with s3_local.moto_server() as endpoint:
        standalone = _State.standalone = Standalone(work / "standalone", python_path, environ=environ)
        try:
            if _State.stopping:
                raise RuntimeError("the suite stopped before the cluster scenario ran")
            standalone.start()
            s3_local.create_bucket(endpoint, BUCKET)
            env = spark_env(python_path, environ)
            env.update(s3_local.aws_env(endpoint))
            event_dir = work / "events_driver"
            event_dir.mkdir()
            conf = standalone.driver_conf(event_dir)
            conf.update(s3_local.spark_s3_conf(endpoint))
            argv = ["import", "--master", conf["spark.master"], "--store", STORE, "--source", str(broker_store)]
            for key, value in conf.items():
                if key != "spark.master":
                    argv += ["--conf", f"{key}={value}"]
            request = {"import": argv, "conf": conf, "store": STORE,
                       "storage_options": s3_local.storage_options(endpoint),
                       "stream_out": str(work / "stream_out"), "stream_checkpoint": str(work / "checkpoint")}
            driver = _State.driver = subprocess.Popen(
                [sys.executable, "-m", "tests.cluster.cluster_driver", json.dumps(request)], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
            out, err = driver.communicate()
            if driver.returncode != 0:
                raise AssertionError(f"the driver exited {driver.returncode}:\n{out[-3000:]}\n{err[-6000:]}")
            (log,) = list(event_dir.iterdir())   # the one application's event log, named by its id
            from deltalake import DeltaTable

            commitlog = DeltaTable(f"{STORE}/commitlog", storage_options=s3_local.storage_options(endpoint))
            return {
                "messages": messages,
                "result": json.loads(out.strip().splitlines()[-1]),
                "master_url": standalone.url,
                "driver_app": log.name,
                "driver_tasks": tasks_by_executor(log),
                "commitlog": commitlog.to_pyarrow_table(
                    columns=["topic", "queue_id", "queue_offset", "commitlog_offset"]).to_pylist(),
                "completed_apps": [a["id"] for a in standalone.master_state()["completedapps"]],
            }
        finally:
            standalone.stop()
