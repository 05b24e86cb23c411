"""How cost grows with size: every job at each of ``--sizes``, in one Spark session, one table
per size (seconds, messages/s, messages/s per core, microseconds per message) and one table of
microseconds per message across sizes (flat = the work scales; growing = something does not).

The topic is bench/bulk_filter.py's (``_common.bulk_topic_messages``: 8 queues, 200-byte
bodies, age/name/isGender/region/seq). At each size:

* the input's generation alone (put reads its input DataFrame twice, so put's time holds it
  twice); put and dispatch of a plain store; put and dispatch with ``age,name,isGender`` promoted and
  two registered subscriptions' exact bits (SQL92 ``SELECTOR`` and TAG ``Tag1 || Tag3``);
  dispatch with 63 registered SQL92 subscriptions (sizes up to ``--many-max``);
* import of a generated real-format broker store (bench/import_store.py's generator, up to
  ``--import-max`` messages), in MB/s of commit log;
* on the promoted store: ``read_messages`` over the raw map, over the promoted columns,
  ``read_consume_queue`` through the bits; DuckDB over the map and over the typed columns,
  Polars over the typed columns (counts, checked equal);
* ``replay_group`` (8 consumers, ``Tag1 || Tag3``) against ``read_messages`` of the same
  subscription, both into Spark's noop sink; ``diagnose_group`` of that group;
* single pulls (TAG and SQL92) at the head and the tail of queue 3, p50/p95 against Spark's
  one-row query floor measured in the same session;
* the ``rocketmq`` source's batch read against ``read_messages`` (SQL92, noop sink);
* peak RSS of the Python driver (DuckDB and Polars run in a child process) and of the JVM, and
  the JVM heap's peak use, per size.

    python bench/scale.py [--sizes 1M,10M,50M] [--repeat 2] [--pulls 20] [--dir DIR]
                          [--driver-memory 2g] [--import-max 10M] [--many-max 1M] [--profile DIR]
                          [--jobs put,import,reads,groups,pulls,source]

Sizes take k/M suffixes; a size whose stores would not fit on the disk is skipped and said so.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)

import _common  # noqa: E402
from _common import CORES  # noqa: E402
from peer_reads import peer_reads  # noqa: E402

TOPIC, QUEUES, GROUP = "BenchTopic", 8, "GID_bench"
SELECTOR = "(age BETWEEN 6 AND 9) AND (name IS NOT NULL) AND (isGender = TRUE)"
TAGS = "Tag1 || Tag3"
PROMOTED = "age,name,isGender"
# Disk at one size's peak, with over twice the margin: the promoted store and, during the import, the
# broker store and its import (measured at 1M on 2026-11-28: 539 MB at the peak, 385 MB of it the
# broker's commit log). The plain and the 63-subscription stores are deleted before it.
STORE_BYTES_PER_MESSAGE, IMPORT_BYTES_PER_MESSAGE = 400, 1000


def disk_needed(n: int, import_max: int) -> int:
    """Bytes of disk the stores of size ``n`` may take at once."""
    return n * STORE_BYTES_PER_MESSAGE + min(n, import_max) * IMPORT_BYTES_PER_MESSAGE


def many_selectors(n: int = 63) -> List[str]:
    """``n`` distinct SQL92 subscriptions over the topic's properties: int, double, string and
    boolean comparisons, as a topic's 63 bit slots might hold."""
    shapes = (lambda i: f"age > {i % 21}", lambda i: f"age BETWEEN {i % 15} AND {i % 15 + 5} AND isGender = TRUE",
              lambda i: f"region = 'eu' AND seq > {i * 1000}", lambda i: f"age >= {i % 21}.5 OR name IS NULL",
              lambda i: f"(age < {i} AND region <> 'us') OR isGender = FALSE")
    return [shapes[i % len(shapes)](i) + f" AND seq <> '{i}'" for i in range(n)]


def parse_size(text: str) -> int:
    text = text.strip().lower()
    factor = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(text[-1:], 1)
    try:
        return int(float(text[:-1] if factor > 1 else text) * factor)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 3k, 1M)") from None


def parse_jobs(text: str) -> Tuple[str, ...]:
    jobs = tuple(j.strip() for j in text.split(",") if j.strip())
    unknown = [j for j in jobs if j not in JOBS]
    if unknown or not jobs:
        raise argparse.ArgumentTypeError(f"unknown job(s) {unknown or text!r}: choose from {', '.join(JOBS)}")
    return jobs


class Table:
    """Rows of (job, seconds, messages, note) for one size."""

    def __init__(self, n: int):
        self.n, self.rows = n, []

    def add(self, job: str, seconds: float, messages: Optional[int] = None, note: str = "") -> float:
        self.rows.append((job, seconds, self.n if messages is None else messages, note))
        print(f"  {job}: {seconds:.3f} s {note}", flush=True)
        return seconds

    def print(self) -> None:
        print(f"\n{self.n:,} messages; local[{CORES}]; load average {_common.load_average()}")
        print(f"{'job':46s} {'seconds':>9s} {'messages':>11s} {'msg/s':>12s} {'msg/s/core':>11s} "
              f"{'us/msg':>8s}  note")
        for job, s, m, note in self.rows:
            rate = m / s if s > 0 else float("inf")
            print(f"{job:46s} {s:9.3f} {m:11,d} {rate:12,.0f} {rate / CORES:11,.0f} "
                  f"{1e6 * s / max(m, 1):8.3f}  {note}")


class Profile:
    """With ``--profile``: each named run's Spark jobs carry the description "<size> <job>"
    in Spark's event log, and its wall time is kept, for bench/spark_profile.py."""

    def __init__(self):
        self.spark, self.size, self.walls = None, 0, {}

    def label(self, name: Optional[str]) -> Optional[str]:
        return f"{self.size:,} {name}" if self.spark is not None and name else None


PROFILE = Profile()


def timed(fn: Callable[[], object], name: Optional[str] = None) -> Tuple[float, object]:
    label = PROFILE.label(name)
    if label:
        PROFILE.spark.sparkContext.setJobDescription(label)
    t0 = time.perf_counter()
    try:
        out = fn()
    finally:
        if label:
            PROFILE.spark.sparkContext.setJobDescription(None)
    seconds = time.perf_counter() - t0
    if label:
        PROFILE.walls[label] = seconds
    return seconds, out


def best(fn: Callable[[], object], repeat: int, name: Optional[str] = None) -> Tuple[float, object]:
    """Best time of ``repeat`` runs after a warm-up, and the answer (checked stable); the last
    run is the one profiled."""
    answer = fn()
    times = []
    for k in range(repeat):
        t, again = timed(fn, name if k == repeat - 1 else None)
        assert again == answer, (again, answer)
        times.append(t)
    return min(times), answer


class Memory:
    """Peak RSS of the Python driver and of the JVM, and the JVM heap's peak use, all sampled
    every 0.2 s and reset per size. The heap is read as a whole (MemoryMXBean): its pools peak at
    different moments (eden before a collection, the old generation after), so adding their
    peaks overstates it. DuckDB and Polars run in a child process (:func:`peer_reads`), so the
    driver's figure is rocketfilter's and PySpark's alone."""

    def __init__(self, spark):
        from ingest import JvmPeak

        self.jvm = spark.sparkContext._jvm
        self.rss = JvmPeak(int(self.jvm.ProcessHandle.current().pid()))
        self.driver = JvmPeak(os.getpid())   # samples any process's VmRSS
        self.rss.start()
        self.driver.start()
        self.heap_peak = 0
        threading.Thread(target=self._sample_heap, daemon=True).start()

    def _heap_used(self) -> int:
        return int(self.jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
                   .getHeapMemoryUsage().getUsed())

    def _sample_heap(self) -> None:
        while True:
            try:
                self.heap_peak = max(self.heap_peak, self._heap_used())
            except Exception:  # noqa: BLE001 - the session stopped: nothing left to sample
                return
            time.sleep(0.2)

    def reset(self) -> None:
        self.rss.peak = self.driver.peak = 0
        self.heap_peak = self._heap_used()

    def stop(self) -> None:
        self.rss.running = self.driver.running = False

    def report(self) -> str:
        limit = self.jvm.java.lang.Runtime.getRuntime().maxMemory()
        return (f"peak RSS: Python driver {self.driver.peak / 2**20:,.0f} MiB, JVM "
                f"{self.rss.peak / 2**20:,.0f} MiB; JVM heap peak use {self.heap_peak / 2**20:,.0f} MiB "
                f"of {limit / 2**20:,.0f} MiB (each sampled every 0.2 s)")


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def rows(store) -> int:
    return sum(hi - lo for lo, hi in store.consumequeue_state().queues.get(TOPIC, {}).values())


# --- the jobs ----------------------------------------------------------------------------------

def put_and_dispatch(spark, root: str, n: int, t: Table, label: str, settings: dict,
                     subscriptions: List[Tuple[str, str, str]]):
    from rocketfilter.config import MessageStoreConfig
    from rocketfilter.store import MessageStore

    shutil.rmtree(root, ignore_errors=True)
    store = MessageStore.open(root, spark, MessageStoreConfig(dispatch_on_put=False, **settings))
    store.create_topic(TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    for group, expression, kind in subscriptions:
        store.register_subscription_bits(group, TOPIC, expression, kind, 1)
    if label == "plain":
        # put reads its input twice (count, then write): the generator's own cost, for the profile.
        t.add("input generation alone (noop sink)", timed(lambda: noop(_common.bulk_topic_messages(spark, n, TOPIC)),
                                                          "input generation alone")[0])
    if label != "63 SQL92 subscriptions":
        t.add(f"put, {label}", timed(lambda: store.put_messages(_common.bulk_topic_messages(spark, n, TOPIC)),
                                     f"put, {label}")[0])
    else:
        store.put_messages(_common.bulk_topic_messages(spark, n, TOPIC))
    seconds, report = timed(store.dispatch, f"dispatch, {label}")
    assert report.entries == n, (report.entries, n)
    t.add(f"dispatch, {label}", seconds)
    return store


def import_job(spark, base: Path, n: int, t: Table) -> None:
    from import_store import _record, generate

    from rocketfilter.store import MessageStore

    source, target = base / "broker", base / "imported"
    shutil.rmtree(source, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    size = len(_record(0, 0, 0))
    file_bytes = min(256 << 20, max(1 << 20, n * size // 4))
    generate(source, n * size, file_bytes)
    mb = sum(p.stat().st_size for p in (source / "commitlog").iterdir()) / 1e6
    store = MessageStore.open(str(target), spark)
    seconds, report = timed(lambda: store.import_store(str(source)), "import of a broker store")
    t.add("import of a broker store", seconds, report.messages, f"{mb / seconds:.1f} MB/s of {mb:,.0f} MB")
    shutil.rmtree(source, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)


def read_jobs(spark, store, n: int, t: Table, repeat: int) -> Dict[str, float]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import rocketfilter

    paths = [f.path[len("file://"):] if f.path.startswith("file://") else f.path for f in store.commitlog.files()]
    read = lambda **kw: rocketfilter.read_messages(store, TOPIC, SELECTOR, "SQL92", **kw)  # noqa: E731
    ways = {
        "read_messages, raw map": lambda: read(promoted=False, bits=False).count(),
        "read_messages, promoted": lambda: read(bits=False).count(),
        "read_consume_queue, bits": lambda: rocketfilter.read_consume_queue(store, TOPIC, SELECTOR, "SQL92").count(),
    }
    out, counts = {}, {}

    def add(name: str, seconds: float, count: int) -> None:
        out[name], counts[name] = seconds, count
        t.add(name, seconds, note=f"{count:,} delivered")

    for name, fn in ways.items():
        add(name, *best(fn, repeat, name))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
        for name, (seconds, count) in child.submit(peer_reads, paths, TOPIC, repeat).result().items():
            add(name, seconds, count)
    if len(set(counts.values())) != 1:
        raise SystemExit(f"counts differ: {counts}")
    return out


def group_jobs(spark, store, t: Table, repeat: int) -> Dict[str, float]:
    import rocketfilter
    from rocketfilter.consumer import ConsumerGroup

    group = ConsumerGroup(GROUP)
    for i in range(8):
        group.add_consumer(f"c{i}", {TOPIC: TAGS})
    replay = lambda: noop(rocketfilter.replay_group(store, group, TOPIC))  # noqa: E731
    plain = lambda: noop(rocketfilter.read_messages(store, TOPIC, TAGS, "TAG"))  # noqa: E731
    consumed = rocketfilter.replay_group(store, group, TOPIC).count()
    read = rocketfilter.read_messages(store, TOPIC, TAGS, "TAG").count()
    assert consumed == read, (consumed, read)
    out = {"replay_group, 8 consumers": best(replay, repeat, "replay_group, 8 consumers")[0],
           "read_messages, same subscription": best(plain, repeat, "read_messages, same subscription")[0]}
    for name, seconds in out.items():
        t.add(f"{name} (noop sink)", seconds, note=f"{consumed:,} rows")
    out["diagnose_group"] = t.add("diagnose_group", best(lambda: str(rocketfilter.diagnose_group(store, group, TOPIC)),
                                                         repeat, "diagnose_group")[0])
    return out


def pull_jobs(spark, store, t: Table, pulls: int) -> List[str]:
    from pull_latency import _query_floor

    from rocketfilter.pull.filter import ExpressionMessageFilter
    from rocketfilter.tags import build_subscription

    floor = _query_floor(spark)
    data = store.filter_manager.build(TOPIC, "bench", SELECTOR, "SQL92", 1)
    filters = {"TAG": ExpressionMessageFilter(build_subscription(TOPIC, TAGS)),
               "SQL92": ExpressionMessageFilter(build_subscription(TOPIC, SELECTOR, "SQL92"), data)}
    queue, lines = 3, [f"Spark one-row query floor (spark.range(1).toArrow(), p50 of 20): {floor * 1000:.1f} ms"]
    lo, hi = store.get_min_offset_in_queue(TOPIC, queue), store.get_max_offset_in_queue(TOPIC, queue)
    for engine in ("arrow", "spark"):   # the default (pyarrow on the driver), then Spark's reads
        store.pull_engine = engine
        for where, offset in (("head", lo), ("tail", max(lo, hi - 32))):
            for kind, message_filter in filters.items():
                pull = lambda: store.get_message("bench", TOPIC, queue, offset, 32, message_filter)  # noqa: E731
                for _ in range(3):
                    pull()
                times = sorted(timed(pull)[0] for _ in range(pulls))
                p50, p95 = statistics.median(times), times[max(0, math.ceil(0.95 * len(times)) - 1)]
                lines.append(f"single pull ({engine}), {where} of queue {queue}, {kind:5s}: p50 "
                             f"{p50 * 1000:7.1f} ms, p95 {p95 * 1000:7.1f} ms; p50/floor {p50 / floor:.2f} "
                             "(target <= 1.5)")
                print("  " + lines[-1], flush=True)
    store.pull_engine = "auto"
    return lines


def source_jobs(spark, store, t: Table, repeat: int) -> Dict[str, float]:
    import rocketfilter

    frames = {"rocketmq source, batch read": rocketfilter.read(spark, store.uri, TOPIC, SELECTOR, "SQL92"),
              "read_messages, same read": rocketfilter.read_messages(store, TOPIC, SELECTOR, "SQL92")}
    counts = {name: df.count() for name, df in frames.items()}
    if len(set(counts.values())) != 1:
        raise SystemExit(f"the source and read_messages differ: {counts}")
    out = {}
    for name, df in frames.items():
        out[name] = t.add(f"{name} (noop sink)", best(lambda: noop(df), repeat, name)[0],
                          note=f"{counts[name]:,} rows")
    return out


# --- one size, and the run ---------------------------------------------------------------------

JOBS = ("put", "import", "reads", "groups", "pulls", "source")


def run_size(spark, base: Path, n: int, args, memory: Memory) -> Tuple[Table, List[str]]:
    memory.reset()
    PROFILE.size = n
    t, notes = Table(n), []
    jobs = args.jobs
    print(f"\n== {n:,} messages (load average {_common.load_average()})", flush=True)
    if "put" in jobs:
        plain = put_and_dispatch(spark, str(base / "plain"), n, t, "plain", {}, [])
        del plain
        shutil.rmtree(base / "plain", ignore_errors=True)
    if "put" in jobs and n <= args.many_max:
        many = [(f"GID_many{i}", s, "SQL92") for i, s in enumerate(many_selectors())]
        put_and_dispatch(spark, str(base / "many"), n, t, "63 SQL92 subscriptions", {}, many)
        shutil.rmtree(base / "many", ignore_errors=True)
    store = None
    if {"put", "reads", "groups", "pulls", "source"} & set(jobs):   # the store the reads share
        store = put_and_dispatch(spark, str(base / "promoted"), n, t, "3 promoted + 2 subscriptions' bits",
                                 {"promoted_properties": PROMOTED},
                                 [(GROUP, SELECTOR, "SQL92"), ("GID_tags", TAGS, "TAG")])
    if "import" in jobs:
        import_job(spark, base / "import", min(n, args.import_max), t)
    ratio = lambda a, b: a / b if b else float("inf")  # noqa: E731
    if "reads" in jobs:
        reads = read_jobs(spark, store, n, t, args.repeat)
        if "DuckDB, typed columns" in reads:
            notes.append(f"promoted read_messages / DuckDB on the typed columns: "
                         f"{ratio(reads['read_messages, promoted'], reads['DuckDB, typed columns']):.2f}x "
                         "(target <= 1.5)")
        notes.append(f"raw-map read / read_consume_queue with bits: "
                     f"{ratio(reads['read_messages, raw map'], reads['read_consume_queue, bits']):.2f}x (target >= 10)")
    if "groups" in jobs:
        groups = group_jobs(spark, store, t, args.repeat)
        notes.append(f"replay_group / read_messages writing the same rows: "
                     f"{ratio(groups['replay_group, 8 consumers'], groups['read_messages, same subscription']):.2f}x "
                     f"(target <= 1.5)")
    if "pulls" in jobs:
        notes += pull_jobs(spark, store, t, args.pulls)
    if "source" in jobs:
        source = source_jobs(spark, store, t, args.repeat)
        notes.append(f"source / read_messages: "
                     f"{ratio(source['rocketmq source, batch read'], source['read_messages, same read']):.2f}x time")
    notes.append(memory.report())
    shutil.rmtree(base / "promoted", ignore_errors=True)
    return t, notes


def main(argv=None, spark=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100k", help="comma-separated message counts, e.g. 1M,10M,50M")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs of each read after a warm-up")
    parser.add_argument("--pulls", type=int, default=20, help="timed single pulls per position and filter")
    parser.add_argument("--dir", help="where the stores go (emptied); default: a temporary directory")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--import-max", type=parse_size, default=parse_size("10M"))
    parser.add_argument("--many-max", type=parse_size, default=parse_size("1M"),
                        help="largest size at which the 63-subscription dispatch runs")
    parser.add_argument("--profile", metavar="DIR",
                        help="write Spark's event log to DIR and print where each job's time goes "
                             "(bench/spark_profile.py) once the session has stopped")
    parser.add_argument("--jobs", type=parse_jobs, default=JOBS,
                        help=f"comma-separated, of {','.join(JOBS)} (default: all); every job but "
                             "import runs on the promoted store, built once a size")
    args = parser.parse_args(argv)
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]

    own = spark is None
    if own:
        from pyspark.sql import SparkSession

        from rocketfilter.session import get_spark

        spark = get_spark(SparkSession.builder.appName("rocketfilter-bench-scale").master(f"local[{CORES}]")
                          .config("spark.driver.memory", args.driver_memory)
                          .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                          .config(map=profile_conf(args.profile)))
        spark.sparkContext.setLogLevel("ERROR")
    if args.profile and own:
        PROFILE.spark = spark
    elif args.profile:
        print("--profile needs the script's own session (its event log is read once it stops): ignored")
    base = Path(args.dir or tempfile.mkdtemp(prefix="rf-bench-scale-"))
    base.mkdir(parents=True, exist_ok=True)   # --dir may name a directory still to be made
    memory = Memory(spark)
    print(f"spark {spark.version}, local[{CORES}], driver memory {spark.conf.get('spark.driver.memory', '?')}; "
          f"selector {SELECTOR!r}; load average {_common.load_average()}")
    results = []
    try:
        for n in sizes:
            free, needed = shutil.disk_usage(base).free, disk_needed(n, args.import_max)
            if needed > free:
                print(f"\n== {n:,} messages: skipped, needs about {needed / 1e9:.0f} GB "
                      f"of disk, {free / 1e9:.0f} GB free")
                continue
            results.append(run_size(spark, base, n, args, memory))
            results[-1][0].print()
            print("\n".join(results[-1][1]))
        if len(results) > 1:
            print(f"\nmicroseconds per message by size (flat: the job scales)")
            print(f"{'job':46s}" + "".join(f"{t.n:>12,d}" for t, _ in results))
            for i, (job, *_rest) in enumerate(results[0][0].rows):
                cells = []
                for t, _ in results:
                    match = [r for r in t.rows if r[0] == job]
                    cells.append(f"{1e6 * match[0][1] / max(match[0][2], 1):12.3f}" if match else f"{'-':>12s}")
                print(f"{job:46s}" + "".join(cells))
    finally:
        memory.stop()
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
        if own:
            spark.stop()
    if PROFILE.spark is not None:
        from spark_profile import event_logs, summarize

        logs = event_logs(Path(args.profile))
        print("\nwhere the time goes (Spark's event log, the last timed run of each job)")
        print(summarize(logs[-1], walls=PROFILE.walls) if logs else f"no event log in {args.profile}")
    return 0


def profile_conf(directory: Optional[str]) -> Dict[str, str]:
    """Spark settings that write an uncompressed event log to ``directory`` (made here)."""
    if not directory:
        return {}
    Path(directory).mkdir(parents=True, exist_ok=True)
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": Path(directory).resolve().as_uri(),
            "spark.eventLog.compress": "false"}


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
