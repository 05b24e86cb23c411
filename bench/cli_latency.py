"""Wall time of the small commands, each a fresh ``python -m rocketfilter.cli`` process as a
user runs it, and how much of it is Spark's start.

    PYTHONPATH=$PWD python bench/cli_latency.py [--repeat 3] [--engine auto] [--store DIR]

The store is the sample broker store (tests/data) imported once (kept with ``--store``). Timed:

* ``python``: ``python -c "import rocketfilter.cli"``, the interpreter and the imports;
* ``spark start``: the same plus ``get_spark()`` and one trivial query, the JVM's share;
* ``why --msg-id``, ``why --topic/--queue/--offset``, ``pull --pulls 1`` (one queue),
  ``pull --pulls 1`` (every queue), ``offsets show`` and ``lint --store``.

Each line gives the wall time and the CPU seconds of the processes waited for (the command and
a JVM it started): on a loaded machine the wall time grows with the load, the CPU seconds
hardly. ``--engine`` is passed to ``why`` and ``pull`` (``auto``: Arrow for small work without
``--master``/``--remote``; ``spark``: the Spark path, the "before" figure). Each figure is the
median of ``--repeat`` runs; the load average is printed beside them, since the machine may be
shared.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHIVE = REPO / "tests" / "data" / "rocketmq_store_sample.tar.xz"
GROUP = "GID_bench_latency"
TOPIC = "TopicTest"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def env() -> dict:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(REPO), out.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return out


def run(argv: list, check: bool = True) -> tuple:
    """(seconds, stdout, cpu seconds) of one process. The CPU seconds (user + system of the
    processes waited for) hardly depend on the load: on an idle machine a single-threaded
    command's wall time is close to them."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env(), cwd=REPO)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if check and done.returncode not in (0, 1):   # 1: lint found something, a verdict
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return took, done.stdout, cpu


def cli(*args: str) -> list:
    return [sys.executable, "-m", "rocketfilter.cli", *args]


def prepare(root: Path) -> tuple:
    """The imported store, a group file, and a msg id of the sample's topic."""
    store = root / "store"
    source = root / "broker"
    if not (store / "commitlog").is_dir():
        with tarfile.open(ARCHIVE) as tar:
            tar.extractall(source, filter="data")
        print("importing the sample store (once) ...", flush=True)
        run(cli("import", "--store", str(store), "--source", str(source)))
    group = root / "group.json"
    group.write_text(json.dumps({"group": GROUP, "consumers": [
        {"clientId": "A", "subscriptions": {TOPIC: "TagA || TagB"}, "subVersion": 1}]}), encoding="utf-8")
    from rocketfilter.store.tables import StoreTables
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.groups.message_locate import point_read

    tables = StoreTables(str(store), None, MessageStoreConfig(), create=False)
    rows = point_read(tables.commitlog, [("topic", "=", TOPIC), ("queue_id", "=", 1), ("queue_offset", "=", 5)],
                      ["msg_id"])
    return store, group, rows[0]["msg_id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engine", choices=("none", "auto", "arrow", "spark"), default="auto",
                        help="--engine for why and pull (none: pass no option, as before it existed)")
    parser.add_argument("--store", help="a directory to keep the imported store in (default: temporary)")
    args = parser.parse_args()
    root = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="rf-cli-latency-"))
    root.mkdir(parents=True, exist_ok=True)
    store, group, msg_id = prepare(root)
    s, e = str(store), ([] if args.engine == "none" else ["--engine", args.engine])
    spark_start = ("from rocketfilter.session import get_spark; s = get_spark(); s.range(1).collect()")
    commands = {
        "python (imports)": [sys.executable, "-c", "import rocketfilter.cli"],
        "spark start": [sys.executable, "-c", "import rocketfilter.cli; " + spark_start],
        "why --msg-id": cli("why", "--store", s, "--group-file", str(group), "--msg-id", msg_id, *e),
        "why --topic/--queue/--offset": cli("why", "--store", s, "--group-file", str(group), "--topic", TOPIC,
                                            "--queue", "1", "--offset", "5", *e),
        "pull --pulls 1 (1 queue)": cli("pull", "--store", s, "--topic", TOPIC, "--group", GROUP, "--queue", "1",
                                        "--offset", "0", "--pulls", "1", "--tags", "TagA", *e),
        "pull --pulls 1 (all queues)": cli("pull", "--store", s, "--topic", TOPIC, "--group", GROUP,
                                           "--offset", "0", "--pulls", "1", "--sql", "a IS NULL", *e),
        "offsets show": cli("offsets", "show", "--store", s, "--group", GROUP, "--topic", TOPIC),
        "lint --store": cli("lint", "--store", s, "--topic", TOPIC, "a > 1"),
    }
    print(f"engine {args.engine}, median of {args.repeat}; load average before: {load_average()}")
    figures = {}
    for name, argv in commands.items():
        runs = [run(argv) for _ in range(args.repeat)]
        times = [r[0] for r in runs]
        figures[name] = statistics.median(times)
        cpu = statistics.median(r[2] for r in runs)
        print(f"{name:32s} {figures[name]:6.2f} s  cpu {cpu:5.2f} s  (runs {', '.join(f'{t:.2f}' for t in times)}; "
              f"load {load_average()})", flush=True)
    jvm = figures["spark start"] - figures["python (imports)"]
    print(f"Spark's start (JVM, session, first query): {jvm:.2f} s of a command's wall time")
    for name in ("why --msg-id", "pull --pulls 1 (1 queue)"):
        print(f"{name}: {figures[name]:.2f} s = {figures[name] / figures['spark start']:.2f} x a bare Spark start")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
