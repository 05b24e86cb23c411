"""bench/spark_profile.py reads Spark's event log: a hand-written rolling log of two labelled
jobs (one stage each, two tasks) and one unlabelled job."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def profile():
    spec = importlib.util.spec_from_file_location("bench_spark_profile", BENCH / "spark_profile.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _task(stage, run_ms, cpu_ns, shuffle_read=0, spill=0):
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Task Metrics": {
        "Executor Run Time": run_ms, "Executor CPU Time": cpu_ns, "JVM GC Time": 10,
        "Input Metrics": {"Bytes Read": 2_000_000},
        "Shuffle Read Metrics": {"Remote Bytes Read": 0, "Local Bytes Read": shuffle_read},
        "Shuffle Write Metrics": {"Shuffle Bytes Written": 1_000_000}, "Disk Bytes Spilled": spill}}


def _job(job, stage, label, start, end):
    scope = json.dumps({"id": "3", "name": "FlatMapGroupsInArrow"})
    props = {"spark.job.description": label} if label else {}
    return [{"Event": "SparkListenerJobStart", "Job ID": job, "Submission Time": start, "Stage IDs": [stage],
             "Properties": props},
            {"Event": "SparkListenerStageCompleted", "Stage Info": {
                "Stage ID": stage, "Submission Time": start, "Completion Time": end,
                "Stage Name": "collect at /x/rocketfilter/store/importer.py:234",
                "RDD Info": [{"Scope": scope}, {"Scope": json.dumps({"id": "1", "name": "WholeStageCodegen (1)"})}]}},
            {"Event": "SparkListenerJobEnd", "Job ID": job, "Completion Time": end}]


def test_a_rolling_log_is_summed_per_label(profile, tmp_path):
    log = tmp_path / "eventlog_v2_local-1"
    log.mkdir()
    events = [*_job(0, 0, "1,000 replay", 1_000, 3_000), _task(0, 1_500, 1_000_000_000, shuffle_read=4_000_000),
              _task(0, 500, 200_000_000, spill=3_000_000), *_job(1, 1, "1,000 replay", 2_500, 4_000),
              _task(1, 100, 100_000_000)]
    later = [*_job(2, 2, None, 5_000, 6_000), _task(2, 100, 1)]
    (log / "events_1_local-1").write_text("".join(json.dumps(e) + "\n" for e in events))
    (log / "events_2_local-1").write_text("".join(json.dumps(e) + "\n" for e in later))
    out = profile.summarize(log, walls={"1,000 replay": 3.5}).splitlines()
    # Jobs 0 and 1 overlap: 3.0 s inside Spark jobs, not 3.5.
    assert out[0] == "1,000 replay: 2 Spark jobs, 3.00 s inside them of 3.50 s (0.50 s on the driver outside jobs)"
    assert out[1].startswith("  stage    0    2.00 s wall,    2 tasks,    2.00 s task (  1.20 JVM CPU,  0.02 GC,"
                             "   0.80 other), in     4.0 MB, shuffle    4.0 ->    2.0 MB, spill   3.0 MB: ")
    assert out[1].endswith("MB: collect at importer.py:234; FlatMapGroupsInArrow")
    assert len(out) == 3   # the unlabelled job is left out unless asked for
    assert profile.summarize(log, "(unlabelled)").startswith("(unlabelled): 1 Spark jobs, 1.00 s")


def test_the_newest_finished_log_of_a_directory(profile, tmp_path, capsys):
    (tmp_path / "eventlog_v2_local-1").mkdir()
    (tmp_path / "eventlog_v2_local-1" / "events_1_local-1").write_text(
        "".join(json.dumps(e) + "\n" for e in _job(0, 0, "x", 0, 10)))
    running = tmp_path / "eventlog_v2_local-2"
    running.mkdir()
    (running / "events_1_local-2.inprogress").write_text("")
    assert profile.event_logs(tmp_path) == [tmp_path / "eventlog_v2_local-1"]
    assert profile.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("x: 1 Spark jobs, 0.01 s")
    with pytest.raises(SystemExit):
        profile.main([str(tmp_path / "missing")])
    assert "no such event log" in capsys.readouterr().err
