"""A Spark standalone cluster on 127.0.0.1: one master and one worker started from pyspark's own
``spark-class``, ready once the master's JSON lists the worker ALIVE, stopped by their PIDs.

The executors the worker starts run this interpreter (``PYSPARK_PYTHON``) with the given
``PYTHONPATH``, so they import the same rocketfilter as the driver.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import pyspark

from tests.short_jvm import SHORT_JVM_OPTIONS

from .s3_local import free_port

SPARK_HOME = os.path.dirname(pyspark.__file__)
# Only a hang guard: readiness is a condition, polled; a loaded machine only makes it slower.
HANG_GUARD_SECONDS = 900


def spark_env(python_path: str) -> Dict[str, str]:
    """What the master, the worker, their executors and the drivers run with."""
    env = dict(os.environ)
    env.update({"SPARK_HOME": SPARK_HOME, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
                "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                "PYTHONPATH": python_path})
    env.pop("SPARK_CONF_DIR", None)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.pop("MASTER", None)
    return env


def read_json(url: str) -> Optional[dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError):
        return None


@dataclass
class Standalone:
    """A running master and worker; ``url`` is the ``spark://`` master URL."""
    work_dir: Path
    python_path: str
    cores: int = 2
    memory: str = "1g"
    master_port: int = field(default_factory=free_port)
    master_ui_port: int = field(default_factory=free_port)
    worker_ui_port: int = field(default_factory=free_port)
    processes: List[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def master_json_url(self) -> str:
        return f"http://127.0.0.1:{self.master_ui_port}/json"

    def _spawn(self, name: str, args: List[str]) -> subprocess.Popen:
        log = open(self.work_dir / f"{name}.log", "wb")
        # spark-class execs java: the PID is the JVM's.
        process = subprocess.Popen([os.path.join(SPARK_HOME, "bin", "spark-class"), *args],
                                   env=spark_env(self.python_path), stdout=log, stderr=subprocess.STDOUT,
                                   cwd=self.work_dir)
        log.close()
        self.processes.append(process)
        return process

    def _check_alive(self) -> None:
        for process in self.processes:
            if process.poll() is not None:
                logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(self.work_dir.glob("*.log")))
                raise RuntimeError(f"a Spark daemon exited with {process.returncode}:\n{logs}")

    def _wait_for(self, condition, what: str) -> dict:
        started = time.monotonic()
        while True:
            self._check_alive()
            state = read_json(self.master_json_url)
            if state is not None and condition(state):
                return state
            if time.monotonic() - started > HANG_GUARD_SECONDS:
                raise RuntimeError(f"standalone cluster: {what} not seen in {HANG_GUARD_SECONDS} s; "
                                   f"master state {state}")
            try:   # a short pause between polls that ends early if the daemon dies
                self.processes[-1].wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass

    def start(self) -> "Standalone":
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.master_port), "--webui-port", str(self.master_ui_port)])
        self._wait_for(lambda s: s.get("status") == "ALIVE", "the master ALIVE")
        (self.work_dir / "worker").mkdir(exist_ok=True)
        self._spawn("worker", ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                               "--webui-port", str(self.worker_ui_port), "--cores", str(self.cores),
                               "--memory", self.memory, "--work-dir", str(self.work_dir / "worker")])
        self._wait_for(lambda s: any(w.get("state") == "ALIVE" for w in s.get("workers", ())),
                       "a worker ALIVE")
        return self

    def master_state(self) -> dict:
        state = read_json(self.master_json_url)
        assert state is not None, "the master's JSON did not answer"
        return state

    def stop(self) -> None:
        """SIGTERM each daemon by PID (the worker first: it kills its executors), then wait."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()

    def driver_conf(self, event_log_dir: Path) -> Dict[str, str]:
        """A driver's settings for this cluster: client mode on 127.0.0.1, small executors, and an
        uncompressed event log in which each task's end names the executor that ran it."""
        return {
            "spark.master": self.url,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.memory": "1g",
            "spark.executor.memory": self.memory,
            "spark.executor.cores": str(self.cores),
            "spark.executor.extraJavaOptions": SHORT_JVM_OPTIONS,
            "spark.cores.max": str(self.cores),
            "spark.executorEnv.PYTHONPATH": self.python_path,
            "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
            "spark.pyspark.python": sys.executable,
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": event_log_dir.as_uri(),
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",   # one file per application, named by its id
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        }


def tasks_by_executor(event_log: Path) -> Dict[str, int]:
    """Finished tasks per executor id, from a Spark event log (one JSON event per line)."""
    counts: Dict[str, int] = {}
    with open(event_log, encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event.get("Event") == "SparkListenerTaskEnd":
                executor = event["Task Info"]["Executor ID"]
                counts[executor] = counts.get(executor, 0) + 1
    return counts

