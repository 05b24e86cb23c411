"""Where a benchmarked job's time goes, from Spark's event log: per job description (as
``setJobDescription`` labels it), its wall time, the part of it spent in Spark jobs, and per
stage the operators, tasks, wall time, task time, JVM CPU, GC, input, shuffle and spill.

Task time that the JVM's CPU does not account for is mostly a Python worker's (Arrow
functions, UDFs) or waiting on I/O; the step's wall time outside every Spark job is the
driver's own work (planning, delta-rs commits, Python).

    python bench/spark_profile.py EVENT_LOG [--label PREFIX]

bench/scale.py ``--profile DIR`` writes the log and prints this summary for every job it ran.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

MB = 1e6
UNLABELLED = "(unlabelled)"   # jobs run without a description; shown only when asked for by name


@dataclass
class Stage:
    stage_id: int
    call_site: str = ""      # where the job was started, "collect at importer.py:234"
    operators: List[str] = field(default_factory=list)
    tasks: int = 0
    start: int = 0
    end: int = 0
    run_ms: int = 0
    cpu_ns: int = 0
    gc_ms: int = 0
    input_bytes: int = 0
    shuffle_read: int = 0
    shuffle_write: int = 0
    spill_disk: int = 0
    peak_memory: int = 0


@dataclass
class Job:
    label: str
    start: int
    end: int = 0
    stage_ids: List[int] = field(default_factory=list)


def _operators(stage_info: dict) -> List[str]:
    names: List[str] = []
    for rdd in stage_info.get("RDD Info", []):
        scope = rdd.get("Scope")
        name = json.loads(scope).get("name", "") if scope else ""
        name = name.split(" (")[0]
        if name and name not in names and not name.startswith("WholeStageCodegen"):
            names.append(name)
    return names


def _lines(path: Path) -> Iterable[str]:
    """An event log's lines: one file, or a rolling log's directory (``eventlog_v2_*``, Spark's
    default) of ``events_<n>_*`` files in order."""
    files = [path]
    if path.is_dir():
        files = sorted((p for p in path.iterdir() if p.name.startswith("events_")),
                       key=lambda p: int(p.name.split("_")[1]))
    for f in files:
        with open(f, encoding="utf-8") as lines:
            yield from lines


def _short_call_site(name: str) -> str:
    """``collect at /a/b/importer.py:234`` -> ``collect at importer.py:234``."""
    action, sep, where = name.partition(" at ")
    return f"{action}{sep}{where.rsplit('/', 1)[-1]}" if sep else name


def read_events(path: Path) -> Tuple[List[Job], Dict[int, Stage]]:
    jobs: Dict[int, Job] = {}
    stages: Dict[int, Stage] = {}
    for line in _lines(path):
        e = json.loads(line)
        kind = e.get("Event")
        if kind == "SparkListenerJobStart":
            label = (e.get("Properties") or {}).get("spark.job.description") or UNLABELLED
            jobs[e["Job ID"]] = Job(label, e["Submission Time"], stage_ids=list(e.get("Stage IDs", [])))
        elif kind == "SparkListenerJobEnd" and e["Job ID"] in jobs:
            jobs[e["Job ID"]].end = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            s = stages.setdefault(info["Stage ID"], Stage(info["Stage ID"]))
            s.operators = _operators(info)
            s.call_site = _short_call_site(info.get("Stage Name", ""))
            s.start, s.end = info.get("Submission Time", 0), info.get("Completion Time", 0)
        elif kind == "SparkListenerTaskEnd":
            m = e.get("Task Metrics") or {}
            s = stages.setdefault(e["Stage ID"], Stage(e["Stage ID"]))
            s.tasks += 1
            s.run_ms += m.get("Executor Run Time", 0)
            s.cpu_ns += m.get("Executor CPU Time", 0)
            s.gc_ms += m.get("JVM GC Time", 0)
            s.input_bytes += (m.get("Input Metrics") or {}).get("Bytes Read", 0)
            r = m.get("Shuffle Read Metrics") or {}
            s.shuffle_read += r.get("Remote Bytes Read", 0) + r.get("Local Bytes Read", 0)
            s.shuffle_write += (m.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0)
            s.spill_disk += m.get("Disk Bytes Spilled", 0)
            s.peak_memory = max(s.peak_memory, m.get("Peak Execution Memory", 0))
    return list(jobs.values()), stages


def _union_ms(intervals: Iterable[Tuple[int, int]]) -> int:
    total, last = 0, None
    for a, b in sorted(intervals):
        if last is None or a > last:
            total += b - a
            last = b
        elif b > last:
            total += b - last
            last = b
    return total


def summarize(path: Path, label_prefix: str = "", walls: Optional[Dict[str, float]] = None) -> str:
    """The profile of every label starting with ``label_prefix``; ``walls`` gives each label's
    measured wall seconds (for the time outside Spark jobs)."""
    jobs, stages = read_events(path)
    by_label: Dict[str, List[Job]] = defaultdict(list)
    for j in jobs:
        if j.label.startswith(label_prefix) and (label_prefix or j.label != UNLABELLED):
            by_label[j.label].append(j)
    out: List[str] = []
    for label, js in by_label.items():
        in_jobs = _union_ms((j.start, j.end) for j in js if j.end) / 1000
        head = f"{label}: {len(js)} Spark jobs, {in_jobs:.2f} s inside them"
        if walls and label in walls:
            head += f" of {walls[label]:.2f} s ({walls[label] - in_jobs:.2f} s on the driver outside jobs)"
        out.append(head)
        seen: Set[int] = set()
        for j in js:
            for sid in sorted(j.stage_ids):
                s = stages.get(sid)
                if s is None or sid in seen or not s.tasks:
                    continue
                seen.add(sid)
                wall = (s.end - s.start) / 1000
                run, cpu = s.run_ms / 1000, s.cpu_ns / 1e9
                out.append(
                    f"  stage {sid:4d} {wall:7.2f} s wall, {s.tasks:4d} tasks, {run:7.2f} s task "
                    f"({cpu:6.2f} JVM CPU, {s.gc_ms / 1000:5.2f} GC, {max(0.0, run - cpu):6.2f} other), "
                    f"in {s.input_bytes / MB:7.1f} MB, shuffle {s.shuffle_read / MB:6.1f} -> "
                    f"{s.shuffle_write / MB:6.1f} MB, spill {s.spill_disk / MB:5.1f} MB: "
                    f"{s.call_site + '; ' if s.call_site else ''}{', '.join(s.operators[:6])}")
    return "\n".join(out)


def event_logs(directory: Path) -> List[Path]:
    """The finished event logs in ``directory``, oldest first (a file, or a rolling log's
    directory)."""
    def done(p: Path) -> bool:
        if p.is_dir():
            return p.name.startswith("eventlog_v2_") and not any(q.name.endswith(".inprogress") for q in p.iterdir())
        return not p.name.endswith(".inprogress")
    return sorted((p for p in directory.iterdir() if done(p)), key=lambda p: p.stat().st_mtime)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="an event log (file or eventlog_v2_* directory), or the "
                                               "spark.eventLog.dir holding it (its newest log)")
    parser.add_argument("--label", default="", help="only job descriptions starting with this "
                                                    f"(\"{UNLABELLED}\": the jobs without one)")
    args = parser.parse_args(argv)
    path = args.log
    if not path.exists():
        parser.error(f"{path}: no such event log")
    if path.is_dir() and not path.name.startswith("eventlog_v2_"):
        logs = event_logs(path)
        if not logs:
            parser.error(f"{path}: no finished Spark event log in this directory")
        path = logs[-1]
    print(summarize(path, args.label))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
